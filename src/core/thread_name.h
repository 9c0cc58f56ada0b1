// Names the calling thread (at most 15 characters, as Linux keeps them), so that top -H, perf
// and /proc/PID/task/*/comm tell the server's network, compute and pool threads apart.
#pragma once

namespace voxrt {

void name_this_thread(const char* name);

}  // namespace voxrt
