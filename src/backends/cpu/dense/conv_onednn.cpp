// Conv / FusedConv on oneDNN convolution_forward, with bias and the activation as post-op.
// The constant weights are reordered once into the layout the primitive asks for; primitives
// are made per input shape (batch and time vary at run time) and cached behind a mutex, so a
// steady-state call only wraps pointers and executes. Two layouts for the activations:
//   plain   X and Y stay NC(D)(H)W; oneDNN picks an implementation that reads them directly.
//   blocked oneDNN picks X/Y layouts too (nChw16c, ...); X and Y are reordered around the call.
// Threads: oneDNN runs on OpenMP, whose workers are a second pool beside ours; when the cores
// are shared they oversubscribe them and every region end waits for a descheduled worker (a
// 2-thread conv measured 3x slower than 1 thread under load). So each primitive runs on one
// OpenMP thread, and with N pool threads the output channels are split into N parts (group 1,
// batch 1 only), one primitive per part, run side by side on our pool.
#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <string>

#include "backends/cpu/dense/dense_kernels.h"
#include "backends/cpu/dense/onednn_common.h"
#include "core/thread_pool.h"
#include "ir/shape_inference/dense.h"

namespace voxrt::backends::cpu::dense {
namespace {

using dnnl::memory;

// Output channels below this per part are not worth their own primitive.
constexpr std::int64_t kMinPartChannels = 8;
// Nor is a convolution below this many FLOPs worth splitting: handing a part to another thread
// costs tens of microseconds when the cores are busy (the melspectrogram's 2-MFLOP STFT convs
// were slower split in two than whole on one thread).
constexpr double kMinSplitFlops = 2e7;

// One primitive: output channels [oc_begin, oc_begin + oc_count) of the convolution.
struct ConvPrimitive {
  std::int64_t oc_begin = 0, oc_count = 0;
  std::int64_t dst_offset = 0;  // floats from Y's start to channel oc_begin
  std::int64_t dst_floats = 0;  // floats of Y this part writes, from dst_offset on
  bool reference_impl = false;  // oneDNN found only its slow reference implementation
  dnnl::convolution_forward primitive;
  memory::desc user_src_md, user_dst_md;
  memory::desc src_md, dst_md;
  std::optional<dnnl::reorder> src_reorder, dst_reorder;
  std::size_t scratchpad_bytes = 0, src_reorder_scratch = 0, dst_reorder_scratch = 0;
  memory weights;
};

struct ConvParts {
  std::vector<ConvPrimitive> parts;
};

// Channel boundaries of `parts` parts: multiples of 8 where possible, the last one ends at OC.
std::vector<std::int64_t> part_bounds(std::int64_t out_channels, int parts) {
  std::vector<std::int64_t> bounds{0};
  for (int i = 1; i < parts; ++i) bounds.push_back(out_channels * i / parts / 8 * 8);
  bounds.push_back(out_channels);
  return bounds;
}

memory::dims to_dnnl(const std::vector<std::int64_t>& v) {
  return memory::dims(v.begin(), v.end());
}

class ConvOneDnnKernel final : public Kernel {
 public:
  ConvOneDnnKernel(ir::Node node, Activation activation, Tensor weights, bool blocked)
      : node_(std::move(node)),
        activation_(activation),
        weights_(std::move(weights)),
        blocked_(blocked) {}

  // Creates the primitive (and packs the weights) for the shape the plan was built with.
  Status warm_up(const Dims& x_dims, bool has_bias) const {
    try {
      return primitive_for(x_dims, has_bias, 1).status();
    } catch (const dnnl::error& e) {
      return internal_error(node_.describe(), ": oneDNN convolution failed for X ",
                            dims_to_string(x_dims), ": ", e.what());
    }
  }

  Status run(std::span<const Tensor* const> inputs, std::span<Tensor* const> outputs,
             KernelContext& context) const override {
    const Tensor& x = *inputs[0];
    const Tensor* bias = inputs.size() > 2 ? inputs[2] : nullptr;
    try {
      VOXRT_ASSIGN_OR_RETURN(std::shared_ptr<const ConvParts> conv,
                             primitive_for(x.dims(), bias != nullptr, context.pool->threads()));
      const std::int64_t parts = static_cast<std::int64_t>(conv->parts.size());
      if (parts == 1) {
        run_part(conv->parts[0], x, bias, *outputs[0]);
        return Status::ok();
      }
      // Every part on its own pool thread (count == parts <= threads: one part per range).
      std::atomic<bool> failed{false};
      std::string error;
      std::mutex error_mutex;
      context.pool->parallel_for(parts, 1, [&](std::int64_t begin, std::int64_t end) {
        for (std::int64_t p = begin; p < end; ++p) {
          try {
            run_part(conv->parts[static_cast<std::size_t>(p)], x, bias, *outputs[0]);
          } catch (const dnnl::error& e) {
            std::lock_guard<std::mutex> lock(error_mutex);
            failed = true;
            error = e.what();
          }
        }
      });
      if (failed) {
        return internal_error(node_.describe(), ": oneDNN convolution failed for X ",
                              dims_to_string(x.dims()), ": ", error);
      }
    } catch (const dnnl::error& e) {
      return internal_error(node_.describe(), ": oneDNN convolution failed for X ",
                            dims_to_string(x.dims()), ": ", e.what());
    }
    return Status::ok();
  }

 private:
  // One part: X reordered if the primitive wants another layout, the convolution, Y reordered
  // back; on the calling thread (one OpenMP thread) with its own scratch.
  void run_part(const ConvPrimitive& conv, const Tensor& x, const Tensor* bias, Tensor& y) const {
    // Each argument map is used before the next is asked for (see thread_arguments).
    float* const y_part = y.data<float>() + conv.dst_offset;
    const void* src = x.data<float>();
    if (conv.src_reorder) {
      void* reordered = thread_scratch_bytes(conv.src_md.get_size(), 1);
      ArgumentMap& args = thread_arguments(*conv.src_reorder);
      bind_argument(args, DNNL_ARG_FROM, conv.user_src_md, src);
      bind_argument(args, DNNL_ARG_TO, conv.src_md, reordered);
      execute_primitive(*conv.src_reorder, args, conv.src_reorder_scratch, 1);
      src = reordered;
    }
    void* dst = conv.dst_reorder ? thread_scratch_bytes(conv.dst_md.get_size(), 2) : y_part;
    {
      ArgumentMap& args = thread_arguments(conv.primitive);
      bind_argument(args, DNNL_ARG_SRC, conv.src_reorder ? conv.src_md : conv.user_src_md, src);
      args[DNNL_ARG_WEIGHTS] = conv.weights;
      bind_argument(args, DNNL_ARG_DST, conv.dst_reorder ? conv.dst_md : conv.user_dst_md, dst);
      if (bias && !rebind_argument(args, DNNL_ARG_BIAS, bias->data<float>() + conv.oc_begin)) {
        const memory::desc bias_md({conv.oc_count}, memory::data_type::f32, memory::format_tag::a);
        bind_argument(args, DNNL_ARG_BIAS, bias_md, bias->data<float>() + conv.oc_begin);
      }
      execute_primitive(conv.primitive, args, conv.scratchpad_bytes, 1);
    }
    if (conv.dst_reorder) {
      ArgumentMap& args = thread_arguments(*conv.dst_reorder);
      bind_argument(args, DNNL_ARG_FROM, conv.dst_md, dst);
      bind_argument(args, DNNL_ARG_TO, conv.user_dst_md, y_part);
      execute_primitive(*conv.dst_reorder, args, conv.dst_reorder_scratch, 1);
    }
    if (activation_after()) apply_activation(activation_, y_part, conv.dst_floats);
  }

  // GELU (erf) is applied by our AVX-512 loop after the primitive instead of as its post-op:
  // oneDNN 2.6's convolutions ran it at about 24 ns an element (Whisper-base's first
  // convolution: 42 ms with the post-op, 6.5 ms without; bench/dense/dense_tactics).
  bool activation_after() const { return activation_.kind == ActivationKind::kGeluErf; }

  // Primitives are made per X shape and pool size (the number of parts).
  Expected<std::shared_ptr<const ConvParts>> primitive_for(const Dims& x_dims, bool has_bias,
                                                           int threads) const {
    Dims key = x_dims;
    key.push_back(threads);
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = cache_.find(key);
    if (it != cache_.end()) return it->second;
    set_onednn_threads(1);
    VOXRT_ASSIGN_OR_RETURN(ir::ConvGeometry g,
                           ir::resolve_conv_geometry(node_, x_dims, weights_.dims()));
    int parts = 1;
    double flops = 2.0 * static_cast<double>(g.out_channels) * static_cast<double>(g.in_channels);
    for (std::int64_t extent : g.kernel) flops *= static_cast<double>(extent);
    for (std::int64_t extent : g.output) flops *= static_cast<double>(extent);
    if (g.group == 1 && g.batch == 1 && flops >= kMinSplitFlops) {
      parts = static_cast<int>(
          std::clamp<std::int64_t>(g.out_channels / kMinPartChannels, 1, std::max(threads, 1)));
    }
    auto made = std::make_shared<ConvParts>();
    for (;; parts = 1) {
      made->parts.clear();
      const std::vector<std::int64_t> bounds = part_bounds(g.out_channels, parts);
      bool reference = false;
      for (std::size_t p = 0; p < static_cast<std::size_t>(parts); ++p) {
        VOXRT_ASSIGN_OR_RETURN(ConvPrimitive part,
                               create(g, x_dims, has_bias, bounds[p], bounds[p + 1] - bounds[p]));
        reference = reference || part.reference_impl;
        made->parts.push_back(std::move(part));
      }
      // Some layouts have fast implementations only for the whole channel count (conv1 of DS2,
      // plain NCHW, 16 channels: reference, 1000x slower); split only when every part is fast.
      if (parts == 1 || !reference) break;
    }
    std::shared_ptr<const ConvParts> result = made;
    cache_.emplace(std::move(key), result);
    return result;
  }

  Expected<ConvPrimitive> create(const ir::ConvGeometry& g, const Dims& x_dims, bool has_bias,
                                 std::int64_t oc_begin, std::int64_t oc_count) const {
    const dnnl::engine& engine = onednn_engine();
    const std::size_t rank = x_dims.size();
    memory::dims dst_dims{g.batch, oc_count};
    std::int64_t out_plane = 1;
    for (std::int64_t extent : g.output) {
      dst_dims.push_back(extent);
      out_plane *= extent;
    }
    memory::dims weight_dims;
    if (g.group > 1)
      weight_dims = {g.group, g.out_channels / g.group};
    else
      weight_dims = {oc_count};
    weight_dims.push_back(g.in_channels / g.group);
    for (std::int64_t extent : g.kernel) weight_dims.push_back(extent);
    memory::dims dilates;
    for (std::int64_t d : g.dilations) dilates.push_back(d - 1);

    ConvPrimitive made;
    ConvPrimitive* conv = &made;
    conv->oc_begin = oc_begin;
    conv->oc_count = oc_count;
    conv->dst_offset = oc_begin * out_plane;
    conv->dst_floats = g.batch * oc_count * out_plane;  // batch 1 when there are several parts
    conv->user_src_md = memory::desc(to_dnnl(x_dims), memory::data_type::f32, plain_tag(rank));
    // A part's channels are a contiguous stretch of the plain Y only at batch 1 (parts are made
    // only then): strided descs would send oneDNN to its reference implementation.
    conv->user_dst_md = memory::desc(dst_dims, memory::data_type::f32, plain_tag(rank));
    const memory::desc weights_any(weight_dims, memory::data_type::f32, memory::format_tag::any);
    const memory::desc src_req =
        blocked_ ? memory::desc(to_dnnl(x_dims), memory::data_type::f32, memory::format_tag::any)
                 : conv->user_src_md;
    const memory::desc dst_req =
        blocked_ ? memory::desc(dst_dims, memory::data_type::f32, memory::format_tag::any)
                 : conv->user_dst_md;
    const memory::desc bias_md =
        has_bias ? memory::desc({oc_count}, memory::data_type::f32, memory::format_tag::a)
                 : memory::desc();
    dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_inference,
                                         dnnl::algorithm::convolution_direct, src_req, weights_any,
                                         bias_md, dst_req, to_dnnl(g.strides), dilates,
                                         to_dnnl(g.pads_begin), to_dnnl(g.pads_end));
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    dnnl::post_ops ops;
    if (!activation_after()) append_activation_post_op(activation_, ops);
    attr.set_post_ops(ops);
    dnnl::convolution_forward::primitive_desc pd(desc, attr, engine);
    conv->reference_impl = std::string(pd.impl_info_str()).rfind("ref", 0) == 0;
    conv->primitive = dnnl::convolution_forward(pd);
    conv->scratchpad_bytes = pd.scratchpad_desc().get_size();
    conv->src_md = pd.src_desc();
    conv->dst_md = pd.dst_desc();
    dnnl::primitive_attr reorder_attr;
    reorder_attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    if (conv->src_md != conv->user_src_md) {
      dnnl::reorder::primitive_desc rpd(engine, conv->user_src_md, engine, conv->src_md,
                                        reorder_attr);
      conv->src_reorder = dnnl::reorder(rpd);
      conv->src_reorder_scratch = rpd.scratchpad_desc().get_size();
    }
    if (conv->dst_md != conv->user_dst_md) {
      dnnl::reorder::primitive_desc rpd(engine, conv->dst_md, engine, conv->user_dst_md,
                                        reorder_attr);
      conv->dst_reorder = dnnl::reorder(rpd);
      conv->dst_reorder_scratch = rpd.scratchpad_desc().get_size();
    }
    conv->weights = packed_weights(pd.weights_desc(), weight_dims, oc_begin);
    return made;
  }

  // Weights of channels [oc_begin, ...) (weight_dims[0] of them; all when oc_begin is 0 and the
  // dims cover OC) in `layout`, reordered once per distinct (layout, oc_begin).
  memory packed_weights(const memory::desc& layout, const memory::dims& weight_dims,
                        std::int64_t oc_begin) const {
    const memory::desc user_md(weight_dims, memory::data_type::f32, plain_tag(weight_dims.size()));
    const std::int64_t per_channel = weights_.element_count() / weights_.dim(0);
    const memory user(user_md, onednn_engine(),
                      const_cast<float*>(weights_.data<float>()) + oc_begin * per_channel);
    return packed_.get(layout, user, {oc_begin});
  }

  ir::Node node_;
  Activation activation_;
  Tensor weights_;
  bool blocked_;
  mutable std::mutex mutex_;
  mutable std::map<Dims, std::shared_ptr<const ConvParts>> cache_;
  mutable ReorderedWeights packed_;
};

}  // namespace

Expected<std::unique_ptr<Kernel>> make_conv_onednn_kernel(const ir::Node& node, bool blocked) {
  VOXRT_ASSIGN_OR_RETURN(Activation activation, read_activation(node));
  const ir::Value* w = node.input(1);
  if (!w || !w->is_constant()) {
    return unsupported(node.describe(), ": the oneDNN Conv tactic needs constant weights");
  }
  auto kernel =
      std::make_unique<ConvOneDnnKernel>(detached_node(node), activation, *w->constant, blocked);
  const ir::Value* x = node.input(0);
  if (x && x->rank_known) {
    if (auto x_dims = ir::known_dims(x->shape))
      VOXRT_RETURN_IF_ERROR(kernel->warm_up(*x_dims, node.input(2) != nullptr));
  }
  return std::unique_ptr<Kernel>(std::move(kernel));
}

}  // namespace voxrt::backends::cpu::dense
