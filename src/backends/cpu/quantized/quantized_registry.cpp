// Which INT8 tactics a node marked int8 gets, and their factories.
#include "backends/cpu/quantized/int8_gemm_amx.h"
#include "backends/cpu/quantized/int8_gemm_runner.h"
#include "backends/cpu/quantized/int8_quantization.h"
#include "backends/cpu/quantized/quantized_kernels.h"
#include "backends/cpu/recurrent/recurrent_kernels.h"
#include "backends/layer_precision.h"

namespace voxrt::backends::cpu::quantized {

bool marked_int8(const ir::Node& node) {
  return layer_precision(node, Precision::kFp32) == Precision::kInt8 &&
         node.attrs.has(kInputScaleAttr);
}

bool int8_candidate(const ir::Node& node) {
  switch (ir::op_family(node.op)) {
    case ir::OpFamily::kDense: return dense_int8_applies(node);
    case ir::OpFamily::kRecurrent: return recurrent::int8_applies(node);
    default: return false;
  }
}

std::vector<TacticInfo> dense_int8_tactics(const ir::Node& node) {
  if (!marked_int8(node) || !dense_int8_applies(node)) return {};
  std::vector<TacticInfo> tactics{{kReferenceTactic, "reference_int8"}};
  // AMX first: without autotuning the first fast tactic is taken, and a tdpbusd does 16 times
  // the multiply-adds of a 256-bit vpdpbusd (the results are the same to the bit).
  // Split over the pool or not: whether a thread's share of a small product (a 16-row chunk's
  // 256 x 1024 projection is about 2 us of tile work) pays for handing it over depends on how
  // busy the cores are, so the autotuner times both.
  if (amx_int8_available()) {
    tactics.push_back({kDenseAmxInt8Tactic, "amx_int8"});
    tactics.push_back({kDenseAmxUnsplitInt8Tactic, "amx_unsplit_int8"});
  }
  if (vnni_available()) tactics.push_back({kDenseVnniInt8Tactic, "vnni_int8"});
  tactics.push_back({kDenseOneDnnInt8Tactic, "onednn_int8"});
  return tactics;
}

bool is_dense_int8_tactic(TacticId tactic) {
  return tactic == kReferenceTactic || tactic == kDenseVnniInt8Tactic ||
         tactic == kDenseAmxInt8Tactic || tactic == kDenseAmxUnsplitInt8Tactic ||
         tactic == kDenseOneDnnInt8Tactic;
}

Expected<std::unique_ptr<Kernel>> make_dense_int8_tactic(const ir::Node& node, TacticId tactic) {
  switch (tactic) {
    case kReferenceTactic: return make_dense_int8_kernel(node, Int8GemmKind::kReference);
    case kDenseVnniInt8Tactic: return make_dense_int8_kernel(node, Int8GemmKind::kVnni);
    case kDenseAmxInt8Tactic: return make_dense_int8_kernel(node, Int8GemmKind::kAmx);
    case kDenseAmxUnsplitInt8Tactic: return make_dense_int8_kernel(node, Int8GemmKind::kAmxUnsplit);
    case kDenseOneDnnInt8Tactic: return make_dense_int8_kernel(node, Int8GemmKind::kOneDnn);
    default: break;
  }
  return unsupported(node.describe(), ": ", tactic, " is not an int8 dense tactic");
}

}  // namespace voxrt::backends::cpu::quantized
