// The word error rate of an engine held in memory on a manifest of recordings, as the precision
// tools measure it (the accuracy gate of `voxrt build`, `voxrt debug precision`): the engine is
// written to a scratch folder and decoded through the model's own Recognizer, greedy and without
// a VAD, so that two engines of one model see exactly the same audio and only their numbers can
// change the words.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "stream/manifest_decoding.h"

namespace voxrt::cli {

// A temporary folder for engine files, removed however the caller ends.
class ScratchDir {
 public:
  explicit ScratchDir(const std::string& purpose);
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// Writes `engine` to `path` and decodes `entries` with it (`threads` engine threads).
Expected<stream::ManifestScore> engine_word_errors(
    const std::string& engine, const std::filesystem::path& path,
    const std::vector<stream::ManifestEntry>& entries, int threads);

}  // namespace voxrt::cli
