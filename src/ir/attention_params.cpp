#include "ir/attention_params.h"

#include <cmath>
#include <limits>

namespace voxrt::ir {

Expected<AttentionParams> attention_params(const Node& node) {
  AttentionParams params;
  if (node.attrs.has("scale")) {
    params.scale = node.attrs.get_float("scale", 0.0f);
    if (!(params.scale >= 0.0f) || !std::isfinite(params.scale)) {
      return invalid_argument(
          node.describe(), ": attribute scale must be a finite float >= 0, found ", params.scale);
    }
  }
  const std::int64_t causal = node.attrs.get_int("causal", 0);
  if (causal != 0 && causal != 1) {
    return invalid_argument(node.describe(), ": attribute causal must be 0 or 1, found ", causal);
  }
  params.causal = causal == 1;
  params.mask_fill = node.attrs.get_float("mask_fill", -std::numeric_limits<float>::infinity());
  if (std::isnan(params.mask_fill)) {
    return invalid_argument(node.describe(), ": attribute mask_fill must not be NaN");
  }
  const std::int64_t layout = node.attrs.get_int("qkv_layout", 0);
  if (layout != 0 && layout != 1) {
    return invalid_argument(node.describe(),
                            ": attribute qkv_layout must be 0 ([B, heads, S, D]) or 1 "
                            "([B, S, heads, D]), found ",
                            layout);
  }
  params.layout = static_cast<AttentionLayout>(layout);
  return params;
}

Expected<AttentionDims> attention_dims(const std::string& where, AttentionLayout layout,
                                       const Dims& q, const Dims& k, const Dims& v) {
  if (q.size() != 4 || k.size() != 4 || v.size() != 4) {
    return invalid_argument(where, ": Q, K and V must have rank 4, found ", dims_to_string(q), ", ",
                            dims_to_string(k), " and ", dims_to_string(v));
  }
  const std::size_t heads_axis = layout == AttentionLayout::kHeadsMajor ? 1 : 2;
  const std::size_t seq_axis = layout == AttentionLayout::kHeadsMajor ? 2 : 1;
  AttentionDims dims;
  dims.batch = q[0];
  dims.heads = q[heads_axis];
  dims.q_len = q[seq_axis];
  dims.key_dim = q[3];
  dims.kv_heads = k[heads_axis];
  dims.kv_len = k[seq_axis];
  dims.value_dim = v[3];
  if (k[0] != dims.batch || v[0] != dims.batch || v[heads_axis] != dims.kv_heads ||
      v[seq_axis] != dims.kv_len || k[3] != dims.key_dim) {
    return invalid_argument(where, ": Q ", dims_to_string(q), ", K ", dims_to_string(k), " and V ",
                            dims_to_string(v),
                            " disagree (expected one batch, K and V with the same heads and "
                            "length, Q and K with the same last dim)");
  }
  if (dims.kv_heads == 0 ? dims.heads != 0 : dims.heads % dims.kv_heads != 0) {
    return invalid_argument(where, ": Q has ", dims.heads, " heads, K and V ", dims.kv_heads,
                            "; the query heads must be a multiple of the key/value heads");
  }
  return dims;
}

Dims attention_output_dims(const AttentionDims& dims, AttentionLayout layout) {
  if (layout == AttentionLayout::kHeadsMajor)
    return {dims.batch, dims.heads, dims.q_len, dims.value_dim};
  return {dims.batch, dims.q_len, dims.heads, dims.value_dim};
}

float attention_scale(const AttentionParams& params, const AttentionDims& dims) {
  if (params.scale_given()) return params.scale;
  return dims.key_dim > 0 ? 1.0f / std::sqrt(static_cast<float>(dims.key_dim)) : 1.0f;
}

bool broadcasts_to_scores(const Dims& dims, const AttentionDims& attention) {
  const std::int64_t scores[4] = {attention.batch, attention.heads, attention.q_len,
                                  attention.kv_len};
  if (dims.size() > 4) return false;
  for (std::size_t i = 0; i < dims.size(); ++i) {
    const std::int64_t target = scores[4 - dims.size() + i];
    if (dims[i] != 1 && dims[i] != target) return false;
  }
  return true;
}

}  // namespace voxrt::ir
