// The Attention op's attributes and dims, read once the same way by shape inference and by every
// backend's kernels (the op's semantics are in ir/op_kind.h).
#pragma once

#include <cstdint>

#include "ir/graph.h"

namespace voxrt::ir {

enum class AttentionLayout : std::uint8_t {
  kHeadsMajor = 0,     // Q, K, V and the output are [B, heads, S, D]
  kSequenceMajor = 1,  // [B, S, heads, D]
};

struct AttentionParams {
  // Negative until known: then 1 / sqrt(Dk), from Q's last dim (attention_scale()).
  float scale = -1.0f;
  bool causal = false;
  float mask_fill = 0.0f;  // set to -inf by attention_params() unless the attribute says otherwise
  AttentionLayout layout = AttentionLayout::kHeadsMajor;
  bool scale_given() const { return scale >= 0.0f; }
};

// Validates and reads the attributes; errors name the node.
Expected<AttentionParams> attention_params(const Node& node);

// Concrete sizes of one Attention run.
struct AttentionDims {
  std::int64_t batch = 0;
  std::int64_t heads = 0;      // H (query heads)
  std::int64_t kv_heads = 0;   // Hkv (H is a multiple of it)
  std::int64_t q_len = 0;      // Sq
  std::int64_t kv_len = 0;     // Sk
  std::int64_t key_dim = 0;    // Dk
  std::int64_t value_dim = 0;  // Dv
};

// Reads and checks the sizes from Q, K and V's dims in `layout`; `where` names the node.
Expected<AttentionDims> attention_dims(const std::string& where, AttentionLayout layout,
                                       const Dims& q, const Dims& k, const Dims& v);
// The output's dims for `dims` in `layout`.
Dims attention_output_dims(const AttentionDims& dims, AttentionLayout layout);
// The scale the op applies: the attribute, or 1 / sqrt(Dk).
float attention_scale(const AttentionParams& params, const AttentionDims& dims);
// Whether an optional mask/bias of `dims` broadcasts (numpy, right-aligned) to [B, H, Sq, Sk].
bool broadcasts_to_scores(const Dims& dims, const AttentionDims& attention);

}  // namespace voxrt::ir
