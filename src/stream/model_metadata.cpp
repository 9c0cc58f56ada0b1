#include "stream/model_metadata.h"

#include <algorithm>

#include "audio/frame_features.h"

namespace voxrt::stream {

Expected<int> metadata_int(const std::map<std::string, std::string>& metadata,
                           const std::string& key, int fallback, bool required,
                           const std::string& where) {
  auto it = metadata.find(key);
  if (it == metadata.end()) {
    if (required)
      return invalid_argument(where, ": metadata '", key,
                              "' is missing (see docs/model_contract.md)");
    return fallback;
  }
  try {
    std::size_t used = 0;
    const int value = std::stoi(it->second, &used);
    if (used != it->second.size() || value < 1) throw std::invalid_argument("bad");
    return value;
  } catch (...) {
    return invalid_argument(where, ": metadata '", key, "' must be a positive integer, found '",
                            it->second, "'");
  }
}

Expected<double> metadata_ms(const std::map<std::string, std::string>& metadata,
                             const std::string& key, double fallback, const std::string& where) {
  auto it = metadata.find(key);
  if (it == metadata.end()) return fallback;
  try {
    std::size_t used = 0;
    const double value = std::stod(it->second, &used);
    if (used != it->second.size() || !(value >= 0) || value > 10000)
      throw std::invalid_argument("bad");
    return value;
  } catch (...) {
    return invalid_argument(where, ": metadata '", key,
                            "' must be a duration in milliseconds from 0 to 10000, found '",
                            it->second, "'");
  }
}

Expected<decode::TimeBase> time_base_from_metadata(
    const std::map<std::string, std::string>& metadata, int subsampling, double frame_shift_ms,
    const std::string& where) {
  VOXRT_ASSIGN_OR_RETURN(const double start_delay_ms,
                         metadata_ms(metadata, "voxrt.word_start_delay_ms", 0.0, where));
  VOXRT_ASSIGN_OR_RETURN(const double end_delay_ms,
                         metadata_ms(metadata, "voxrt.word_end_delay_ms", 0.0, where));
  return decode::TimeBase{subsampling, frame_shift_ms, start_delay_ms / 1000.0,
                          end_delay_ms / 1000.0};
}

Expected<std::string> metadata_string(const std::map<std::string, std::string>& metadata,
                                      const std::string& key, const std::string& where) {
  auto it = metadata.find(key);
  if (it == metadata.end())
    return invalid_argument(where, ": metadata '", key,
                            "' is missing (see docs/model_contract.md)");
  return it->second;
}

Expected<std::vector<float>> chunk_pad_frame(const std::map<std::string, std::string>& metadata,
                                             const audio::FeatureConfig& features,
                                             const std::string& where) {
  auto it = metadata.find("voxrt.chunk_pad");
  const std::string kind = it == metadata.end() ? "zero" : it->second;
  std::vector<float> frame(static_cast<std::size_t>(features.output_dim()), 0.0f);
  if (kind == "zero") return frame;
  if (kind != "silence") {
    return invalid_argument(where, ": metadata 'voxrt.chunk_pad' must be zero or silence, found '",
                            kind, "'");
  }
  VOXRT_ASSIGN_OR_RETURN(auto computer, audio::FrameFeatureComputer::create(features));
  audio::FrameScratch scratch = computer.make_scratch();
  std::fill(scratch.samples.begin(), scratch.samples.end(), 0.0);
  computer.compute(scratch, frame.data());
  for (std::size_t i = 0; i < frame.size(); ++i) {
    if (i < features.mean.size()) frame[i] -= features.mean[i];
    if (i < features.inv_std.size()) frame[i] *= features.inv_std[i];
  }
  return frame;
}

std::string metadata_or(const std::map<std::string, std::string>& metadata, const std::string& key,
                        const std::string& fallback) {
  auto it = metadata.find(key);
  return it == metadata.end() ? fallback : it->second;
}

}  // namespace voxrt::stream
