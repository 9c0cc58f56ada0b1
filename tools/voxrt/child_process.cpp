#include "child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

extern char** environ;

namespace voxrt::cli {

std::string ChildOutcome::describe() const {
  std::ostringstream out;
  if (!started) {
    out << "could not be started";
  } else if (timed_out) {
    out << "did not finish in time (killed)";
  } else if (signal != 0) {
    out << "was killed by signal " << signal << " (" << strsignal(signal) << ")";
  } else {
    out << "exited with " << exit_code;
  }
  if (!output_tail.empty()) out << "; its last output: " << output_tail;
  return out.str();
}

std::string this_executable() {
  char path[4096];
  const ssize_t n = ::readlink("/proc/self/exe", path, sizeof(path) - 1);
  return n > 0 ? std::string(path, static_cast<std::size_t>(n)) : std::string("voxrt");
}

ChildOutcome run_child(const std::vector<std::string>& argv, std::chrono::seconds timeout,
                       const std::string& output_path) {
  ChildOutcome outcome;
  std::vector<std::string> args = argv;
  std::vector<char*> pointers;
  for (auto& a : args) pointers.push_back(a.data());
  pointers.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, output_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  pid_t pid = -1;
  outcome.started =
      posix_spawn(&pid, pointers[0], &actions, nullptr, pointers.data(), environ) == 0;
  posix_spawn_file_actions_destroy(&actions);
  if (!outcome.started) return outcome;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  int status = 0;
  for (;;) {
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      outcome.timed_out = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (!outcome.timed_out) {
    if (WIFEXITED(status)) outcome.exit_code = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) outcome.signal = WTERMSIG(status);
  }
  std::ifstream in(output_path, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  outcome.output_tail = text.size() > 600 ? text.substr(text.size() - 600) : text;
  while (!outcome.output_tail.empty() && outcome.output_tail.back() == '\n')
    outcome.output_tail.pop_back();
  return outcome;
}

}  // namespace voxrt::cli
