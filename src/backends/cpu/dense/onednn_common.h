// oneDNN plumbing shared by the oneDNN dense kernels: the CPU engine, a stream per thread,
// post-ops for the fused activations, and execution with caller-owned scratchpad (primitives
// are created with scratchpad_mode::user, so one primitive can run on many threads at once).
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include <array>
#include <unordered_map>
#include <vector>

#include "backends/cpu/dense/dense_common.h"

namespace voxrt::backends::cpu::dense {

const dnnl::engine& onednn_engine();
dnnl::stream& onednn_thread_stream();

// Appends the activation as an eltwise post-op (nothing for kNone).
void append_activation_post_op(const Activation& activation, dnnl::post_ops& ops);

// The argument map of one primitive on the calling thread, kept between runs. Making the
// dnnl::memory objects of a call costs a few mallocs and descriptor checks each; a streaming
// run of a small model (Silero VAD, 4 oneDNN calls) spent ~15 % of its time there. The entry
// holds a reference to the primitive, so its address cannot be reused by another one while the
// entry exists. A thread that has run very many primitives starts its maps afresh.
using ArgumentMap = std::unordered_map<int, dnnl::memory>;
// The reference is valid until the next call of thread_arguments on this thread.
ArgumentMap& thread_arguments(const dnnl::primitive& primitive);
// Points argument `arg` at `data`. A primitive's arguments keep their descriptors (the maps are
// per primitive, and a call site binds the same descriptor to an argument every time), so a
// memory object already there is only re-pointed; `md` describes the first one.
void bind_argument(ArgumentMap& args, int arg, const dnnl::memory::desc& md, const void* data);
// Re-points argument `arg` at `data` when it is bound already (then returns true): for call
// sites that would otherwise build a descriptor on every call just to find it unused.
bool rebind_argument(ArgumentMap& args, int arg, const void* data);

// A constant weight tensor reordered into each layout that oneDNN primitives ask for, once per
// layout. Kernels make a primitive per shape (rows, batch, sequence length), but the weight layout
// a primitive wants almost never depends on the shape; a copy per shape grew a server by ~19 MB a
// stream whose last chunk had a new length (docs/perf/server.md). `slice` tells apart parts of
// one tensor (a block of output channels, a direction's columns) that may share a layout.
// Not thread-safe: callers hold their primitive cache's lock.
class ReorderedWeights {
 public:
  using Slice = std::array<std::int64_t, 3>;
  // `source` (the caller's plain weights, read only on a miss) in `layout`, reordered with
  // `attr` (e.g. an output scale folded into the weights).
  dnnl::memory get(const dnnl::memory::desc& layout, dnnl::memory source, const Slice& slice = {},
                   const dnnl::primitive_attr& attr = {});

 private:
  struct Held {
    dnnl::memory::desc layout;
    Slice slice;
    dnnl::memory memory;
  };
  std::vector<Held> held_;
};

// Runs `primitive` on the calling thread with `threads` OpenMP threads; the scratchpad of
// `scratchpad_bytes` comes from per-thread storage (scratch slot 7, kept for oneDNN).
void execute_primitive(const dnnl::primitive& primitive,
                       std::unordered_map<int, dnnl::memory>& args, std::size_t scratchpad_bytes,
                       int threads);

// Plain row-major format tag for a tensor of `rank` dims (abc..., as dims are ordered).
dnnl::memory::format_tag plain_tag(std::size_t rank);

}  // namespace voxrt::backends::cpu::dense
