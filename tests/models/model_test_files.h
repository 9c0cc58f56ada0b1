// Files and processes for the model tests that drive exporters in Python and the voxrt CLI: a
// work folder per process, a shell command's output, and 16 kHz mono 16-bit WAV test audio.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>
#include <vector>

namespace voxrt::model_test {

// temp/NAME_PID, removed when the program ends: two checkouts' test runs on one machine must not
// share a folder (an engine file rewritten under another run's memory map is a SIGBUS there).
// The first call's `name` holds for the program.
inline const std::filesystem::path& process_work_dir(const std::string& name) {
  struct RemovedAtExit {
    std::filesystem::path path;
    ~RemovedAtExit() {
      std::error_code ignored;
      std::filesystem::remove_all(path, ignored);
    }
  };
  static const RemovedAtExit dir{std::filesystem::temp_directory_path() /
                                 (name + "_" + std::to_string(::getpid()))};
  return dir.path;
}

// stdout of `command` (run by the shell); empty when it cannot start.
inline std::string run_capture(const std::string& command) {
  std::string out;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) return out;
  char buffer[4096];
  while (std::fgets(buffer, sizeof buffer, pipe)) out += buffer;
  ::pclose(pipe);
  return out;
}

// 16-bit mono 16 kHz WAV of `samples` in [-1, 1] (clipped).
inline void write_wav(const std::filesystem::path& path, const std::vector<float>& samples) {
  std::ofstream out(path, std::ios::binary);
  auto u32 = [&](std::uint32_t v) { out.write(reinterpret_cast<const char*>(&v), 4); };
  auto u16 = [&](std::uint16_t v) { out.write(reinterpret_cast<const char*>(&v), 2); };
  const auto bytes = static_cast<std::uint32_t>(samples.size() * 2);
  out << "RIFF";
  u32(36 + bytes);
  out << "WAVEfmt ";
  u32(16);
  u16(1);
  u16(1);
  u32(16000);
  u32(32000);
  u16(2);
  u16(16);
  out << "data";
  u32(bytes);
  for (float s : samples) {
    const auto v = static_cast<std::int16_t>(std::max(-1.0f, std::min(0.99997f, s)) * 32768.0f);
    out.write(reinterpret_cast<const char*>(&v), 2);
  }
}

}  // namespace voxrt::model_test
