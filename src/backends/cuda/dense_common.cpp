#include "backends/cuda/dense_common.h"

namespace voxrt::backends::cuda {

Expected<Activation> read_activation(const ir::Node& node) {
  Activation a;
  if (node.op != ir::OpKind::kFusedConv && node.op != ir::OpKind::kFusedMatMul) return a;
  const std::string name = node.attrs.get_string("activation", "none");
  if (name == "none") return a;
  a.present = true;
  if (name == "relu") {
    a.relu = true;
    a.op = ops::UnaryOp::kRelu;
  } else if (name == "clip") {
    a.op = ops::UnaryOp::kClip;
    a.alpha = node.attrs.get_float("activation_alpha", -3.402823466e38f);
    a.beta = node.attrs.get_float("activation_beta", 3.402823466e38f);
  } else if (name == "leaky_relu") {
    a.op = ops::UnaryOp::kLeakyRelu;
    a.alpha = node.attrs.get_float("activation_alpha", 0.01f);
  } else if (name == "sigmoid") {
    a.op = ops::UnaryOp::kSigmoid;
  } else if (name == "tanh") {
    a.op = ops::UnaryOp::kTanh;
  } else if (name == "silu") {
    a.op = ops::UnaryOp::kSilu;  // x * sigmoid(x): the Conformer's convolution module
  } else if (name == "gelu_erf") {
    a.op = ops::UnaryOp::kGeluErf;  // cuBLASLt's GELU epilogue is the tanh form: not fused
  } else {
    return unsupported(node.describe(), ": activation '", name, "'");
  }
  if (node.attrs.has("activation_clamp_min") || node.attrs.has("activation_clamp_max")) {
    a.has_clamp = true;
    a.clamp_min = node.attrs.get_float("activation_clamp_min", -3.402823466e38f);
    a.clamp_max = node.attrs.get_float("activation_clamp_max", 3.402823466e38f);
  }
  return a;
}

ConvAttrs read_conv_attrs(const ir::Node& node, std::size_t spatial) {
  ConvAttrs attrs;
  attrs.strides = node.attrs.get_ints("strides", std::vector<std::int64_t>(spatial, 1));
  attrs.dilations = node.attrs.get_ints("dilations", std::vector<std::int64_t>(spatial, 1));
  attrs.pads = node.attrs.get_ints("pads", std::vector<std::int64_t>(2 * spatial, 0));
  if (node.attrs.get_string("auto_pad", "NOTSET") == "VALID") attrs.pads.assign(2 * spatial, 0);
  return attrs;
}

std::vector<float> filter_to_channels_last(std::span<const float> w, std::int64_t out_channels,
                                           std::int64_t channels) {
  const std::int64_t window = static_cast<std::int64_t>(w.size()) / (out_channels * channels);
  std::vector<float> out(w.size());
  for (std::int64_t oc = 0; oc < out_channels; ++oc)
    for (std::int64_t c = 0; c < channels; ++c)
      for (std::int64_t k = 0; k < window; ++k)
        out[static_cast<std::size_t>((oc * window + k) * channels + c)] =
            w[static_cast<std::size_t>((oc * channels + c) * window + k)];
  return out;
}

Expected<const float*> upload_bias(const ir::Node& node, std::int64_t out_channels,
                                   KernelBuildContext& build) {
  if (!node.input(2)) return static_cast<const float*>(nullptr);
  std::vector<float> b(static_cast<std::size_t>(out_channels));
  for (std::int64_t oc = 0; oc < out_channels; ++oc)
    b[static_cast<std::size_t>(oc)] =
        static_cast<float>(node.input(2)->constant->element_as_double(oc));
  VOXRT_ASSIGN_OR_RETURN(void* uploaded, build.upload_f32(b, ops::LowType::kF32));
  return static_cast<const float*>(uploaded);
}

bool is_conv(const ir::Node& node) {
  return node.op == ir::OpKind::kConv || node.op == ir::OpKind::kFusedConv;
}

}  // namespace voxrt::backends::cuda
