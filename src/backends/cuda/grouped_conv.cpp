// Grouped convolutions (group > 1, 1-D and 2-D): tactic 0 the naive grouped kernel (the oracle),
// kConvDepthwise our depthwise kernel for group == channels (grouped_conv.h; both FP32 arithmetic
// at every precision), and cuDNN's convolution with its group count (8-10 NCHW in the precision's
// type, 14-16 NHWC at FP16/BF16), whose bias and activation run in the pointwise epilogue.
#include <cstdlib>

#include "backends/cuda/cudnn_api.h"
#include "backends/cuda/cudnn_conv.h"
#include "backends/cuda/dense_common.h"
#include "backends/cuda/launch_call.h"

namespace voxrt::backends::cuda {
namespace {

bool is_cudnn_nchw(TacticId tactic) {
  return tactic >= kConvCudnnHeuristic && tactic <= kConvCudnnImplicitPrecompGemm;
}
bool is_cudnn_nhwc(TacticId tactic) {
  return tactic >= kConvCudnnNhwcHeuristic && tactic <= kConvCudnnNhwcImplicitPrecompGemm;
}
CudnnConvAlgo algo_of(TacticId tactic) {
  if (tactic == kConvCudnnImplicitGemm || tactic == kConvCudnnNhwcImplicitGemm)
    return CudnnConvAlgo::kImplicitGemm;
  if (tactic == kConvCudnnImplicitPrecompGemm || tactic == kConvCudnnNhwcImplicitPrecompGemm)
    return CudnnConvAlgo::kImplicitPrecompGemm;
  return CudnnConvAlgo::kHeuristic;
}

// Whether the weights [OC, C / group, ...] make a depthwise convolution (one input channel per
// group, any number of outputs per group).
bool depthwise_weights(const ir::Node& node) {
  const Tensor& w = *node.input(1)->constant;
  const std::int64_t group = node.attrs.get_int("group", 1);
  return w.dim(1) == 1 && w.dim(0) % group == 0;
}

GroupedConv shape_of(const Dims& x, const Dims& w, const Dims& y, const ConvAttrs& attrs,
                     std::int64_t groups) {
  const bool two_d = x.size() == 4;
  GroupedConv s;
  s.batch = x[0];
  s.channels = x[1];
  s.height = two_d ? x[2] : 1;
  s.width = x.back();
  s.out_channels = w[0];
  s.kernel_h = two_d ? w[2] : 1;
  s.kernel_w = w.back();
  s.out_h = two_d ? y[2] : 1;
  s.out_w = y.back();
  s.stride_h = two_d ? attrs.strides[0] : 1;
  s.stride_w = attrs.strides.back();
  s.dilation_h = two_d ? attrs.dilations[0] : 1;
  s.dilation_w = attrs.dilations.back();
  s.pad_top = two_d ? attrs.pads[0] : 0;
  s.pad_left = two_d ? attrs.pads[1] : attrs.pads[0];
  s.groups = groups;
  return s;
}

}  // namespace

bool is_grouped_conv(const ir::Node& node) {
  return is_conv(node) && node.attrs.get_int("group", 1) != 1;
}

std::string grouped_conv_unsupported(const ir::Node& node) {
  const std::int64_t group = node.attrs.get_int("group", 1);
  const Tensor& w = *node.input(1)->constant;
  if (group < 1) return str_cat("group ", group);
  if (w.dim(0) % group != 0)
    return str_cat("grouped convolution with ", w.dim(0), " output channels in ", group, " groups");
  const ir::Value* x = node.input(0);
  if (x && x->rank_known && x->shape.size() > 1 && x->shape[1].is_known() &&
      x->shape[1].value != w.dim(1) * group)
    return str_cat("grouped convolution: ", x->shape[1].value, " input channels, the weights say ",
                   w.dim(1) * group);
  return {};
}

std::vector<TacticInfo> grouped_conv_tactics(const ir::Node& node, Precision precision) {
  std::vector<TacticInfo> tactics{{kReferenceTactic, "reference"}};
  if (depthwise_weights(node)) tactics.push_back({kConvDepthwise, "depthwise_direct"});
  if (cudnn_api()) {
    tactics.push_back({kConvCudnnHeuristic, "cudnn_heuristic"});
    tactics.push_back({kConvCudnnImplicitGemm, "cudnn_implicit_gemm"});
    tactics.push_back({kConvCudnnImplicitPrecompGemm, "cudnn_implicit_precomp_gemm"});
    if (precision == Precision::kFp16 || precision == Precision::kBf16) {
      tactics.push_back({kConvCudnnNhwcHeuristic, "cudnn_nhwc_heuristic"});
      tactics.push_back({kConvCudnnNhwcImplicitGemm, "cudnn_nhwc_implicit_gemm"});
      tactics.push_back({kConvCudnnNhwcImplicitPrecompGemm, "cudnn_nhwc_implicit_precomp_gemm"});
    }
  }
  return tactics;
}

Expected<std::unique_ptr<CudaKernel>> make_grouped_conv_kernel(const ir::Node& node,
                                                               TacticId tactic,
                                                               const Activation& act,
                                                               KernelBuildContext& build) {
  const Tensor& w = *node.input(1)->constant;
  const ConvAttrs attrs = read_conv_attrs(node, w.rank() - 2);
  const std::int64_t groups = node.attrs.get_int("group", 1);
  const std::int64_t out_channels = w.dim(0);
  VOXRT_ASSIGN_OR_RETURN(const float* bias, upload_bias(node, out_channels, build));
  const ops::UnaryOp op = act.present ? act.op : ops::UnaryOp::kIdentity;
  const float alpha = act.alpha, beta = act.beta;
  if (tactic == kReferenceTactic || tactic == kConvDepthwise) {
    if (tactic == kConvDepthwise && !depthwise_weights(node))
      return unsupported(node.describe(), ": the depthwise tactic takes one input channel a group");
    VOXRT_ASSIGN_OR_RETURN(void* weight, build.upload_f32(w.span<float>(), ops::LowType::kF32));
    const auto* filter = static_cast<const float*>(weight);
    const bool depthwise = tactic == kConvDepthwise;
    return make_function_kernel(
        [=](std::span<const DevTensor> inputs,
            std::span<const DevTensor> outputs) -> Expected<std::unique_ptr<CudaCall>> {
          const GroupedConv shape =
              shape_of(inputs[0].dims, inputs[1].dims, outputs[0].dims, attrs, groups);
          if (depthwise && depthwise_launch(shape).threads == 0)
            return unsupported(
                "the depthwise kernel does not take this convolution (its input "
                "segment exceeds shared memory)");
          return launch_call(depthwise ? "depthwise convolution" : "grouped convolution",
                             [=](std::span<const DevTensor> in, std::span<const DevTensor> out,
                                 const CudaRunContext& context) {
                               return depthwise
                                          ? ops::depthwise_conv(shape, in[0].as<const float>(),
                                                                filter, bias, op, alpha, beta,
                                                                out[0].as<float>(), context.stream)
                                          : ops::grouped_conv_reference(
                                                shape, in[0].as<const float>(), filter, bias, op,
                                                alpha, beta, out[0].as<float>(), context.stream);
                             });
        });
  }
  if (!is_cudnn_nchw(tactic) && !is_cudnn_nhwc(tactic))
    return unsupported(node.describe(), ": grouped convolutions have no tactic ", tactic);
  const bool nhwc = is_cudnn_nhwc(tactic);
  const Precision precision = build.precision();
  if (nhwc && precision != Precision::kFp16 && precision != Precision::kBf16)
    return unsupported(node.describe(), ": the cuDNN NHWC tactics are for FP16/BF16");
  const std::vector<float> krsc =
      nhwc ? filter_to_channels_last(w.span<float>(), out_channels, w.dim(1))
           : std::vector<float>();
  VOXRT_ASSIGN_OR_RETURN(void* weight,
                         build.upload_f32(nhwc ? std::span<const float>(krsc) : w.span<float>(),
                                          low_type_for(precision)));
  ConvEpilogue epilogue;
  epilogue.bias = bias;
  epilogue.op = op;
  epilogue.alpha = alpha;
  epilogue.beta = beta;
  const CudnnConvAlgo algo = algo_of(tactic);
  return make_function_kernel(
      [=](std::span<const DevTensor> inputs,
          std::span<const DevTensor> outputs) -> Expected<std::unique_ptr<CudaCall>> {
        const GroupedConv g =
            shape_of(inputs[0].dims, inputs[1].dims, outputs[0].dims, attrs, groups);
        const std::size_t spatial = inputs[0].dims.size() - 2;
        for (std::size_t d = 0; d < spatial; ++d)
          if (attrs.pads[d] != attrs.pads[d + spatial])
            return unsupported("cuDNN convolution takes symmetric padding only");
        CudnnConvShape s;
        s.batch = g.batch;
        s.channels = g.channels;
        s.height = g.height;
        s.width = g.width;
        s.out_channels = g.out_channels;
        s.kernel_h = g.kernel_h;
        s.kernel_w = g.kernel_w;
        s.out_h = g.out_h;
        s.out_w = g.out_w;
        s.stride_h = g.stride_h;
        s.stride_w = g.stride_w;
        s.pad_h = g.pad_top;
        s.pad_w = g.pad_left;
        s.dilation_h = g.dilation_h;
        s.dilation_w = g.dilation_w;
        s.groups = g.groups;
        s.data_type = low_type_for(precision);
        s.tf32 = precision == Precision::kTf32;
        s.nhwc = nhwc;
        return make_cudnn_conv_call(s, algo, weight, epilogue);
      });
}

}  // namespace voxrt::backends::cuda
