// Conv / FusedConv on oneDNN convolution_forward, with bias and the activation as post-op.
// The constant weights are reordered once into the layout the primitive asks for; primitives
// are made per input shape (batch and time vary at run time) and cached behind a mutex, so a
// steady-state call only wraps pointers and executes. Two layouts for the activations:
//   plain   X and Y stay NC(D)(H)W; oneDNN picks an implementation that reads them directly.
//   blocked oneDNN picks X/Y layouts too (nChw16c, ...); X and Y are reordered around the call.
#include <map>
#include <mutex>

#include "backends/cpu/dense/dense_kernels.h"
#include "backends/cpu/dense/onednn_common.h"
#include "core/thread_pool.h"
#include "ir/shape_inference/dense.h"

namespace voxrt::backends::cpu::dense {
namespace {

using dnnl::memory;

struct ConvPrimitive {
  dnnl::convolution_forward primitive;
  memory::desc user_src_md, user_dst_md;
  memory::desc src_md, dst_md;
  std::optional<dnnl::reorder> src_reorder, dst_reorder;
  std::size_t scratchpad_bytes = 0, src_reorder_scratch = 0, dst_reorder_scratch = 0;
  memory weights;
};

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
      VOXRT_ASSIGN_OR_RETURN(std::shared_ptr<const ConvPrimitive> conv,
                             primitive_for(x.dims(), bias != nullptr, context.pool->threads()));
      const dnnl::engine& engine = onednn_engine();
      const int threads = context.pool->threads();
      std::unordered_map<int, memory> args;
      memory user_src(conv->user_src_md, engine, const_cast<float*>(x.data<float>()));
      memory user_dst(conv->user_dst_md, engine, outputs[0]->data<float>());
      memory src = user_src, dst = user_dst;
      if (conv->src_reorder) {
        src = memory(conv->src_md, engine, thread_scratch_bytes(conv->src_md.get_size(), 1));
        std::unordered_map<int, memory> reorder_args{{DNNL_ARG_FROM, user_src}, {DNNL_ARG_TO, src}};
        execute_primitive(*conv->src_reorder, reorder_args, conv->src_reorder_scratch, threads);
      }
      if (conv->dst_reorder) {
        dst = memory(conv->dst_md, engine, thread_scratch_bytes(conv->dst_md.get_size(), 2));
      }
      args[DNNL_ARG_SRC] = src;
      args[DNNL_ARG_WEIGHTS] = conv->weights;
      args[DNNL_ARG_DST] = dst;
      if (bias) {
        const memory::desc bias_md({bias->dim(0)}, memory::data_type::f32, memory::format_tag::a);
        args[DNNL_ARG_BIAS] = memory(bias_md, engine, const_cast<float*>(bias->data<float>()));
      }
      execute_primitive(conv->primitive, args, conv->scratchpad_bytes, threads);
      if (conv->dst_reorder) {
        std::unordered_map<int, memory> reorder_args{{DNNL_ARG_FROM, dst}, {DNNL_ARG_TO, user_dst}};
        execute_primitive(*conv->dst_reorder, reorder_args, conv->dst_reorder_scratch, threads);
      }
    } catch (const dnnl::error& e) {
      return internal_error(node_.describe(), ": oneDNN convolution failed for X ",
                            dims_to_string(x.dims()), ": ", e.what());
    }
    return Status::ok();
  }

 private:
  // oneDNN fixes a primitive's thread count when it is created, so the key holds it too.
  Expected<std::shared_ptr<const ConvPrimitive>> primitive_for(const Dims& x_dims, bool has_bias,
                                                               int threads) const {
    Dims key = x_dims;
    key.push_back(threads);
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = cache_.find(key);
    if (it != cache_.end()) return it->second;
    set_onednn_threads(threads);
    VOXRT_ASSIGN_OR_RETURN(std::shared_ptr<const ConvPrimitive> made, create(x_dims, has_bias));
    cache_.emplace(std::move(key), made);
    return made;
  }

  Expected<std::shared_ptr<const ConvPrimitive>> create(const Dims& x_dims, bool has_bias) const {
    VOXRT_ASSIGN_OR_RETURN(ir::ConvGeometry g,
                           ir::resolve_conv_geometry(node_, x_dims, weights_.dims()));
    const dnnl::engine& engine = onednn_engine();
    const std::size_t rank = x_dims.size();
    memory::dims dst_dims{g.batch, g.out_channels};
    for (std::int64_t extent : g.output) dst_dims.push_back(extent);
    memory::dims weight_dims;
    if (g.group > 1)
      weight_dims = {g.group, g.out_channels / g.group};
    else
      weight_dims = {g.out_channels};
    weight_dims.push_back(g.in_channels / g.group);
    for (std::int64_t extent : g.kernel) weight_dims.push_back(extent);
    memory::dims dilates;
    for (std::int64_t d : g.dilations) dilates.push_back(d - 1);

    auto conv = std::make_shared<ConvPrimitive>();
    conv->user_src_md = memory::desc(to_dnnl(x_dims), memory::data_type::f32, plain_tag(rank));
    conv->user_dst_md = memory::desc(dst_dims, memory::data_type::f32, plain_tag(rank));
    const memory::desc weights_any(weight_dims, memory::data_type::f32, memory::format_tag::any);
    const memory::desc src_req =
        blocked_ ? memory::desc(to_dnnl(x_dims), memory::data_type::f32, memory::format_tag::any)
                 : conv->user_src_md;
    const memory::desc dst_req =
        blocked_ ? memory::desc(dst_dims, memory::data_type::f32, memory::format_tag::any)
                 : conv->user_dst_md;
    const memory::desc bias_md =
        has_bias ? memory::desc({g.out_channels}, memory::data_type::f32, memory::format_tag::a)
                 : memory::desc();
    dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_inference,
                                         dnnl::algorithm::convolution_direct, src_req, weights_any,
                                         bias_md, dst_req, to_dnnl(g.strides), dilates,
                                         to_dnnl(g.pads_begin), to_dnnl(g.pads_end));
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    dnnl::post_ops ops;
    append_activation_post_op(activation_, ops);
    attr.set_post_ops(ops);
    dnnl::convolution_forward::primitive_desc pd(desc, attr, engine);
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
    conv->weights = packed_weights(pd.weights_desc(), weight_dims);
    return std::shared_ptr<const ConvPrimitive>(conv);
  }

  // The weights in `layout`, reordered once per distinct layout (shapes share them).
  memory packed_weights(const memory::desc& layout, const memory::dims& weight_dims) const {
    for (const auto& [md, packed] : packed_) {
      if (md == layout) return packed;
    }
    const dnnl::engine& engine = onednn_engine();
    const memory::desc user_md(weight_dims, memory::data_type::f32, plain_tag(weight_dims.size()));
    memory user(user_md, engine, const_cast<float*>(weights_.data<float>()));
    memory packed(layout, engine);
    dnnl::stream stream(engine);
    dnnl::reorder(user, packed).execute(stream, user, packed);
    stream.wait();
    packed_.emplace_back(layout, packed);
    return packed;
  }

  ir::Node node_;
  Activation activation_;
  Tensor weights_;
  bool blocked_;
  mutable std::mutex mutex_;
  mutable std::map<Dims, std::shared_ptr<const ConvPrimitive>> cache_;
  mutable std::vector<std::pair<memory::desc, memory>> packed_;
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
