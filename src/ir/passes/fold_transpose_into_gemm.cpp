#include "ir/passes/fold_transpose_into_gemm.h"

#include <algorithm>
#include <cstring>

namespace voxrt::ir {
namespace {

bool swaps_last_two(const std::vector<std::int64_t>& perm) {
  const std::size_t rank = perm.size();
  if (rank < 2) return false;
  for (std::size_t i = 0; i + 2 < rank; ++i) {
    if (perm[i] != static_cast<std::int64_t>(i)) return false;
  }
  return perm[rank - 2] == static_cast<std::int64_t>(rank - 1) &&
         perm[rank - 1] == static_cast<std::int64_t>(rank - 2);
}

// `t` with its last two dims swapped, for any dtype (bytes are moved).
Tensor transpose_last_two(const Tensor& t) {
  const std::int64_t rows = t.dim(t.rank() - 2), cols = t.dim(t.rank() - 1);
  const std::int64_t batch = t.element_count() / std::max<std::int64_t>(rows * cols, 1);
  Dims dims = t.dims();
  std::swap(dims[dims.size() - 1], dims[dims.size() - 2]);
  Tensor out = Tensor::uninitialized(t.dtype(), dims);
  const std::size_t size = dtype_size_bytes(t.dtype());
  const auto* src = static_cast<const std::byte*>(t.raw_data());
  auto* dst = static_cast<std::byte*>(out.raw_data());
  for (std::int64_t b = 0; b < batch; ++b) {
    for (std::int64_t i = 0; i < rows; ++i) {
      for (std::int64_t j = 0; j < cols; ++j) {
        std::memcpy(dst + static_cast<std::size_t>((b * cols + j) * rows + i) * size,
                    src + static_cast<std::size_t>((b * rows + i) * cols + j) * size, size);
      }
    }
  }
  return out;
}

class FoldTransposeIntoGemmPass final : public Pass {
 public:
  std::string_view name() const override { return "fold_transpose_into_gemm"; }

  Status apply(Graph& graph, PassReport& report) override {
    std::vector<Node*> transposes;
    for (Node* node : graph.nodes()) {
      if (node->op == OpKind::kTranspose) transposes.push_back(node);
    }
    for (Node* transpose : transposes) {
      Value* in = transpose->input(0);
      Value* out = transpose->output(0);
      if (!in || !out || !in->rank_known) continue;
      std::vector<std::int64_t> perm = transpose->attrs.get_ints("perm");
      if (perm.empty()) {
        for (std::size_t i = in->shape.size(); i-- > 0;)
          perm.push_back(static_cast<std::int64_t>(i));
      }
      if (perm.size() != in->shape.size() || !swaps_last_two(perm)) continue;
      Value* transposed_constant = nullptr;
      for (Node* user : graph.consumers(out)) {
        if (user->op != OpKind::kMatMul && user->op != OpKind::kFusedMatMul &&
            user->op != OpKind::kGemm)
          continue;
        if (user->inputs.size() < 2 || user->inputs[0] == user->inputs[1]) continue;
        const std::size_t slot = user->inputs[0] == out ? 0 : (user->inputs[1] == out ? 1 : 2);
        if (slot == 2) continue;
        const std::string what = user->describe();
        if (in->is_constant()) {
          if (!transposed_constant) {
            transposed_constant = graph.add_constant(graph.unique_name(in->name + "_transposed"),
                                                     transpose_last_two(*in->constant));
          }
          user->inputs[slot] = transposed_constant;
          report.changes.push_back(str_cat("transposed constant '", in->name,
                                           "' at build time for ", what, " (Transpose '",
                                           transpose->name, "')"));
        } else {
          const bool gemm = user->op == OpKind::kGemm;
          if (user->op == OpKind::kMatMul) {
            user->op = OpKind::kFusedMatMul;
            user->attrs.set("activation", std::string("none"));
          }
          const std::string attr =
              gemm ? (slot == 0 ? "transA" : "transB") : (slot == 0 ? "trans_a" : "trans_b");
          user->attrs.set(attr,
                          static_cast<std::int64_t>(user->attrs.get_int(attr, 0) == 0 ? 1 : 0));
          user->inputs[slot] = in;
          report.changes.push_back(
              str_cat("folded Transpose '", transpose->name, "' into ", what, " as ", attr));
        }
        if (user->origin.empty()) user->origin.push_back(user->name);
        user->origin.push_back(transpose->name);
      }
      if (graph.consumers(out).empty() && !graph.is_graph_output(out)) graph.remove_node(transpose);
    }
    graph.prune_unused_values();
    return Status::ok();
  }
};

}  // namespace

std::unique_ptr<Pass> make_fold_transpose_into_gemm_pass() {
  return std::make_unique<FoldTransposeIntoGemmPass>();
}

}  // namespace voxrt::ir
