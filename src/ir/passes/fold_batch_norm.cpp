#include "ir/passes/fold_batch_norm.h"

#include <cmath>

namespace voxrt::ir {
namespace {

std::vector<std::string> origin_of(const Node& node) {
  return node.origin.empty() ? std::vector<std::string>{node.name} : node.origin;
}

const Tensor* constant_f32(const Value* value) {
  if (!value || !value->is_constant() || value->constant->dtype() != DType::kF32) return nullptr;
  return &*value->constant;
}

bool feeds_only(const Graph& graph, const Value* value, const Node* consumer) {
  if (graph.is_graph_output(value)) return false;
  const std::vector<Node*> users = graph.consumers(value);
  return users.size() == 1 && users[0] == consumer;
}

// scale / sqrt(var + eps) and B - mean * that, per channel.
struct Affine {
  std::vector<float> scale, shift;
};

std::optional<Affine> batch_norm_affine(const Node& bn) {
  if (bn.attrs.get_int("training_mode", 0) != 0 || bn.inputs.size() != 5) return std::nullopt;
  const Tensor* scale = constant_f32(bn.input(1));
  const Tensor* bias = constant_f32(bn.input(2));
  const Tensor* mean = constant_f32(bn.input(3));
  const Tensor* var = constant_f32(bn.input(4));
  if (!scale || !bias || !mean || !var) return std::nullopt;
  const std::int64_t channels = scale->element_count();
  if (bias->element_count() != channels || mean->element_count() != channels ||
      var->element_count() != channels) {
    return std::nullopt;
  }
  const double epsilon = bn.attrs.get_float("epsilon", 1e-5f);
  Affine affine;
  for (std::int64_t c = 0; c < channels; ++c) {
    const double s =
        scale->data<float>()[c] / std::sqrt(static_cast<double>(var->data<float>()[c]) + epsilon);
    affine.scale.push_back(static_cast<float>(s));
    affine.shift.push_back(static_cast<float>(bias->data<float>()[c] - mean->data<float>()[c] * s));
  }
  return affine;
}

// A bias of `channels` values, bias' = bias * s + shift (bias absent = 0).
Tensor folded_bias(const Tensor* bias, const Affine& affine) {
  const auto channels = static_cast<std::int64_t>(affine.scale.size());
  Tensor out = Tensor::uninitialized(DType::kF32, {channels});
  for (std::int64_t c = 0; c < channels; ++c) {
    const float b = bias ? bias->data<float>()[c] : 0.0f;
    out.data<float>()[c] =
        b * affine.scale[static_cast<std::size_t>(c)] + affine.shift[static_cast<std::size_t>(c)];
  }
  return out;
}

bool has_activation(const Node& node) {
  return (node.op == OpKind::kFusedConv || node.op == OpKind::kFusedMatMul) &&
         node.attrs.get_string("activation", "none") != "none";
}

// Rewrites `dense` so it computes the BN's output itself; false when the pattern does not fit.
bool fold_into(Graph& graph, Node& dense, Node& bn, const Affine& affine) {
  const auto channels = static_cast<std::int64_t>(affine.scale.size());
  const Tensor* w = constant_f32(dense.input(1));
  if (!w || has_activation(dense)) return false;
  const bool conv = dense.op == OpKind::kConv || dense.op == OpKind::kFusedConv;
  Tensor new_w = w->clone();
  float* wd = new_w.data<float>();
  Tensor new_c;
  if (conv) {
    const Tensor* bias = dense.input(2) ? constant_f32(dense.input(2)) : nullptr;
    if (w->rank() < 3 || w->dim(0) != channels ||
        (dense.input(2) && (!bias || bias->element_count() != channels))) {
      return false;
    }
    const std::int64_t per_channel = w->element_count() / channels;
    for (std::int64_t c = 0; c < channels; ++c) {
      for (std::int64_t i = 0; i < per_channel; ++i)
        wd[c * per_channel + i] *= affine.scale[static_cast<std::size_t>(c)];
    }
    new_c = folded_bias(bias, affine);
  } else {
    // BN normalizes axis 1, which is the last dim only for rank-2 outputs.
    const Value* y = dense.output(0);
    if (!y || !y->rank_known || y->shape.size() != 2 || w->rank() != 2) return false;
    const bool gemm = dense.op == OpKind::kGemm;
    const bool trans_b =
        gemm ? dense.attrs.get_int("transB", 0) != 0 : dense.attrs.get_int("trans_b", 0) != 0;
    const std::int64_t n = trans_b ? w->dim(0) : w->dim(1);
    if (n != channels) return false;
    const std::int64_t cols = w->dim(1);
    for (std::int64_t r = 0; r < w->dim(0); ++r) {
      for (std::int64_t col = 0; col < cols; ++col)
        wd[r * cols + col] *= affine.scale[static_cast<std::size_t>(trans_b ? r : col)];
    }
    const Value* c_value = dense.op == OpKind::kMatMul ? nullptr : dense.input(2);
    const Tensor* c = c_value ? constant_f32(c_value) : nullptr;
    if (c_value && !c) return false;
    const float beta = gemm ? dense.attrs.get_float("beta", 1.0f) : 1.0f;
    if (gemm && c && beta != 0.0f && c->rank() <= 2) {
      // C' = C * s + shift / beta, broadcast over N (rows of C kept).
      const std::int64_t rows = c->rank() == 2 ? c->dim(0) : 1;
      const std::int64_t c_cols = c->rank() == 0 ? 1 : c->dim(c->rank() - 1);
      if (c_cols != 1 && c_cols != n) return false;
      new_c = Tensor::uninitialized(DType::kF32, c->rank() == 2 ? Dims{rows, n} : Dims{n});
      for (std::int64_t r = 0; r < rows; ++r) {
        for (std::int64_t j = 0; j < n; ++j) {
          const float cv = c->data<float>()[r * c_cols + (c_cols == 1 ? 0 : j)];
          const auto jj = static_cast<std::size_t>(j);
          new_c.data<float>()[r * n + j] = cv * affine.scale[jj] + affine.shift[jj] / beta;
        }
      }
    } else if (gemm && c && beta != 0.0f) {
      return false;
    } else {
      if (c && c->element_count() != channels) return false;
      new_c = folded_bias(beta == 0.0f ? nullptr : c, affine);
      if (gemm) dense.attrs.set("beta", 1.0f);
    }
    if (dense.op == OpKind::kMatMul) dense.op = OpKind::kFusedMatMul;
  }
  Value* w_value =
      graph.add_constant(graph.unique_name(dense.input(1)->name + "_bn_folded"), std::move(new_w));
  Value* c_value =
      graph.add_constant(graph.unique_name(bn.name + "_folded_bias"), std::move(new_c));
  dense.inputs.resize(3, nullptr);
  dense.inputs[1] = w_value;
  dense.inputs[2] = c_value;
  Value* y = bn.outputs[0];
  dense.outputs[0] = y;
  y->producer = &dense;
  if (dense.origin.empty()) dense.origin.push_back(dense.name);
  for (const std::string& name : origin_of(bn)) dense.origin.push_back(name);
  return true;
}

class FoldBatchNormPass final : public Pass {
 public:
  std::string_view name() const override { return "fold_batch_norm"; }

  Status apply(Graph& graph, PassReport& report) override {
    for (Node* bn : graph.nodes()) {
      if (bn->op != OpKind::kBatchNormalization || bn->outputs.empty() || !bn->outputs[0]) continue;
      bool extra_outputs_used = false;
      for (std::size_t i = 1; i < bn->outputs.size(); ++i) {
        const Value* out = bn->outputs[i];
        if (out && (graph.is_graph_output(out) || !graph.consumers(out).empty()))
          extra_outputs_used = true;
      }
      Value* x = bn->input(0);
      Node* dense = x ? x->producer : nullptr;
      if (extra_outputs_used || !dense || op_family(dense->op) != OpFamily::kDense) continue;
      if (!feeds_only(graph, x, bn)) continue;
      const std::optional<Affine> affine = batch_norm_affine(*bn);
      if (!affine) continue;
      const std::string dense_desc = dense->describe();
      if (!fold_into(graph, *dense, *bn, *affine)) continue;
      report.changes.push_back(
          str_cat("folded BatchNormalization '", bn->name, "' into ", dense_desc));
      graph.remove_node(bn);
    }
    graph.prune_unused_values();
    return Status::ok();
  }
};

}  // namespace

std::unique_ptr<Pass> make_fold_batch_norm_pass() {
  return std::make_unique<FoldBatchNormPass>();
}

}  // namespace voxrt::ir
