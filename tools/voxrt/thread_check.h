// run and bench: a CPU engine's tactics were timed at one thread count (metadata
// voxrt.tuned_threads); another count can rank them differently, so say so.
#pragma once

#include <string>

#include "voxrt/engine.h"

namespace voxrt::cli {

// The warning for running `engine` with `threads` threads, or "" when the counts agree or the
// engine does not record one.
std::string thread_count_warning(const Engine& engine, int threads);

}  // namespace voxrt::cli
