// Runs a transducer joiner engine over any number of (encoder frame, decoder output) rows, in
// calls of at most the engine's largest profiled batch. Shared by the icefall/sherpa joiner
// (inputs [N, dim], logits [N, units]), NeMo's RNNTJoint (inputs [N, dim, 1], logits
// [N, 1, 1, units + durations]) and torchaudio's RNN-T joiner (inputs [N, 1, dim], logits
// [N, 1, 1, units]): all are row-major with one row per pair, so only the shapes the engine is
// given and the one it answers with differ.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "voxrt/engine.h"

namespace voxrt::stream {

struct JoinerLayout {
  std::int64_t encoder_dim = 0;
  std::int64_t decoder_dim = 0;
  std::int64_t logits_width = 0;  // units (+ durations for TDT) per row
  std::int64_t max_rows = 0;      // rows per engine call
  bool encoder_first = true;      // input order of the export
  // The inputs' time (and unit) axis of length 1: none ([N, dim]), after the width (NeMo:
  // [N, dim, 1]) or before it (torchaudio: [N, 1, dim]).
  enum class UnitAxis { kNone, kTrailing, kLeading } unit_axis = UnitAxis::kNone;
};

// Appends nothing on error; on success `logits` holds rows x logits_width values and `calls`
// grew by the number of engine calls made.
Status run_joiner_in_batches(ExecutionContext& joiner, const JoinerLayout& layout,
                             std::span<const float> encoder_frames,
                             std::span<const float> decoder_out, int rows,
                             std::vector<float>& logits, long long& calls);

}  // namespace voxrt::stream
