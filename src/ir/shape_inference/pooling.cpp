#include "ir/shape_inference/pooling.h"

#include <algorithm>

#include "ir/shape_inference.h"

namespace voxrt::ir {

namespace {

bool is_global(OpKind op) {
  return op == OpKind::kGlobalAveragePool || op == OpKind::kGlobalMaxPool;
}

Status check_length(const Node& node, const char* name, const std::vector<std::int64_t>& values,
                    std::size_t expected) {
  if (values.size() != expected) {
    return invalid_argument(
        node.describe(), ": ", name, " has ", values.size(), " values, expected ", expected,
        " (one per spatial axis",
        expected > 0 && std::string_view(name) == "pads" ? ", begins then ends" : "", ")");
  }
  return Status::ok();
}

std::int64_t ceil_div(std::int64_t a, std::int64_t b) {
  return (a + b - 1) / b;
}

}  // namespace

Expected<PoolGeometry> resolve_pool_geometry(const Node& node,
                                             const std::vector<std::int64_t>& spatial) {
  const std::size_t n = spatial.size();
  PoolGeometry g;
  g.input = spatial;
  if (is_global(node.op)) {
    g.kernel = spatial;
    g.strides.assign(n, 1);
    g.dilations.assign(n, 1);
    g.pad_begin.assign(n, 0);
    g.pad_end.assign(n, 0);
    g.output.assign(n, 1);
    return g;
  }
  if (!node.attrs.has("kernel_shape")) {
    return invalid_argument(node.describe(), ": attribute kernel_shape is required");
  }
  g.kernel = node.attrs.get_ints("kernel_shape");
  g.strides = node.attrs.get_ints("strides", std::vector<std::int64_t>(n, 1));
  g.dilations = node.attrs.get_ints("dilations", std::vector<std::int64_t>(n, 1));
  std::vector<std::int64_t> pads = node.attrs.get_ints("pads", std::vector<std::int64_t>(2 * n, 0));
  VOXRT_RETURN_IF_ERROR(check_length(node, "kernel_shape", g.kernel, n));
  VOXRT_RETURN_IF_ERROR(check_length(node, "strides", g.strides, n));
  VOXRT_RETURN_IF_ERROR(check_length(node, "dilations", g.dilations, n));
  VOXRT_RETURN_IF_ERROR(check_length(node, "pads", pads, 2 * n));
  const std::string auto_pad = node.attrs.get_string("auto_pad", "NOTSET");
  if (auto_pad != "NOTSET" && auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER" &&
      auto_pad != "VALID") {
    return invalid_argument(node.describe(), ": auto_pad '", auto_pad,
                            "' (expected NOTSET, SAME_UPPER, SAME_LOWER or VALID)");
  }
  const bool ceil_mode = node.attrs.get_int("ceil_mode", 0) != 0;
  g.count_include_pad = node.attrs.get_int("count_include_pad", 0) != 0;
  g.pad_begin.assign(pads.begin(), pads.begin() + static_cast<std::ptrdiff_t>(n));
  g.pad_end.assign(pads.begin() + static_cast<std::ptrdiff_t>(n), pads.end());
  g.output.assign(n, -1);
  for (std::size_t i = 0; i < n; ++i) {
    if (g.kernel[i] <= 0 || g.strides[i] <= 0 || g.dilations[i] <= 0 || g.pad_begin[i] < 0 ||
        g.pad_end[i] < 0) {
      return invalid_argument(node.describe(), ": axis ", i, " has kernel ", g.kernel[i],
                              ", stride ", g.strides[i], ", dilation ", g.dilations[i], ", pads ",
                              g.pad_begin[i], "/", g.pad_end[i],
                              " (expected positive kernel, stride, dilation and pads >= 0)");
    }
    const std::int64_t window = (g.kernel[i] - 1) * g.dilations[i] + 1;
    const std::int64_t in = spatial[i];
    if (auto_pad == "VALID") {
      g.pad_begin[i] = g.pad_end[i] = 0;
    } else if (auto_pad != "NOTSET") {
      if (in < 0) {
        g.pad_begin[i] = g.pad_end[i] = -1;
        continue;
      }
      g.output[i] = ceil_div(in, g.strides[i]);
      const std::int64_t total =
          std::max<std::int64_t>(0, (g.output[i] - 1) * g.strides[i] + window - in);
      g.pad_begin[i] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      g.pad_end[i] = total - g.pad_begin[i];
      continue;
    }
    if (in < 0) continue;
    const std::int64_t span = in + g.pad_begin[i] + g.pad_end[i] - window;
    if (span < 0) {
      return invalid_argument(node.describe(), ": window of ", window, " on spatial axis ", i,
                              " is larger than the padded input (", in, " + ", g.pad_begin[i],
                              " + ", g.pad_end[i], ")");
    }
    std::int64_t out = (ceil_mode ? ceil_div(span, g.strides[i]) : span / g.strides[i]) + 1;
    // As PyTorch and current ONNX: the last window must start inside the input or left padding.
    if (ceil_mode && (out - 1) * g.strides[i] >= in + g.pad_begin[i]) --out;
    g.output[i] = out;
  }
  return g;
}

Status infer_pooling(const Node& node, std::span<const ValueInfo> inputs,
                     std::vector<InferredOutput>& outputs) {
  if (inputs.empty() || !inputs[0].present || outputs.empty()) {
    return invalid_argument(node.describe(), ": expected input X and output Y");
  }
  const ValueInfo& x = inputs[0];
  // MaxPool also takes i8/u8 (opset 12); whether a backend runs it is the backend's call.
  if (!is_floating(x.dtype) && x.dtype != DType::kI8 && x.dtype != DType::kU8) {
    return invalid_argument(node.describe(), ": X must be a floating-point or 8-bit tensor, got ",
                            dtype_name(x.dtype));
  }
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    outputs[i].dtype = i == 0 ? x.dtype : DType::kI64;
    outputs[i].rank_known = false;
  }
  if (!x.rank_known) return Status::ok();
  if (x.shape.size() < 3) {
    return invalid_argument(node.describe(), ": X must be N x C x D1 x ... (rank >= 3), got ",
                            sym_shape_to_string(x.shape));
  }
  std::vector<std::int64_t> spatial;
  for (std::size_t i = 2; i < x.shape.size(); ++i) {
    spatial.push_back(x.shape[i].is_known() ? x.shape[i].value : -1);
  }
  VOXRT_ASSIGN_OR_RETURN(PoolGeometry g, resolve_pool_geometry(node, spatial));
  SymShape shape{x.shape[0], x.shape[1]};
  for (std::size_t i = 0; i < spatial.size(); ++i) {
    const bool unchanged = !x.shape[i + 2].is_known() && g.kernel[i] == 1 && g.strides[i] == 1 &&
                           g.pad_begin[i] == 0 && g.pad_end[i] == 0;
    shape.push_back(g.output[i] >= 0 ? Dim::known(g.output[i])
                    : unchanged      ? x.shape[i + 2]
                                     : Dim{});
  }
  for (auto& out : outputs) {
    out.shape = shape;
    out.rank_known = true;
  }
  return Status::ok();
}

}  // namespace voxrt::ir
