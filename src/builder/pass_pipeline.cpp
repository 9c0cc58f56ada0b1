#include "builder/pass_pipeline.h"

#include "backends/cpu/cpu_backend.h"
#include "core/thread_pool.h"
#include "ir/passes/pass.h"
#include "ir/shape_inference.h"

// Passes land one file each; the pipeline picks up those present in this tree.
#if __has_include("ir/passes/constant_folding.h")
#include "ir/passes/constant_folding.h"
#define VOXRT_HAVE_CONSTANT_FOLDING 1
#endif
#if __has_include("ir/passes/fold_shape_queries.h")
#include "ir/passes/fold_shape_queries.h"
#define VOXRT_HAVE_FOLD_SHAPE_QUERIES 1
#endif
#if __has_include("ir/passes/eliminate_dead_nodes.h")
#include "ir/passes/eliminate_dead_nodes.h"
#define VOXRT_HAVE_DEAD_NODES 1
#endif
#if __has_include("ir/passes/remove_identity.h")
#include "ir/passes/remove_identity.h"
#define VOXRT_HAVE_REMOVE_IDENTITY 1
#endif
#if __has_include("ir/passes/recognize_layer_norm.h")
#include "ir/passes/recognize_layer_norm.h"
#define VOXRT_HAVE_LAYER_NORM 1
#endif
#if __has_include("ir/passes/recognize_attention.h")
#include "ir/passes/recognize_attention.h"
#define VOXRT_HAVE_ATTENTION 1
#endif
#if __has_include("ir/passes/fold_batch_norm.h")
#include "ir/passes/fold_batch_norm.h"
#define VOXRT_HAVE_FOLD_BN 1
#endif
#if __has_include("ir/passes/fuse_dense_activation.h")
#include "ir/passes/fuse_dense_activation.h"
#define VOXRT_HAVE_DENSE_ACTIVATION 1
#endif
#if __has_include("ir/passes/matmul_add_to_gemm.h")
#include "ir/passes/matmul_add_to_gemm.h"
#define VOXRT_HAVE_MATMUL_ADD 1
#endif
#if __has_include("ir/passes/fold_transpose_into_gemm.h")
#include "ir/passes/fold_transpose_into_gemm.h"
#define VOXRT_HAVE_FOLD_TRANSPOSE 1
#endif
#if __has_include("ir/passes/fuse_pointwise.h")
#include "ir/passes/fuse_pointwise.h"
#define VOXRT_HAVE_FUSE_POINTWISE 1
#endif

namespace voxrt::builder {

Expected<std::vector<Tensor>> evaluate_with_reference_kernels(
    const ir::Node& node, std::span<const Tensor* const> inputs) {
  std::vector<ir::ValueInfo> infos(inputs.size());
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i]) {
      infos[i].present = false;
      continue;
    }
    infos[i].dtype = inputs[i]->dtype();
    infos[i].shape = ir::sym_shape_from_dims(inputs[i]->dims());
    infos[i].data = inputs[i];
  }
  std::vector<ir::InferredOutput> inferred;
  VOXRT_RETURN_IF_ERROR(ir::infer_outputs(node, infos, inferred));
  VOXRT_ASSIGN_OR_RETURN(auto kernel,
                         backends::cpu::create_kernel(node, backends::kReferenceTactic));
  std::vector<Tensor> outputs(inferred.size());
  std::vector<Tensor*> out_ptrs(inferred.size(), nullptr);
  for (std::size_t i = 0; i < inferred.size(); ++i) {
    if (!node.output(i)) continue;
    auto dims = ir::known_dims(inferred[i].shape);
    if (!dims)
      return internal_error(node.describe(), ": output ", i, " shape unknown while folding");
    outputs[i] = Tensor::uninitialized(inferred[i].dtype, *dims);
    out_ptrs[i] = &outputs[i];
  }
  ThreadPool pool(1);
  backends::KernelContext context{&pool};
  VOXRT_RETURN_IF_ERROR(kernel->run(inputs, out_ptrs, context));
  return outputs;
}

Status optimize_graph(ir::Graph& graph, std::vector<std::string>& changes,
                      const FusionTarget& target) {
  std::vector<std::unique_ptr<ir::Pass>> passes;
#ifdef VOXRT_HAVE_REMOVE_IDENTITY
  passes.push_back(ir::make_remove_identity_pass());
#endif
#ifdef VOXRT_HAVE_CONSTANT_FOLDING
  passes.push_back(ir::make_constant_folding_pass(evaluate_with_reference_kernels));
#endif
#ifdef VOXRT_HAVE_FOLD_SHAPE_QUERIES
  passes.push_back(ir::make_fold_shape_queries_pass());
#endif
#ifdef VOXRT_HAVE_DEAD_NODES
  passes.push_back(ir::make_eliminate_dead_nodes_pass());
#endif
#ifdef VOXRT_HAVE_LAYER_NORM
  passes.push_back(ir::make_recognize_layer_norm_pass());
#endif
#ifdef VOXRT_HAVE_ATTENTION
  // Before the passes that fold K's transpose into a GEMM or fuse the scale and mask into a
  // pointwise chain (it also reads FusedMatMul with trans_b, in case they ran first).
  if (target.attention) passes.push_back(ir::make_recognize_attention_pass());
#endif
#ifdef VOXRT_HAVE_FOLD_TRANSPOSE
  passes.push_back(ir::make_fold_transpose_into_gemm_pass());
#endif
#ifdef VOXRT_HAVE_MATMUL_ADD
  passes.push_back(ir::make_matmul_add_to_gemm_pass());
#endif
#ifdef VOXRT_HAVE_FOLD_BN
  passes.push_back(ir::make_fold_batch_norm_pass());
#endif
#ifdef VOXRT_HAVE_DENSE_ACTIVATION
  passes.push_back(ir::make_fuse_dense_activation_pass({.silu = target.silu_activation}));
#endif
#ifdef VOXRT_HAVE_FUSE_POINTWISE
  passes.push_back(ir::make_fuse_pointwise_pass());
#endif
  // To a fixed point: folding exposes fusions and fusions expose dead nodes.
  for (int round = 0; round < 8; ++round) {
    bool changed = false;
    for (auto& pass : passes) {
      ir::PassReport report;
      VOXRT_RETURN_IF_ERROR(
          pass->apply(graph, report).with_context(str_cat("pass ", pass->name())));
      VOXRT_RETURN_IF_ERROR(graph.validate().with_context(str_cat("after pass ", pass->name())));
      VOXRT_RETURN_IF_ERROR(
          ir::infer_graph(graph).with_context(str_cat("after pass ", pass->name())));
      for (auto& c : report.changes) changes.push_back(str_cat(pass->name(), ": ", c));
      changed = changed || report.changed();
    }
    if (!changed) break;
  }
  graph.prune_unused_values();
  return Status::ok();
}

}  // namespace voxrt::builder
