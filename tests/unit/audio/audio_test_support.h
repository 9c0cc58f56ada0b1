// Helpers shared by the unit_audio tests: where to write generated files, how to run tools,
// and a tiny WAV writer for files with known (or deliberately broken) headers.
#pragma once

#include <sys/wait.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace voxrt::audio::testing {

inline std::filesystem::path scratch_dir() {
  const char* binary_dir = std::getenv("VOXRT_BINARY_DIR");
  std::filesystem::path dir = binary_dir != nullptr ? std::filesystem::path(binary_dir)
                                                    : std::filesystem::temp_directory_path();
  dir /= "test_scratch/unit_audio";
  std::filesystem::create_directories(dir);
  return dir;
}

// A file of the source tree (ctest sets VOXRT_SOURCE_DIR; "." when a test binary runs alone from
// the repository root).
inline std::string source_file(const std::string& relative) {
  const char* source_dir = std::getenv("VOXRT_SOURCE_DIR");
  return std::string(source_dir != nullptr ? source_dir : ".") + "/" + relative;
}

// The whole of a file's bytes ("" when it cannot be read).
inline std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

inline const char* kPocketsphinxData = "/usr/share/pocketsphinx/test/data";

inline std::vector<std::string> pocketsphinx_wavs() {
  std::vector<std::string> paths;
  for (const char* sub : {"cards", "librivox"}) {
    const std::filesystem::path dir = std::filesystem::path(kPocketsphinxData) / sub;
    if (!std::filesystem::exists(dir)) continue;
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
      if (entry.path().extension() == ".wav") paths.push_back(entry.path().string());
    }
  }
  std::sort(paths.begin(), paths.end());
  return paths;
}

// Runs a shell command; returns its exit status (or -1 when it could not start).
inline int run_command(const std::string& command) {
  const int status = std::system(command.c_str());
  if (status == -1) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

inline void put_u32(std::vector<std::uint8_t>& out, std::uint32_t value) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<std::uint8_t>(value >> (8 * i)));
}
inline void put_u16(std::vector<std::uint8_t>& out, std::uint16_t value) {
  out.push_back(static_cast<std::uint8_t>(value));
  out.push_back(static_cast<std::uint8_t>(value >> 8));
}

// A 16-bit PCM WAV; `channels` is written as given (0 makes a broken header on purpose).
inline std::vector<std::uint8_t> make_wav_s16(const std::vector<std::int16_t>& interleaved,
                                              int sample_rate_hz, int channels) {
  std::vector<std::uint8_t> out;
  const std::uint32_t data_bytes = static_cast<std::uint32_t>(interleaved.size() * 2);
  out.insert(out.end(), {'R', 'I', 'F', 'F'});
  put_u32(out, 36 + data_bytes);
  out.insert(out.end(), {'W', 'A', 'V', 'E', 'f', 'm', 't', ' '});
  put_u32(out, 16);
  put_u16(out, 1);
  put_u16(out, static_cast<std::uint16_t>(channels));
  put_u32(out, static_cast<std::uint32_t>(sample_rate_hz));
  put_u32(out, static_cast<std::uint32_t>(sample_rate_hz * channels * 2));
  put_u16(out, static_cast<std::uint16_t>(channels * 2));
  put_u16(out, 16);
  out.insert(out.end(), {'d', 'a', 't', 'a'});
  put_u32(out, data_bytes);
  for (std::int16_t s : interleaved) put_u16(out, static_cast<std::uint16_t>(s));
  return out;
}

inline std::string write_file(const std::string& name, const std::vector<std::uint8_t>& bytes) {
  const std::string path = (scratch_dir() / name).string();
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  return path;
}

}  // namespace voxrt::audio::testing
