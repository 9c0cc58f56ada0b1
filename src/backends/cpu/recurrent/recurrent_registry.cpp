// The recurrent family (GRU, LSTM, RNN): which tactics can run a node, and their kernels.
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/quantized/int8_gemm.h"
#include "backends/cpu/quantized/quantized_kernels.h"
#include "backends/cpu/recurrent/recurrent_kernels.h"
#include "backends/layer_precision.h"

namespace voxrt::backends::cpu {
namespace {

// The kernels compute in f32 only; every floating input must be f32.
bool all_f32(const ir::Node& node) {
  for (std::size_t i = 0; i < node.inputs.size(); ++i) {
    const ir::Value* value = node.inputs[i];
    if (!value || i == 4) continue;  // sequence_lens is an integer tensor
    if (value->dtype != DType::kF32) return false;
  }
  return true;
}

// The builder marked this node fp16 (settle_cpu_layer_precisions: only when
// recurrent_fp16_available said yes).
bool marked_fp16(const ir::Node& node) {
  return layer_precision(node, Precision::kFp32) == Precision::kFp16;
}

// The FP32 tactics after the reference.
std::vector<TacticInfo> recurrent_fp32_tactics(const ir::Node& node,
                                               const recurrent::RecurrentSpec& spec) {
  std::vector<TacticInfo> tactics{{recurrent::kBlasTacticId, "blas"}};
  if (recurrent::onednn_can_run(node, spec)) {
    tactics.push_back({recurrent::kOnednnTacticId, "onednn"});
  }
  if (recurrent::packed_available()) {
    tactics.push_back({recurrent::kPackedTacticId, "packed"});
    tactics.push_back({recurrent::kPackedSingleThreadTacticId, "packed_single_thread"});
    if (spec.num_directions == 2)
      tactics.push_back({recurrent::kPackedDirectionsInTurnTacticId, "packed_directions_in_turn"});
  }
  return tactics;
}

// The builder marked this node int8 (with its calibrated input quantization) and the int8
// tactics can run it.
bool marked_int8(const ir::Node& node) {
  return quantized::marked_int8(node) && recurrent::int8_applies(node);
}

}  // namespace

namespace recurrent {

bool int8_applies(const ir::Node& node) {
  const auto constant = [&](std::size_t i) {
    return !node.input(i) || node.input(i)->is_constant();
  };
  auto spec = parse_recurrent_spec(node);
  return spec && all_f32(node) && packed_available() && quantized::vnni_available() &&
         constant(1) && constant(2) && constant(3) &&
         (spec->cell != CellKind::kLstm || constant(7));
}

}  // namespace recurrent

bool recurrent_fp16_available(const ir::Node& node) {
  return recurrent::parse_recurrent_spec(node).has_value() && all_f32(node) &&
         recurrent::packed_available();
}

std::vector<TacticInfo> recurrent_tactics(const ir::Node& node) {
  auto spec = recurrent::parse_recurrent_spec(node);
  if (!spec || !all_f32(node)) return {};
  const bool fp16 = marked_fp16(node) && recurrent::packed_available();
  if (marked_int8(node)) {
    // As fp16: INT8 allowed, not imposed; the FP32 tactics follow.
    std::vector<TacticInfo> tactics = {
        {recurrent::kReferenceTacticId, "reference_int8"},
        {recurrent::kPackedInt8TacticId, "packed_int8"},
        {recurrent::kPackedSingleThreadInt8TacticId, "packed_single_thread_int8"}};
    if (spec->num_directions == 2) {
      tactics.push_back(
          {recurrent::kPackedDirectionsInTurnInt8TacticId, "packed_directions_in_turn_int8"});
    }
    for (const TacticInfo& fp32 : recurrent_fp32_tactics(node, *spec)) tactics.push_back(fp32);
    return tactics;
  }
  // A layer marked fp16 may use FP16 weights, as TensorRT's FP16 flag allows rather than
  // demands: its FP16 kernels come first (the reference on rounded R, then the packed ones),
  // and the FP32 ones stay candidates, which timing picks where they are faster (the
  // compute-bound batched shapes). The builder then records what the layer really runs.
  std::vector<TacticInfo> tactics = {
      {recurrent::kReferenceTacticId, fp16 ? "reference_fp16" : "reference"}};
  if (fp16) {
    tactics.push_back({recurrent::kPackedFp16TacticId, "packed_fp16"});
    tactics.push_back({recurrent::kPackedSingleThreadFp16TacticId, "packed_single_thread_fp16"});
    if (spec->num_directions == 2) {
      tactics.push_back(
          {recurrent::kPackedDirectionsInTurnFp16TacticId, "packed_directions_in_turn_fp16"});
    }
  }
  for (const TacticInfo& fp32 : recurrent_fp32_tactics(node, *spec)) tactics.push_back(fp32);
  return tactics;
}

Expected<std::unique_ptr<Kernel>> make_recurrent_kernel(const ir::Node& node, TacticId tactic) {
  VOXRT_ASSIGN_OR_RETURN(recurrent::RecurrentSpec spec, recurrent::parse_recurrent_spec(node));
  if (!all_f32(node)) {
    return unsupported(node.describe(), ": recurrent kernels need f32 X, W, R, B and states");
  }
  using recurrent::PackedThreading;
  using recurrent::RecurrentWeightStorage;
  const auto packed_in_turn = [&](RecurrentWeightStorage storage) {
    if (spec.num_directions != 2) {
      return Expected<std::unique_ptr<Kernel>>(
          unsupported(node.describe(), ": packed_directions_in_turn is for bidirectional nodes"));
    }
    return recurrent::make_packed_kernel(node, spec, PackedThreading::kDirectionsInTurn, storage);
  };
  const auto packed_int8 = [&](PackedThreading threading) -> Expected<std::unique_ptr<Kernel>> {
    if (!marked_int8(node)) {
      return unsupported(node.describe(), ": the int8 tactics are for layers the builder ",
                         "calibrated and marked int8");
    }
    if (threading == PackedThreading::kDirectionsInTurn)
      return packed_in_turn(RecurrentWeightStorage::kInt8);
    return recurrent::make_packed_kernel(node, spec, threading, RecurrentWeightStorage::kInt8);
  };
  switch (tactic) {
    case recurrent::kReferenceTacticId:
      if (marked_int8(node)) {
        VOXRT_ASSIGN_OR_RETURN(quantized::ActivationQuantization input,
                               quantized::read_input_quantization(node));
        return recurrent::make_reference_kernel(spec, RecurrentWeightStorage::kInt8, input);
      }
      return recurrent::make_reference_kernel(
          spec, marked_fp16(node) ? RecurrentWeightStorage::kFp16 : RecurrentWeightStorage::kFp32);
    case recurrent::kPackedInt8TacticId: return packed_int8(PackedThreading::kDirectionGroups);
    case recurrent::kPackedSingleThreadInt8TacticId:
      return packed_int8(PackedThreading::kSingleThread);
    case recurrent::kPackedDirectionsInTurnInt8TacticId:
      return packed_int8(PackedThreading::kDirectionsInTurn);
    case recurrent::kBlasTacticId: return recurrent::make_blas_kernel(node, spec);
    case recurrent::kOnednnTacticId:
      if (!recurrent::onednn_can_run(node, spec)) {
        return unsupported(node.describe(), ": the onednn tactic needs default activations, no ",
                           "clip, no peepholes or input_forget, and constant weights");
      }
      return recurrent::make_onednn_kernel(node, spec);
    case recurrent::kPackedTacticId:
      return recurrent::make_packed_kernel(node, spec, PackedThreading::kDirectionGroups,
                                           RecurrentWeightStorage::kFp32);
    case recurrent::kPackedSingleThreadTacticId:
      return recurrent::make_packed_kernel(node, spec, PackedThreading::kSingleThread,
                                           RecurrentWeightStorage::kFp32);
    case recurrent::kPackedDirectionsInTurnTacticId:
      return packed_in_turn(RecurrentWeightStorage::kFp32);
    case recurrent::kPackedFp16TacticId:
      return recurrent::make_packed_kernel(node, spec, PackedThreading::kDirectionGroups,
                                           RecurrentWeightStorage::kFp16);
    case recurrent::kPackedSingleThreadFp16TacticId:
      return recurrent::make_packed_kernel(node, spec, PackedThreading::kSingleThread,
                                           RecurrentWeightStorage::kFp16);
    case recurrent::kPackedDirectionsInTurnFp16TacticId:
      return packed_in_turn(RecurrentWeightStorage::kFp16);
    default: break;
  }
  return unsupported(node.describe(), ": unknown recurrent tactic ", tactic);
}

}  // namespace voxrt::backends::cpu
