// The dense family's tactic table: Conv / FusedConv and Gemm / MatMul / FusedMatMul, fp32 only.
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/dense/dense_common.h"
#include "backends/cpu/dense/dense_kernels.h"
#include "backends/cpu/quantized/quantized_kernels.h"

namespace voxrt::backends::cpu {

using dense::kTacticDepthwiseAvx512;
using dense::kTacticDirectConv;
using dense::kTacticFewPositionsConv;
using dense::kTacticFftConv;
using dense::kTacticFftConvLargeTiles;
using dense::kTacticIm2ColOpenBlas;
using dense::kTacticOneDnnConv;
using dense::kTacticOneDnnConvBlocked;
using dense::kTacticOneDnnMatMul;
using dense::kTacticOpenBlas;
using dense::kTacticPackedAvx512;
using dense::kTacticPointwiseAvx512;

namespace {

bool is_conv(ir::OpKind op) {
  return op == ir::OpKind::kConv || op == ir::OpKind::kFusedConv;
}

bool is_matmul(ir::OpKind op) {
  return op == ir::OpKind::kGemm || op == ir::OpKind::kMatMul || op == ir::OpKind::kFusedMatMul;
}

}  // namespace

namespace {
std::vector<TacticInfo> fp32_dense_tactics(const ir::Node& node);
}  // namespace

std::vector<TacticInfo> dense_tactics(const ir::Node& node) {
  // A layer marked int8 (quantized/): its INT8 tactics first, then the FP32 ones.
  std::vector<TacticInfo> tactics = quantized::dense_int8_tactics(node);
  const std::vector<TacticInfo> fp32 = fp32_dense_tactics(node);
  if (tactics.empty()) return fp32;
  if (!fp32.empty()) tactics.insert(tactics.end(), fp32.begin() + 1, fp32.end());
  // Its INT8 tactics must win over any FP32 one, prepacked or not.
  for (TacticInfo& tactic : tactics) tactic.prepacks_constant_weights = false;
  return tactics;
}

namespace {

std::vector<TacticInfo> fp32_dense_tactics(const ir::Node& node) {
  if (node.op == ir::OpKind::kEinsum) {
    if (node.inputs.empty() || !dense::all_inputs_f32(node)) return {};
    return {{kReferenceTactic, "reference"}};
  }
  if (!is_conv(node.op) && !is_matmul(node.op)) return {};
  if (node.inputs.size() < 2 || !node.input(0) || !node.input(1) || !dense::all_inputs_f32(node))
    return {};
  if (!dense::read_activation(node).has_value()) return {};
  std::vector<TacticInfo> tactics{{kReferenceTactic, "reference"}};
  if (is_conv(node.op)) {
    const ir::Value* w = node.input(1);
    if (w->rank_known && (w->shape.size() < 3 || w->shape.size() > 5)) return {};
    tactics.push_back({kTacticIm2ColOpenBlas, "im2col_openblas"});
    if (w->is_constant()) {
      tactics.push_back({kTacticOneDnnConv, "onednn"});
      tactics.push_back({kTacticOneDnnConvBlocked, "onednn_blocked"});
    }
    if (dense::conv_fft_applies(node, 2)) tactics.push_back({kTacticFftConv, "fft"});
    if (dense::conv_fft_applies(node, 4))
      tactics.push_back({kTacticFftConvLargeTiles, "fft_large_tiles"});
    if (dense::conv_direct_applies(node)) tactics.push_back({kTacticDirectConv, "direct_avx2"});
    if (dense::conv_few_positions_applies(node))
      tactics.push_back({kTacticFewPositionsConv, "few_positions"});
    if (dense::conv_depthwise_applies(node))
      tactics.push_back({kTacticDepthwiseAvx512, "depthwise_avx512"});
    if (dense::conv_pointwise_applies(node))
      tactics.push_back({kTacticPointwiseAvx512, "pointwise_avx512", true});
    return tactics;
  }
  tactics.push_back({kTacticOpenBlas, "openblas"});
  tactics.push_back({kTacticOneDnnMatMul, "onednn"});
  if (dense::matmul_packed_applies(node))
    tactics.push_back({kTacticPackedAvx512, "avx512_packed", true});
  return tactics;
}

}  // namespace

Expected<std::unique_ptr<Kernel>> make_dense_kernel(const ir::Node& node, TacticId tactic) {
  bool offered = false;
  for (const TacticInfo& info : dense_tactics(node)) offered = offered || info.id == tactic;
  if (!offered) {
    return unsupported(node.describe(), ": dense tactic ", tactic,
                       " cannot run this node (fp32 only; oneDNN Conv needs constant weights)");
  }
  if (quantized::marked_int8(node) && quantized::dense_int8_applies(node) &&
      quantized::is_dense_int8_tactic(tactic)) {
    return quantized::make_dense_int8_tactic(node, tactic);
  }
  if (node.op == ir::OpKind::kEinsum) return dense::make_einsum_reference_kernel(node);
  if (is_conv(node.op)) {
    switch (tactic) {
      case kReferenceTactic: return dense::make_conv_reference_kernel(node);
      case kTacticIm2ColOpenBlas: return dense::make_conv_im2col_kernel(node);
      case kTacticOneDnnConv: return dense::make_conv_onednn_kernel(node, false);
      case kTacticOneDnnConvBlocked: return dense::make_conv_onednn_kernel(node, true);
      case kTacticFftConv: return dense::make_conv_fft_kernel(node, 2);
      case kTacticFftConvLargeTiles: return dense::make_conv_fft_kernel(node, 4);
      case kTacticDirectConv: return dense::make_conv_direct_kernel(node);
      case kTacticFewPositionsConv: return dense::make_conv_few_positions_kernel(node);
      case kTacticDepthwiseAvx512: return dense::make_conv_depthwise_kernel(node);
      case kTacticPointwiseAvx512: return dense::make_conv_pointwise_kernel(node);
      default: break;
    }
  } else {
    switch (tactic) {
      case kReferenceTactic: return dense::make_matmul_reference_kernel(node);
      case kTacticOpenBlas: return dense::make_matmul_openblas_kernel(node);
      case kTacticOneDnnMatMul: return dense::make_matmul_onednn_kernel(node);
      case kTacticPackedAvx512: return dense::make_matmul_packed_kernel(node);
      default: break;
    }
  }
  return internal_error(node.describe(), ": dense tactic ", tactic,
                        " is listed but has no factory");
}

}  // namespace voxrt::backends::cpu
