// Times one batched engine call of a streaming engine: `batch` streams, one chunk each (zeros,
// fresh states), through the runtime's state slot pool as a server round runs it. Used by
// `--max-streams auto` (the median) and by the deploy latency gate (the p99).
#pragma once

#include <string>
#include <vector>

#include "voxrt/status.h"

namespace voxrt::server {

struct ChunkTiming {
  int batch = 0;                // the batch timed (may be below the one asked for, see below)
  int chunk_frames = 0;         // feature frames per chunk (voxrt.chunk_frames)
  double chunk_audio_s = 0;     // new audio per chunk (voxrt.shift_frames x frame shift)
  std::vector<double> seconds;  // one entry per timed call, sorted ascending
  double median_s() const { return seconds.empty() ? 0 : seconds[seconds.size() / 2]; }
  // The nearest-rank percentile, p in (0, 100].
  double percentile_s(double p) const;
};

// `batch_limit`: the largest batch to time (0: what a Recognizer with max_batch 0 runs, the
// profiles' largest batch up to RecognizerConfig::kDefaultMaxBatch); when the engine's profiles
// refuse it, the batch is halved until they accept it (the result says which). Refused for engines
// that are not CPU or CUDA streaming engines of one [batch, frames, bins] input with
// voxrt.chunk_frames metadata.
Expected<ChunkTiming> time_engine_chunks(const std::string& engine_path, int batch_limit,
                                         int threads, int iterations);

}  // namespace voxrt::server
