#include "server/engine_timing.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <map>

#include "runtime/state_pool.h"
#include "stream/batch_limit.h"
#include "stream/recognizer.h"
#include "voxrt/engine.h"

namespace voxrt::server {
namespace {

Expected<double> metadata_number(const std::map<std::string, std::string>& metadata,
                                 const std::string& key) {
  auto it = metadata.find(key);
  if (it == metadata.end()) return invalid_argument("the engine's metadata has no ", key);
  char* end = nullptr;
  const double value = std::strtod(it->second.c_str(), &end);
  if (end == it->second.c_str() || value <= 0)
    return invalid_argument("the engine's metadata ", key, " is '", it->second, "'");
  return value;
}

}  // namespace

double ChunkTiming::percentile_s(double p) const {
  if (seconds.empty()) return 0;
  const auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * seconds.size()));
  return seconds[std::clamp<std::size_t>(rank, 1, seconds.size()) - 1];
}

Expected<ChunkTiming> time_engine_chunks(const std::string& engine_path, int batch_limit,
                                         int threads, int iterations) {
  VOXRT_ASSIGN_OR_RETURN(auto engine, Engine::load_file(engine_path));
  const auto& metadata = engine->metadata();
  ChunkTiming timing;
  VOXRT_ASSIGN_OR_RETURN(double chunk_frames, metadata_number(metadata, "voxrt.chunk_frames"));
  double shift_frames = chunk_frames;
  if (metadata.count("voxrt.shift_frames")) {
    VOXRT_ASSIGN_OR_RETURN(shift_frames, metadata_number(metadata, "voxrt.shift_frames"));
  }
  VOXRT_ASSIGN_OR_RETURN(double frame_shift_ms,
                         metadata_number(metadata, "voxrt.feature.frame_shift_ms"));
  timing.chunk_frames = static_cast<int>(chunk_frames);
  timing.chunk_audio_s = shift_frames * frame_shift_ms / 1000.0;
  const int default_batch = stream::RecognizerConfig::kDefaultMaxBatch;
  int batch = batch_limit > 0 ? batch_limit : default_batch;
  VOXRT_ASSIGN_OR_RETURN(auto pool, StatePool::create(engine, batch));
  if (pool->stream_inputs().size() != 1 || pool->stream_inputs()[0].dims.size() != 3)
    return unsupported(engine_path, ": timing needs one [batch, frames, bins] stream input");
  if (batch_limit <= 0) {
    // What a Recognizer with max_batch 0 runs: the profiles' largest batch, at most the default.
    batch = static_cast<int>(std::min<std::int64_t>(
        default_batch, stream::largest_profile_batch(*engine, pool->stream_inputs()[0].name)
                           .value_or(default_batch)));
  }
  const std::int64_t bins = pool->stream_inputs()[0].dims[2];
  if (bins <= 0) return unsupported(engine_path, ": the feature input's last dim is not fixed");
  VOXRT_ASSIGN_OR_RETURN(auto context, engine->create_context(threads));
  std::vector<int> slots;
  for (int i = 0; i < batch; ++i) {
    VOXRT_ASSIGN_OR_RETURN(int slot, pool->acquire());
    slots.push_back(slot);
  }
  using Clock = std::chrono::steady_clock;
  for (;;) {
    const Tensor features = Tensor::zeros(DType::kF32, {batch, timing.chunk_frames, bins});
    const std::span<const int> batch_slots(slots.data(), static_cast<std::size_t>(batch));
    // The first run also pays for page faults and thread start-up: not timed.
    auto warm = pool->run_batch(*context, batch_slots, std::span<const Tensor>(&features, 1));
    if (!warm) {
      if (batch == 1) return warm.status();
      batch /= 2;
      continue;
    }
    for (int run = 0; run < std::max(1, iterations); ++run) {
      const auto start = Clock::now();
      VOXRT_RETURN_IF_ERROR(
          pool->run_batch(*context, batch_slots, std::span<const Tensor>(&features, 1)).status());
      timing.seconds.push_back(std::chrono::duration<double>(Clock::now() - start).count());
    }
    break;
  }
  std::sort(timing.seconds.begin(), timing.seconds.end());
  timing.batch = batch;
  return timing;
}

}  // namespace voxrt::server
