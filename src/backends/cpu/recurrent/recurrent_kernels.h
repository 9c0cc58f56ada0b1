// Factories of the recurrent tactics; recurrent_registry.cpp maps tactic ids to them.
#pragma once

#include <memory>
#include <optional>

#include "backends/cpu/recurrent/recurrent_packing.h"
#include "backends/cpu/recurrent/recurrent_spec.h"
#include "backends/kernel.h"

namespace voxrt::backends::cpu::recurrent {

// Tactic ids (stored in engine files: append only).
inline constexpr TacticId kReferenceTacticId = 0;
inline constexpr TacticId kBlasTacticId = 1;
inline constexpr TacticId kOnednnTacticId = 2;
inline constexpr TacticId kPackedTacticId = 3;
inline constexpr TacticId kPackedSingleThreadTacticId = 4;
inline constexpr TacticId kPackedDirectionsInTurnTacticId = 5;  // bidirectional nodes only
// The packed tactics with R stored in FP16 (FP32 arithmetic): offered, ahead of the FP32 ones,
// for a node whose layer precision is fp16 (recurrent_registry.cpp).
inline constexpr TacticId kPackedFp16TacticId = 6;
inline constexpr TacticId kPackedSingleThreadFp16TacticId = 7;
inline constexpr TacticId kPackedDirectionsInTurnFp16TacticId = 8;  // bidirectional nodes only
// The packed tactics with W and R stored in INT8 (AVX-512 VNNI products, FP32 gates and
// states): offered first for a node marked int8 (recurrent_registry.cpp).
inline constexpr TacticId kPackedInt8TacticId = 9;
inline constexpr TacticId kPackedSingleThreadInt8TacticId = 10;
inline constexpr TacticId kPackedDirectionsInTurnInt8TacticId = 11;  // bidirectional nodes only

// Naive loops straight from the ONNX formulas: the test oracle. With kFp16, on R rounded to FP16
// (the reference of a layer marked fp16); with kInt8 and the layer's input quantization, on W
// and R rounded to INT8 and every product's operands rounded as the INT8 tactics round them.
std::unique_ptr<Kernel> make_reference_kernel(
    const RecurrentSpec& spec, RecurrentWeightStorage r_storage = RecurrentWeightStorage::kFp32,
    std::optional<quantized::ActivationQuantization> int8_input = {});
// OpenBLAS sgemm for the input projection of all steps and for each step's recurrence.
Expected<std::unique_ptr<Kernel>> make_blas_kernel(const ir::Node& node, const RecurrentSpec& spec);
// oneDNN RNN primitives; only for what they can express (onednn_can_run).
bool onednn_can_run(const ir::Node& node, const RecurrentSpec& spec);
Expected<std::unique_ptr<Kernel>> make_onednn_kernel(const ir::Node& node,
                                                     const RecurrentSpec& spec);
// Hand-written AVX2/FMA kernel: gate-interleaved packed weights, the hidden dimension split
// across threads (a StepSchedule per direction), R stored as `r_storage` says. Needs a CPU with
// AVX2, FMA and F16C.
enum class PackedThreading {
  kDirectionGroups,  // the pool's threads; two directions on two thread groups at once
  kSingleThread,     // the calling thread alone
  kDirectionsInTurn  // every thread on one direction, then on the other
};
bool packed_available();
// Whether the node could run the int8 tactics (constant f32 weights, AVX-512 VNNI): the
// builder's calibration candidates.
bool int8_applies(const ir::Node& node);
Expected<std::unique_ptr<Kernel>> make_packed_kernel(const ir::Node& node,
                                                     const RecurrentSpec& spec,
                                                     PackedThreading threading,
                                                     RecurrentWeightStorage r_storage);

}  // namespace voxrt::backends::cpu::recurrent
