// Reading the model contract's keys (docs/model_contract.md) for the model families: integers
// with errors that name the key and where it was read.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "audio/feature_config.h"
#include "decode/decoding_result.h"
#include "voxrt/status.h"

namespace voxrt::stream {

// A positive integer under `key`; `fallback` when it is absent and not `required`. `where` (a
// file) prefixes errors.
Expected<int> metadata_int(const std::map<std::string, std::string>& metadata,
                           const std::string& key, int fallback, bool required,
                           const std::string& where);

// A duration in milliseconds, 0..10000, under `key`; `fallback` when absent.
Expected<double> metadata_ms(const std::map<std::string, std::string>& metadata,
                             const std::string& key, double fallback, const std::string& where);

// Output frames to times: `subsampling` feature frames of `frame_shift_ms` each, with the
// model's measured emission delays (voxrt.word_start_delay_ms, voxrt.word_end_delay_ms)
// moving word times back.
Expected<decode::TimeBase> time_base_from_metadata(
    const std::map<std::string, std::string>& metadata, int subsampling, double frame_shift_ms,
    const std::string& where);

// The value under `key`, or `fallback` when it is absent.
std::string metadata_or(const std::map<std::string, std::string>& metadata, const std::string& key,
                        const std::string& fallback);

// The value under `key`, or an error naming it and `where`.
Expected<std::string> metadata_string(const std::map<std::string, std::string>& metadata,
                                      const std::string& key, const std::string& where);

// The feature frame a stream's last chunks are padded with (voxrt.chunk_pad): "zero" (the
// default: the mean of normalised features) or "silence" (what the front end gives for digital
// silence, for models trained on unnormalised features).
Expected<std::vector<float>> chunk_pad_frame(const std::map<std::string, std::string>& metadata,
                                             const audio::FeatureConfig& features,
                                             const std::string& where);

}  // namespace voxrt::stream
