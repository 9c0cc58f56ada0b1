// `voxrt serve --max-streams auto`: how many real-time streams this machine can carry with a CPU
// engine, from a timing of the engine itself, so the default no longer admits far more streams
// than the CPU can serve (256 were admitted where a 2-core machine carries about 32).
#pragma once

#include <string>

#include "server/server_config.h"
#include "voxrt/status.h"

namespace voxrt::server {

struct CapacityEstimate {
  int max_streams = 0;
  // How it was found, for the startup log: batch, time per batch, audio per chunk, headroom.
  std::string explanation;
};

// Times one batched engine call (zeros, fresh states) at the server's --max-batch (or the largest
// batch the engine accepts below it) with the server's --engine-threads, and returns
//   streams = kHeadroom x workers x batch x audio_per_chunk / time_per_batch,
// where kHeadroom (0.5) leaves the rest of the cores' time to the front end (features, VAD,
// decoding) and the network. Refused for engines that are not CPU streaming engines of one
// feature input (the caller keeps the configured value).
Expected<CapacityEstimate> estimate_realtime_streams(const ServerConfig& config);

}  // namespace voxrt::server
