// Shape inference for Attention (semantics in ir/op_kind.h). Symbolic dims pass through: the
// output takes Q's batch and heads, Q's sequence length and V's last dim.
#include "ir/attention_params.h"
#include "ir/shape_inference.h"

namespace voxrt::ir {
namespace {

// Known dims of `a` and `b` at `axis` must agree.
Status check_same(const Node& node, const char* what, const Dim& a, const Dim& b) {
  if (a.is_known() && b.is_known() && a.value != b.value) {
    return invalid_argument(node.describe(), ": ", what, " differ (", a.value, " vs ", b.value,
                            ")");
  }
  return Status::ok();
}

// A mask or bias must have rank <= 4 and broadcast to [B, H, Sq, Sk] where dims are known.
Status check_score_operand(const Node& node, const char* role, const ValueInfo& info,
                           const Dim (&scores)[4]) {
  if (!info.rank_known) return Status::ok();
  if (info.shape.size() > 4) {
    return invalid_argument(node.describe(), ": the ", role, " must have rank <= 4, found ",
                            sym_shape_to_string(info.shape));
  }
  for (std::size_t i = 0; i < info.shape.size(); ++i) {
    const Dim& d = info.shape[i];
    const Dim& target = scores[4 - info.shape.size() + i];
    if (d.is_known() && d.value != 1 && target.is_known() && d.value != target.value) {
      return invalid_argument(node.describe(), ": the ", role, " ", sym_shape_to_string(info.shape),
                              " does not broadcast to the scores [B, H, Sq, Sk] = ",
                              sym_shape_to_string({scores[0], scores[1], scores[2], scores[3]}));
    }
  }
  return Status::ok();
}

}  // namespace

Status infer_attention(const Node& node, std::span<const ValueInfo> inputs,
                       std::vector<InferredOutput>& outputs) {
  if (node.op != OpKind::kAttention) {
    return internal_error(node.describe(), ": not an attention op");
  }
  if (inputs.size() < 3 || inputs.size() > 5 || !inputs[0].present || !inputs[1].present ||
      !inputs[2].present) {
    return invalid_argument(node.describe(), ": expected inputs (Q, K, V, [mask], [bias]), found ",
                            inputs.size(), " inputs");
  }
  if (outputs.size() != 1) {
    return invalid_argument(node.describe(), ": expected 1 output, found ", outputs.size());
  }
  VOXRT_ASSIGN_OR_RETURN(const AttentionParams params, attention_params(node));
  const ValueInfo& q = inputs[0];
  const ValueInfo& k = inputs[1];
  const ValueInfo& v = inputs[2];
  if (!is_floating(q.dtype) || k.dtype != q.dtype || v.dtype != q.dtype) {
    return invalid_argument(node.describe(), ": Q, K and V must share one floating dtype, found ",
                            dtype_name(q.dtype), ", ", dtype_name(k.dtype), " and ",
                            dtype_name(v.dtype));
  }
  const ValueInfo* mask = inputs.size() > 3 && inputs[3].present ? &inputs[3] : nullptr;
  const ValueInfo* bias = inputs.size() > 4 && inputs[4].present ? &inputs[4] : nullptr;
  if (mask && mask->dtype != DType::kBool && mask->dtype != q.dtype) {
    return invalid_argument(node.describe(), ": the mask must be bool or ", dtype_name(q.dtype),
                            " (the dtype of Q), found ", dtype_name(mask->dtype));
  }
  if (bias && bias->dtype != q.dtype) {
    return invalid_argument(node.describe(), ": the bias must be ", dtype_name(q.dtype),
                            " (the dtype of Q), found ", dtype_name(bias->dtype));
  }
  outputs[0].dtype = q.dtype;
  for (const ValueInfo* info : {&q, &k, &v}) {
    if (info->rank_known && info->shape.size() != 4) {
      return invalid_argument(node.describe(), ": Q, K and V must have rank 4, found ",
                              sym_shape_to_string(info->shape));
    }
  }
  if (!q.rank_known || !k.rank_known || !v.rank_known) {
    outputs[0].rank_known = false;
    return Status::ok();
  }
  const std::size_t heads_axis = params.layout == AttentionLayout::kHeadsMajor ? 1 : 2;
  const std::size_t seq_axis = params.layout == AttentionLayout::kHeadsMajor ? 2 : 1;
  VOXRT_RETURN_IF_ERROR(check_same(node, "the batch of Q and K", q.shape[0], k.shape[0]));
  VOXRT_RETURN_IF_ERROR(check_same(node, "the batch of Q and V", q.shape[0], v.shape[0]));
  VOXRT_RETURN_IF_ERROR(
      check_same(node, "the heads of K and V", k.shape[heads_axis], v.shape[heads_axis]));
  VOXRT_RETURN_IF_ERROR(
      check_same(node, "the lengths of K and V", k.shape[seq_axis], v.shape[seq_axis]));
  VOXRT_RETURN_IF_ERROR(check_same(node, "the last dims of Q and K", q.shape[3], k.shape[3]));
  const Dim& heads = q.shape[heads_axis];
  const Dim& kv_heads = k.shape[heads_axis];
  if (heads.is_known() && kv_heads.is_known() &&
      (kv_heads.value == 0 ? heads.value != 0 : heads.value % kv_heads.value != 0)) {
    return invalid_argument(node.describe(), ": Q has ", heads.value, " heads, K and V ",
                            kv_heads.value,
                            "; the query heads must be a multiple of the key/value heads");
  }
  const Dim scores[4] = {q.shape[0], heads, q.shape[seq_axis], k.shape[seq_axis]};
  if (mask) VOXRT_RETURN_IF_ERROR(check_score_operand(node, "mask", *mask, scores));
  if (bias) VOXRT_RETURN_IF_ERROR(check_score_operand(node, "bias", *bias, scores));
  outputs[0].shape = params.layout == AttentionLayout::kHeadsMajor
                         ? SymShape{q.shape[0], heads, q.shape[seq_axis], v.shape[3]}
                         : SymShape{q.shape[0], q.shape[seq_axis], heads, v.shape[3]};
  return Status::ok();
}

}  // namespace voxrt::ir
