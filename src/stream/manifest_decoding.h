// Decoding a manifest of recordings with their reference texts through a Recognizer, as the
// accuracy gates do (voxrt deploy; docs/model_repository.md): many files at once as concurrent
// streams (batched like a server's), each file fed in 20 ms pieces, and the word error rate.
#pragma once

#include <string>
#include <vector>

#include "stream/recognizer.h"
#include "voxrt/status.h"

namespace voxrt::stream {

struct ManifestEntry {
  std::string audio_path;
  std::string reference;
};

// A tab-separated manifest: `path<TAB>text` per line, or recipes/data/synth.py's
// `id<TAB>path<TAB>text[<TAB>voice]`. Relative paths are relative to the manifest's folder;
// empty lines and lines starting with '#' are skipped. Errors name the file and line.
Expected<std::vector<ManifestEntry>> read_manifest(const std::string& path);

struct ManifestScore {
  long long reference_words = 0;
  long long word_errors = 0;
  int files = 0;
  double audio_seconds = 0;
  double wall_seconds = 0;
  std::vector<std::string> hypotheses;  // one per entry, in manifest order
  double wer() const {
    return reference_words > 0 ? static_cast<double>(word_errors) / reference_words : 0.0;
  }
};

// Decodes every entry with `recognizer` (at most `parallel_streams` streams open at once) and
// scores the finals against the references.
Expected<ManifestScore> decode_manifest(Recognizer& recognizer,
                                        const std::vector<ManifestEntry>& entries,
                                        int parallel_streams = 8);

}  // namespace voxrt::stream
