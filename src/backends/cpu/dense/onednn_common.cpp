#include "backends/cpu/dense/onednn_common.h"

namespace voxrt::backends::cpu::dense {

const dnnl::engine& onednn_engine() {
  static const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

dnnl::stream& onednn_thread_stream() {
  // Streams are not meant to be shared between threads; CPU streams are cheap, one per thread.
  thread_local dnnl::stream stream(onednn_engine());
  return stream;
}

namespace {

void append_base_activation(const Activation& activation, dnnl::post_ops& ops) {
  using dnnl::algorithm;
  switch (activation.kind) {
    case ActivationKind::kNone: return;
    case ActivationKind::kRelu:
      ops.append_eltwise(1.0f, algorithm::eltwise_relu, 0.0f, 0.0f);
      return;
    case ActivationKind::kLeakyRelu:
      ops.append_eltwise(1.0f, algorithm::eltwise_relu, activation.alpha, 0.0f);
      return;
    case ActivationKind::kClip:
      ops.append_eltwise(1.0f, algorithm::eltwise_clip, activation.alpha, activation.beta);
      return;
    case ActivationKind::kSigmoid:
      ops.append_eltwise(1.0f, algorithm::eltwise_logistic, 0.0f, 0.0f);
      return;
    case ActivationKind::kTanh:
      ops.append_eltwise(1.0f, algorithm::eltwise_tanh, 0.0f, 0.0f);
      return;
    case ActivationKind::kGeluErf:
      ops.append_eltwise(1.0f, algorithm::eltwise_gelu_erf, 0.0f, 0.0f);
      return;
    case ActivationKind::kSilu:  // x * sigmoid(alpha x)
      ops.append_eltwise(1.0f, algorithm::eltwise_swish, 1.0f, 0.0f);
      return;
  }
}

}  // namespace

void append_activation_post_op(const Activation& activation, dnnl::post_ops& ops) {
  append_base_activation(activation, ops);
  if (activation.has_clamp) {
    ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_clip, activation.clamp_min,
                       activation.clamp_max);
  }
}

namespace {

// Beyond this many primitives on one thread the maps start afresh (they also keep the
// primitives of unloaded engines alive; rebuilding a map costs one call's allocations).
constexpr std::size_t kMaxThreadArgumentMaps = 1024;

struct PrimitiveArguments {
  dnnl::primitive primitive;  // keeps the handle (the map's key) alive
  ArgumentMap args;
};

}  // namespace

ArgumentMap& thread_arguments(const dnnl::primitive& primitive) {
  thread_local std::unordered_map<const void*, PrimitiveArguments> maps;
  const void* key = primitive.get();
  auto it = maps.find(key);
  if (it != maps.end()) return it->second.args;
  if (maps.size() >= kMaxThreadArgumentMaps) maps.clear();
  return maps.emplace(key, PrimitiveArguments{primitive, {}}).first->second.args;
}

bool rebind_argument(ArgumentMap& args, int arg, const void* data) {
  auto it = args.find(arg);
  if (it == args.end()) return false;
  it->second.set_data_handle(const_cast<void*>(data));
  return true;
}

void bind_argument(ArgumentMap& args, int arg, const dnnl::memory::desc& md, const void* data) {
  if (!rebind_argument(args, arg, data))
    args[arg] = dnnl::memory(md, onednn_engine(), const_cast<void*>(data));
}

void execute_primitive(const dnnl::primitive& primitive,
                       std::unordered_map<int, dnnl::memory>& args, std::size_t scratchpad_bytes,
                       int threads) {
  if (scratchpad_bytes > 0) {
    void* scratch = thread_scratch_bytes(scratchpad_bytes, 7);
    if (!rebind_argument(args, DNNL_ARG_SCRATCHPAD, scratch)) {
      bind_argument(args, DNNL_ARG_SCRATCHPAD,
                    dnnl::memory::desc({static_cast<dnnl::memory::dim>(scratchpad_bytes)},
                                       dnnl::memory::data_type::u8, dnnl::memory::format_tag::a),
                    scratch);
    }
  }
  set_onednn_threads(threads);
  dnnl::stream& stream = onednn_thread_stream();
  primitive.execute(stream, args);
  stream.wait();
}

dnnl::memory::format_tag plain_tag(std::size_t rank) {
  using tag = dnnl::memory::format_tag;
  switch (rank) {
    case 1: return tag::a;
    case 2: return tag::ab;
    case 3: return tag::abc;
    case 4: return tag::abcd;
    case 5: return tag::abcde;
    case 6: return tag::abcdef;
    default: return tag::undef;
  }
}

dnnl::memory ReorderedWeights::get(const dnnl::memory::desc& layout, dnnl::memory source,
                                   const Slice& slice, const dnnl::primitive_attr& attr) {
  for (const Held& held : held_) {
    if (held.slice == slice && held.layout == layout) return held.memory;
  }
  const dnnl::engine engine = source.get_engine();
  dnnl::memory reordered(layout, engine);
  dnnl::stream stream(engine);
  dnnl::reorder(dnnl::reorder::primitive_desc(source, reordered, attr))
      .execute(stream, source, reordered);
  stream.wait();
  held_.push_back({layout, slice, reordered});
  return reordered;
}

}  // namespace voxrt::backends::cpu::dense
