#include "engine_accuracy.h"

#include <unistd.h>

#include <fstream>

#include "stream/recognizer.h"

namespace voxrt::cli {

namespace fs = std::filesystem;

ScratchDir::ScratchDir(const std::string& purpose)
    : path_(fs::temp_directory_path() / ("voxrt-" + purpose + "-" + std::to_string(getpid()))) {
  fs::create_directories(path_);
}

ScratchDir::~ScratchDir() {
  std::error_code ignored;
  fs::remove_all(path_, ignored);
}

Expected<stream::ManifestScore> engine_word_errors(
    const std::string& engine, const fs::path& path,
    const std::vector<stream::ManifestEntry>& entries, int threads) {
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(engine.data(), static_cast<std::streamsize>(engine.size()));
    if (!out) return invalid_argument("cannot write the engine to ", path.string());
  }
  stream::RecognizerConfig config;
  config.engine_path = path.string();
  config.threads = threads;
  // Up to 32 files at a time as concurrent streams (the family's largest batch): each batched
  // call repacks the FP32 weights of an untuned engine's OpenBLAS layers once for all of its
  // streams, so the precision tools' many decodes cost less than with 8 (docs/perf/int8_cpu.md).
  config.max_streams = 32;
  config.decoder = stream::DecoderKind::kGreedy;
  config.vad = stream::VadKind::kOff;
  VOXRT_ASSIGN_OR_RETURN(auto recognizer, stream::Recognizer::create(config));
  return stream::decode_manifest(*recognizer, entries, 32);
}

}  // namespace voxrt::cli
