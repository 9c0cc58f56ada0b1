// Private interface of the CPU attention family (the Attention op; semantics in ir/op_kind.h):
// the layout helpers every tactic shares, and one factory per tactic.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>

#include "backends/kernel.h"
#include "ir/attention_params.h"

namespace voxrt::backends::cpu::attention {

// Element strides of a [B, heads, S, D] or [B, S, heads, D] operand; D is contiguous.
struct HeadStrides {
  std::int64_t batch = 0;
  std::int64_t head = 0;
  std::int64_t row = 0;  // one sequence position

  std::int64_t offset(std::int64_t b, std::int64_t h, std::int64_t s) const {
    return b * batch + h * head + s * row;
  }
};

HeadStrides head_strides(ir::AttentionLayout layout, std::int64_t heads, std::int64_t length,
                         std::int64_t depth);

// Element strides of a mask or bias broadcast to [B, H, Sq, Sk] (0 along broadcast dims).
struct ScoreStrides {
  std::array<std::int64_t, 4> stride{};  // b, h, i, j

  std::int64_t offset(std::int64_t b, std::int64_t h, std::int64_t i, std::int64_t j) const {
    return b * stride[0] + h * stride[1] + i * stride[2] + j * stride[3];
  }
};

// `dims` must broadcast to the scores (checked by the caller with ir::broadcasts_to_scores).
ScoreStrides score_strides(const Dims& dims);

// Everything a tactic needs to know about one run, checked against the node's parameters.
struct AttentionRun {
  ir::AttentionDims dims;
  float scale = 1.0f;
  HeadStrides q, k, v, out;
  const float* q_data = nullptr;
  const float* k_data = nullptr;
  const float* v_data = nullptr;
  float* out_data = nullptr;
  // Optional; a bool mask and a float mask are exclusive.
  const bool* bool_mask = nullptr;
  const float* float_mask = nullptr;
  ScoreStrides mask;
  const float* bias = nullptr;
  ScoreStrides bias_strides;
};

// Reads the tensors of one run; errors name `where` and say what was expected.
Expected<AttentionRun> prepare_run(const std::string& where, const ir::AttentionParams& params,
                                   std::span<const Tensor* const> inputs, Tensor& output);

// Which Attention nodes the CPU kernels run (f32 Q/K/V, bool or f32 mask, f32 bias).
bool attention_supports(const ir::Node& node);

// Tactic ids of this family (stored in engine files: append only).
inline constexpr TacticId kAvx512StripsTactic = 1;

std::unique_ptr<Kernel> make_reference_attention_kernel(const ir::Node& node,
                                                        ir::AttentionParams params);
// attention_avx512.cpp: only where cpu_has_avx512f().
std::unique_ptr<Kernel> make_avx512_attention_kernel(const ir::Node& node,
                                                     ir::AttentionParams params);

}  // namespace voxrt::backends::cpu::attention
