#include "server/capacity_estimate.h"

#include <algorithm>
#include <sstream>

#include "runtime/engine_impl.h"
#include "server/engine_timing.h"
#include "voxrt/engine.h"

namespace voxrt::server {
namespace {

// Share of the engine's throughput the server plans to use: the rest of the time goes to the
// front end and the network threads, which share the cores with the engine on a CPU machine.
constexpr double kHeadroom = 0.5;
constexpr int kMaxEstimate = 4096;

}  // namespace

Expected<CapacityEstimate> estimate_realtime_streams(const ServerConfig& config) {
  const std::string& path = config.recognizer.engine_path;
  {
    VOXRT_ASSIGN_OR_RETURN(auto engine, Engine::load_file(path));
    if (engine->impl().contents.target.device != DeviceKind::kCpu)
      return unsupported(path, ": --max-streams auto times CPU engines only");
  }
  VOXRT_ASSIGN_OR_RETURN(ChunkTiming timing,
                         time_engine_chunks(path, config.recognizer.max_batch,
                                            config.recognizer.threads, /*iterations=*/5));
  const double seconds = std::max(timing.median_s(), 1e-6);
  const int workers = std::max<int>(1, static_cast<int>(config.devices.size()));
  const double streams = kHeadroom * workers * timing.batch * timing.chunk_audio_s / seconds;
  CapacityEstimate estimate;
  estimate.max_streams = std::clamp(static_cast<int>(streams), std::max(1, workers), kMaxEstimate);
  std::ostringstream why;
  why << "--max-streams auto: " << estimate.max_streams << " (" << workers << " worker(s) x batch "
      << timing.batch << " x " << timing.chunk_audio_s * 1000 << " ms of audio per "
      << seconds * 1000 << " ms engine call x " << kHeadroom << " headroom for the front end; "
      << config.recognizer.threads << " engine thread(s))";
  estimate.explanation = why.str();
  return estimate;
}

}  // namespace voxrt::server
