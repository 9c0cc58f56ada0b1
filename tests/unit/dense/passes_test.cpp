// The dense fusion passes on hand-built graphs: each rewrite happens (or, where it must not,
// doesn't) and the graph outputs stay numerically the same.
#include <cmath>

#include "graph_evaluator.h"
#include "ir/passes/fold_batch_norm.h"
#include "ir/passes/fold_transpose_into_gemm.h"
#include "ir/passes/fuse_dense_activation.h"
#include "ir/passes/matmul_add_to_gemm.h"

namespace voxrt::dense_test {
namespace {

using ir::OpKind;

struct GraphBuilder {
  ir::Graph graph;
  std::vector<Tensor> feeds;
  std::uint32_t seed = 1000;

  ir::Value* input(const Dims& dims) {
    ir::Value* v =
        graph.add_value(graph.unique_name("x"), DType::kF32, ir::sym_shape_from_dims(dims));
    graph.inputs.push_back(v);
    feeds.push_back(random_tensor(dims, seed++));
    return v;
  }
  ir::Value* weight(const Dims& dims, float lo = -1.0f, float hi = 1.0f) {
    return graph.add_constant(graph.unique_name("w"), random_tensor(dims, seed++, lo, hi));
  }
  ir::Value* scalar(float value) {
    return graph.add_constant(graph.unique_name("c"), Tensor::scalar_f32(value));
  }
  // Adds a node and gives its output a shape: dense ops through their own shape inference, the
  // rest computed here so the tests do not depend on the other families' shape inference.
  ir::Value* op(OpKind kind, std::vector<ir::Value*> inputs, ir::Attributes attrs = {}) {
    ir::Value* out = graph.add_value(graph.unique_name("v"), DType::kF32, {}, true);
    ir::Node* node = graph.add_node(kind, graph.unique_name(std::string(ir::op_name(kind))),
                                    std::move(inputs), {out});
    node->attrs = std::move(attrs);
    auto dims_of = [](const ir::Value* v) { return *ir::known_dims(v->shape); };
    if (ir::op_family(kind) == ir::OpFamily::kDense) {
      std::vector<ir::ValueInfo> infos;
      for (const ir::Value* in : node->inputs) {
        ir::ValueInfo info;
        info.shape = in->shape;
        info.data = in->is_constant() ? &*in->constant : nullptr;
        infos.push_back(info);
      }
      std::vector<ir::InferredOutput> outs;
      Status status = ir::infer_outputs(*node, infos, outs);
      EXPECT_TRUE(status.is_ok()) << status.to_string();
      if (status.is_ok()) out->shape = outs[0].shape;
    } else if (kind == OpKind::kAdd || kind == OpKind::kMul || kind == OpKind::kDiv ||
               kind == OpKind::kMax || kind == OpKind::kMin) {
      out->shape = ir::sym_shape_from_dims(
          broadcast_dims(dims_of(node->inputs[0]), dims_of(node->inputs[1])));
    } else if (kind == OpKind::kTranspose) {
      std::vector<std::int64_t> perm = node->attrs.get_ints("perm");
      const Dims in = dims_of(node->inputs[0]);
      if (perm.empty()) {
        for (std::size_t i = in.size(); i-- > 0;) perm.push_back(static_cast<std::int64_t>(i));
      }
      Dims dims;
      for (std::int64_t p : perm) dims.push_back(in[static_cast<std::size_t>(p)]);
      out->shape = ir::sym_shape_from_dims(dims);
    } else {
      out->shape = node->inputs[0]->shape;  // activations, Erf, BatchNormalization
    }
    return out;
  }
  ir::Value* batch_norm(ir::Value* x, std::int64_t channels) {
    return op(OpKind::kBatchNormalization,
              {x, weight({channels}), weight({channels}), weight({channels}),
               weight({channels}, 0.2f, 2.0f)},
              attrs_of({{"epsilon", 1e-3f}}));
  }
};

std::size_t count_ops(const ir::Graph& graph, OpKind kind) {
  std::size_t n = 0;
  for (const ir::Node* node : graph.nodes()) n += node->op == kind ? 1 : 0;
  return n;
}

// Runs `pass` and checks the outputs before and after; returns the report.
ir::PassReport apply_and_compare(GraphBuilder& b, ir::Pass& pass, double atol = 1e-4) {
  Expected<std::vector<Tensor>> before = evaluate_graph(b.graph, b.feeds);
  EXPECT_TRUE(before.has_value()) << before.status().to_string();
  ir::PassReport report;
  Status status = pass.apply(b.graph, report);
  EXPECT_TRUE(status.is_ok()) << status.to_string();
  EXPECT_TRUE(b.graph.validate().is_ok());
  Expected<std::vector<Tensor>> after = evaluate_graph(b.graph, b.feeds);
  EXPECT_TRUE(after.has_value()) << after.status().to_string();
  if (before.has_value() && after.has_value()) {
    for (std::size_t i = 0; i < before->size(); ++i)
      EXPECT_TRUE(all_close((*before)[i], (*after)[i], atol, 1e-4));
  }
  return report;
}

const ir::Node* only_node(const ir::Graph& graph) {
  const auto nodes = graph.nodes();
  EXPECT_EQ(nodes.size(), 1u);
  return nodes.empty() ? nullptr : nodes[0];
}

TEST(FoldBatchNorm, IntoConvWithAndWithoutBias) {
  for (bool with_bias : {true, false}) {
    GraphBuilder b;
    std::vector<ir::Value*> conv_in{b.input({2, 3, 9, 8}), b.weight({5, 3, 3, 3})};
    if (with_bias) conv_in.push_back(b.weight({5}));
    ir::Value* y =
        b.batch_norm(b.op(OpKind::kConv, conv_in, attrs_of({{"pads", Ints{1, 1, 1, 1}}})), 5);
    b.graph.outputs.push_back(y);
    auto pass = ir::make_fold_batch_norm_pass();
    ir::PassReport report = apply_and_compare(b, *pass);
    EXPECT_EQ(report.changes.size(), 1u);
    const ir::Node* node = only_node(b.graph);
    ASSERT_TRUE(node);
    EXPECT_EQ(node->op, OpKind::kConv);
    EXPECT_EQ(node->outputs[0], y);  // the graph output keeps its value and name
    EXPECT_EQ(node->origin.size(), 2u);
  }
}

TEST(FoldBatchNorm, IntoMatMulGemmAndFusedMatMul) {
  {
    GraphBuilder b;
    b.graph.outputs.push_back(
        b.batch_norm(b.op(OpKind::kMatMul, {b.input({6, 10}), b.weight({10, 7})}), 7));
    auto pass = ir::make_fold_batch_norm_pass();
    EXPECT_EQ(apply_and_compare(b, *pass).changes.size(), 1u);
    ASSERT_TRUE(only_node(b.graph));
    EXPECT_EQ(only_node(b.graph)->op, OpKind::kFusedMatMul);
  }
  for (int variant = 0; variant < 3; ++variant) {
    GraphBuilder b;
    std::vector<ir::Value*> in{b.input({6, 10}), b.weight({7, 10})};
    if (variant == 1) in.push_back(b.weight({6, 1}));
    if (variant == 2) in.push_back(b.weight({7}));
    ir::Value* g = b.op(OpKind::kGemm, in,
                        attrs_of({{"transB", std::int64_t{1}}, {"alpha", 0.5f}, {"beta", 1.5f}}));
    b.graph.outputs.push_back(b.batch_norm(g, 7));
    auto pass = ir::make_fold_batch_norm_pass();
    EXPECT_EQ(apply_and_compare(b, *pass).changes.size(), 1u) << variant;
    EXPECT_EQ(b.graph.nodes().size(), 1u);
  }
  {
    GraphBuilder b;
    ir::Value* mm = b.op(OpKind::kFusedMatMul, {b.input({6, 10}), b.weight({7, 10}), b.weight({7})},
                         attrs_of({{"trans_b", std::int64_t{1}}}));
    b.graph.outputs.push_back(b.batch_norm(mm, 7));
    auto pass = ir::make_fold_batch_norm_pass();
    EXPECT_EQ(apply_and_compare(b, *pass).changes.size(), 1u);
  }
}

TEST(FoldBatchNorm, LeavesUnfoldableBatchNormAlone) {
  GraphBuilder b;
  ir::Value* conv = b.op(OpKind::kConv, {b.input({1, 3, 6, 6}), b.weight({4, 3, 3, 3})});
  b.graph.outputs.push_back(b.batch_norm(conv, 4));
  b.graph.outputs.push_back(b.op(OpKind::kRelu, {conv}));  // the conv output has a second reader
  ir::Value* fused = b.op(OpKind::kFusedConv, {b.input({1, 3, 6, 6}), b.weight({4, 3, 3, 3})},
                          attrs_of({{"activation", std::string("relu")}}));
  b.graph.outputs.push_back(b.batch_norm(fused, 4));  // BN after an activation cannot fold
  auto pass = ir::make_fold_batch_norm_pass();
  EXPECT_TRUE(apply_and_compare(b, *pass).changes.empty());
  EXPECT_EQ(count_ops(b.graph, OpKind::kBatchNormalization), 2u);
}

TEST(FuseDenseActivation, ConvBiasAddAndActivations) {
  struct Case {
    OpKind op;
    std::vector<float> bounds;
  };
  for (const Case& c :
       {Case{OpKind::kRelu, {}}, Case{OpKind::kClip, {0.0f, 20.0f}}, Case{OpKind::kLeakyRelu, {}},
        Case{OpKind::kSigmoid, {}}, Case{OpKind::kTanh, {}}}) {
    GraphBuilder b;
    ir::Value* conv = b.op(OpKind::kConv, {b.input({2, 4, 7, 6}), b.weight({6, 4, 3, 3})},
                           attrs_of({{"pads", Ints{1, 1, 1, 1}}}));
    ir::Value* biased =
        b.op(OpKind::kAdd, {b.graph.add_constant("bias", random_tensor({1, 6, 1, 1}, 3)), conv});
    std::vector<ir::Value*> act_in{biased};
    for (float bound : c.bounds) act_in.push_back(b.scalar(bound * 0.1f));
    b.graph.outputs.push_back(b.op(c.op, act_in, attrs_of({{"alpha", 0.3f}})));
    auto pass = ir::make_fuse_dense_activation_pass();
    EXPECT_EQ(apply_and_compare(b, *pass).changes.size(), 1u) << ir::op_name(c.op);
    const ir::Node* node = only_node(b.graph);
    ASSERT_TRUE(node);
    EXPECT_EQ(node->op, OpKind::kFusedConv);
    EXPECT_EQ(node->origin.size(), 3u);
    EXPECT_TRUE(node->input(2) && node->input(2)->is_constant());
  }
}

TEST(FuseDenseActivation, Conv1dAndMatMulAndGemm) {
  {
    GraphBuilder b;
    ir::Value* conv =
        b.op(OpKind::kConv, {b.input({2, 5, 20}), b.weight({7, 5, 3}), b.weight({7})});
    b.graph.outputs.push_back(b.op(OpKind::kLeakyRelu, {conv}, attrs_of({{"alpha", 0.2f}})));
    auto pass = ir::make_fuse_dense_activation_pass();
    EXPECT_EQ(apply_and_compare(b, *pass).changes.size(), 1u);
  }
  {
    GraphBuilder b;
    ir::Value* mm = b.op(OpKind::kMatMul, {b.input({2, 5, 8}), b.input({8, 3})});
    b.graph.outputs.push_back(b.op(OpKind::kSigmoid, {mm}));
    auto pass = ir::make_fuse_dense_activation_pass();
    EXPECT_EQ(apply_and_compare(b, *pass).changes.size(), 1u);
    ASSERT_TRUE(only_node(b.graph));
    EXPECT_EQ(only_node(b.graph)->op, OpKind::kFusedMatMul);
  }
  {
    GraphBuilder b;
    ir::Value* g = b.op(OpKind::kGemm, {b.input({5, 8}), b.weight({9, 8}), b.weight({9})},
                        attrs_of({{"transB", std::int64_t{1}}, {"alpha", 0.5f}, {"beta", 2.0f}}));
    b.graph.outputs.push_back(b.op(OpKind::kTanh, {g}));
    auto pass = ir::make_fuse_dense_activation_pass();
    EXPECT_EQ(apply_and_compare(b, *pass).changes.size(), 1u);
    ASSERT_TRUE(only_node(b.graph));
    EXPECT_EQ(only_node(b.graph)->op, OpKind::kFusedMatMul);
  }
}

TEST(FuseDenseActivation, GeluErfInEveryOrder) {
  for (int order = 0; order < 4; ++order) {
    GraphBuilder b;
    ir::Value* x = b.op(OpKind::kMatMul, {b.input({4, 6}), b.weight({6, 5})});
    ir::Value* scaled = order == 3 ? b.op(OpKind::kMul, {b.scalar(0.70710678f), x})
                                   : b.op(OpKind::kDiv, {x, b.scalar(1.4142135f)});
    ir::Value* one_plus = b.op(OpKind::kAdd, {b.op(OpKind::kErf, {scaled}), b.scalar(1.0f)});
    ir::Value* y = nullptr;
    if (order == 0 || order == 3)
      y = b.op(OpKind::kMul, {b.op(OpKind::kMul, {x, one_plus}), b.scalar(0.5f)});
    if (order == 1) y = b.op(OpKind::kMul, {x, b.op(OpKind::kMul, {one_plus, b.scalar(0.5f)})});
    if (order == 2) y = b.op(OpKind::kMul, {b.op(OpKind::kMul, {x, b.scalar(0.5f)}), one_plus});
    b.graph.outputs.push_back(y);
    auto pass = ir::make_fuse_dense_activation_pass();
    EXPECT_EQ(apply_and_compare(b, *pass).changes.size(), 1u) << "order " << order;
    const ir::Node* node = only_node(b.graph);
    ASSERT_TRUE(node) << "order " << order;
    EXPECT_EQ(node->attrs.get_string("activation", ""), "gelu_erf");
    EXPECT_EQ(node->origin.size(), 6u);
  }
}

// openWakeWord's pattern: Conv, LeakyRelu, Max(x, -0.4). The Max, a Min with the constant
// first and a Clip become one clamp after the activation, their bounds intersected.
TEST(FuseDenseActivation, ClampsAfterAnActivation) {
  GraphBuilder b;
  ir::Value* conv = b.op(OpKind::kConv, {b.input({1, 3, 9, 8}), b.weight({4, 3, 3, 3})},
                         attrs_of({{"pads", Ints{1, 1, 1, 1}}}));
  ir::Value* act = b.op(OpKind::kLeakyRelu, {conv}, attrs_of({{"alpha", 0.2f}}));
  ir::Value* floor = b.op(OpKind::kMax, {act, b.scalar(-0.05f)});
  ir::Value* ceiling = b.op(OpKind::kMin, {b.scalar(0.6f), floor});
  b.graph.outputs.push_back(b.op(OpKind::kClip, {ceiling, b.scalar(-0.1f), b.scalar(0.9f)}));
  auto pass = ir::make_fuse_dense_activation_pass();
  EXPECT_EQ(apply_and_compare(b, *pass, 1e-6).changes.size(), 4u);
  const ir::Node* node = only_node(b.graph);
  ASSERT_TRUE(node);
  EXPECT_EQ(node->op, OpKind::kFusedConv);
  EXPECT_EQ(node->attrs.get_string("activation", ""), "leaky_relu");
  EXPECT_FLOAT_EQ(node->attrs.get_float("activation_clamp_min", 0.0f), -0.05f);
  EXPECT_FLOAT_EQ(node->attrs.get_float("activation_clamp_max", 0.0f), 0.6f);
  EXPECT_EQ(node->origin.size(), 5u);
}

TEST(FuseDenseActivation, MaxOrMinWithAScalarIsAClip) {
  for (OpKind op : {OpKind::kMax, OpKind::kMin}) {
    GraphBuilder b;
    ir::Value* mm = b.op(OpKind::kMatMul, {b.input({3, 6}), b.weight({6, 5})});
    b.graph.outputs.push_back(b.op(op, {mm, b.scalar(0.1f)}));
    auto pass = ir::make_fuse_dense_activation_pass();
    EXPECT_EQ(apply_and_compare(b, *pass, 1e-6).changes.size(), 1u) << ir::op_name(op);
    const ir::Node* node = only_node(b.graph);
    ASSERT_TRUE(node);
    EXPECT_EQ(node->attrs.get_string("activation", ""), "clip");
    EXPECT_FALSE(node->attrs.has("activation_clamp_min"));
  }
}

// Clamps whose intervals do not meet compose to a constant, not a clamp: the second stays.
// A Max with a non-scalar constant is not a clip either.
TEST(FuseDenseActivation, LeavesClampsThatAreNotOne) {
  GraphBuilder b;
  ir::Value* mm = b.op(OpKind::kMatMul, {b.input({3, 6}), b.weight({6, 5})});
  ir::Value* act = b.op(OpKind::kRelu, {mm});
  ir::Value* low = b.op(OpKind::kMin, {act, b.scalar(0.2f)});
  b.graph.outputs.push_back(b.op(OpKind::kMax, {low, b.scalar(0.5f)}));
  ir::Value* mm2 = b.op(OpKind::kMatMul, {b.input({3, 6}), b.weight({6, 5})});
  ir::Value* act2 = b.op(OpKind::kTanh, {mm2});
  b.graph.outputs.push_back(b.op(OpKind::kMax, {act2, b.weight({5})}));
  auto pass = ir::make_fuse_dense_activation_pass();
  EXPECT_EQ(apply_and_compare(b, *pass, 1e-6).changes.size(), 3u);
  EXPECT_EQ(count_ops(b.graph, OpKind::kMax), 2u);
  EXPECT_EQ(count_ops(b.graph, OpKind::kFusedMatMul), 2u);
}

TEST(FuseDenseActivation, KeepsIntermediatesThatAreRead) {
  GraphBuilder b;
  ir::Value* conv = b.op(OpKind::kConv, {b.input({1, 2, 5, 5}), b.weight({3, 2, 3, 3})});
  b.graph.outputs.push_back(conv);  // the pre-activation value is a graph output
  b.graph.outputs.push_back(b.op(OpKind::kRelu, {conv}));
  ir::Value* mm = b.op(OpKind::kMatMul, {b.input({3, 4}), b.weight({4, 4})});
  b.graph.outputs.push_back(b.op(OpKind::kRelu, {mm}));
  b.graph.outputs.push_back(b.op(OpKind::kTanh, {mm}));  // two readers
  auto pass = ir::make_fuse_dense_activation_pass();
  EXPECT_TRUE(apply_and_compare(b, *pass).changes.empty());
  EXPECT_EQ(b.graph.nodes().size(), 5u);
}

TEST(MatMulAddToGemm, BiasShapesAndOrder) {
  for (int variant = 0; variant < 3; ++variant) {
    GraphBuilder b;
    ir::Value* mm = b.op(OpKind::kMatMul, {b.input({2, 3, 8}), b.weight({8, 5})});
    ir::Value* bias =
        variant == 0 ? b.weight({5}) : (variant == 1 ? b.weight({1, 1, 5}) : b.weight({3, 5}));
    b.graph.outputs.push_back(variant == 1 ? b.op(OpKind::kAdd, {bias, mm})
                                           : b.op(OpKind::kAdd, {mm, bias}));
    auto pass = ir::make_matmul_add_to_gemm_pass();
    ir::PassReport report = apply_and_compare(b, *pass);
    if (variant == 2) {
      EXPECT_TRUE(report.changes.empty());  // a [M, N] addend is not a bias
      continue;
    }
    EXPECT_EQ(report.changes.size(), 1u);
    const ir::Node* node = only_node(b.graph);
    ASSERT_TRUE(node);
    EXPECT_EQ(node->op, OpKind::kFusedMatMul);
    EXPECT_EQ(node->input(2)->shape.size(), 1u);
  }
}

TEST(FoldTransposeIntoGemm, FlagsAndConstantTranspose) {
  {
    GraphBuilder b;
    ir::Value* at =
        b.op(OpKind::kTranspose, {b.input({2, 7, 4})}, attrs_of({{"perm", Ints{0, 2, 1}}}));
    ir::Value* bt =
        b.op(OpKind::kTranspose, {b.input({2, 5, 7})}, attrs_of({{"perm", Ints{0, 2, 1}}}));
    b.graph.outputs.push_back(b.op(OpKind::kMatMul, {at, bt}));
    auto pass = ir::make_fold_transpose_into_gemm_pass();
    EXPECT_EQ(apply_and_compare(b, *pass).changes.size(), 2u);
    const ir::Node* node = only_node(b.graph);
    ASSERT_TRUE(node);
    EXPECT_EQ(node->op, OpKind::kFusedMatMul);
    EXPECT_EQ(node->attrs.get_int("trans_a", 0), 1);
    EXPECT_EQ(node->attrs.get_int("trans_b", 0), 1);
  }
  {
    GraphBuilder b;
    ir::Value* wt = b.op(OpKind::kTranspose, {b.weight({6, 9})});
    b.graph.outputs.push_back(b.op(OpKind::kMatMul, {b.input({3, 9}), wt}));
    auto pass = ir::make_fold_transpose_into_gemm_pass();
    EXPECT_EQ(apply_and_compare(b, *pass).changes.size(), 1u);
    const ir::Node* node = only_node(b.graph);
    ASSERT_TRUE(node);
    EXPECT_EQ(node->op, OpKind::kMatMul);
    EXPECT_TRUE(node->input(1)->is_constant());
  }
  {
    GraphBuilder b;
    ir::Value* at = b.op(OpKind::kTranspose, {b.input({5, 8})}, attrs_of({{"perm", Ints{1, 0}}}));
    b.graph.outputs.push_back(
        b.op(OpKind::kGemm, {at, b.input({6, 8})},
             attrs_of({{"transA", std::int64_t{1}}, {"transB", std::int64_t{1}}})));
    auto pass = ir::make_fold_transpose_into_gemm_pass();
    EXPECT_EQ(apply_and_compare(b, *pass).changes.size(), 1u);
    ASSERT_TRUE(only_node(b.graph));
    EXPECT_EQ(only_node(b.graph)->attrs.get_int("transA", 1), 0);
  }
  {
    GraphBuilder b;  // a permutation other than the last-two swap stays
    ir::Value* at =
        b.op(OpKind::kTranspose, {b.input({3, 4, 5})}, attrs_of({{"perm", Ints{1, 0, 2}}}));
    b.graph.outputs.push_back(b.op(OpKind::kMatMul, {at, b.input({5, 2})}));
    auto pass = ir::make_fold_transpose_into_gemm_pass();
    EXPECT_TRUE(apply_and_compare(b, *pass).changes.empty());
  }
}

}  // namespace
}  // namespace voxrt::dense_test
