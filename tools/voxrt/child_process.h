// Runs another process (this program, usually) and waits for it with a time limit, its output
// going to a file: a model that crashes or hangs during `voxrt deploy`'s warm-up fails that step
// instead of taking the deploy down with it.
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace voxrt::cli {

struct ChildOutcome {
  bool started = false;
  bool timed_out = false;
  int exit_code = -1;       // when it exited
  int signal = 0;           // when a signal ended it
  std::string output_tail;  // the last bytes of what it printed
  bool ok() const { return started && !timed_out && signal == 0 && exit_code == 0; }
  std::string describe() const;
};

ChildOutcome run_child(const std::vector<std::string>& argv, std::chrono::seconds timeout,
                       const std::string& output_path);
// The path of the running executable (/proc/self/exe).
std::string this_executable();

}  // namespace voxrt::cli
