// Constant folding (shape-data folding, evaluator folding, If inlining, the size limit), dead-node
// elimination and identity removal on small graphs. The evaluator is built from the CPU
// data-movement reference kernels (the other op families are written elsewhere).
#include <gtest/gtest.h>

#include "ir/passes/constant_folding.h"
#include "ir/passes/eliminate_dead_nodes.h"
#include "ir/passes/remove_identity.h"
#include "unit/data_movement/op_test_util.h"

namespace voxrt::testing {
namespace {

using ir::Dim;
using ir::Graph;
using ir::Node;
using ir::OpKind;
using ir::SymShape;
using ir::Value;
using I64 = std::vector<std::int64_t>;

struct CountingEvaluator {
  int calls = 0;
  ir::NodeEvaluator get() {
    return [this](const Node& node,
                  std::span<const Tensor* const> inputs) -> Expected<std::vector<Tensor>> {
      ++calls;
      if (ir::op_family(node.op) != ir::OpFamily::kDataMovement) {
        return unsupported(node.describe(), ": the test evaluator runs data-movement ops only");
      }
      std::vector<const Tensor*> args(inputs.begin(), inputs.end());
      return run_node(node, args, backends::kReferenceTactic);
    };
  }
};

Value* input(Graph& g, const std::string& name, SymShape shape, DType dtype = DType::kF32) {
  Value* v = g.add_value(name, dtype, std::move(shape));
  g.inputs.push_back(v);
  return v;
}

Value* node_output(Graph& g, OpKind op, const std::string& name, std::vector<Value*> inputs,
                   ir::Attributes attrs = {}) {
  Value* out = g.add_value(name, DType::kF32, {}, false);
  Node* n = g.add_node(op, name + "_node", std::move(inputs), {out});
  n->attrs = std::move(attrs);
  n->opset = 17;
  return out;
}

std::size_t count_ops(const Graph& g, OpKind op) {
  std::size_t count = 0;
  for (const Node* n : g.nodes()) count += n->op == op;
  return count;
}

// infer_graph for data-movement nodes; other nodes here (Identity, Dropout, Cast) pass input 0's
// shape through, as their own family's inference (written elsewhere) will.
Status infer_in_order(Graph& g) {
  VOXRT_ASSIGN_OR_RETURN(std::vector<Node*> order, g.topological_order());
  for (Node* n : order) {
    if (ir::op_family(n->op) != ir::OpFamily::kDataMovement) {
      for (Value* out : n->outputs) {
        out->shape = n->inputs[0]->shape;
        out->rank_known = true;
        out->dtype = n->op == OpKind::kCast ? static_cast<DType>(n->attrs.get_int("to", 1))
                                            : n->inputs[0]->dtype;
      }
      continue;
    }
    std::vector<ir::ValueInfo> infos;
    for (Value* in : n->inputs) {
      infos.push_back(
          {true, in->dtype, in->shape, in->rank_known, in->constant ? &*in->constant : nullptr});
    }
    std::vector<ir::InferredOutput> outs;
    VOXRT_RETURN_IF_ERROR(ir::infer_outputs(*n, infos, outs));
    for (std::size_t i = 0; i < outs.size(); ++i) {
      n->outputs[i]->dtype = outs[i].dtype;
      n->outputs[i]->shape = outs[i].shape;
      n->outputs[i]->rank_known = outs[i].rank_known;
    }
  }
  return Status::ok();
}

Status apply(ir::Pass& pass, Graph& g, ir::PassReport& report) {
  VOXRT_RETURN_IF_ERROR(pass.apply(g, report));
  return g.validate();
}

// PyTorch's x.view(x.size(0), -1): Shape -> Gather(0) -> Unsqueeze -> Concat([., -1]) -> Reshape.
Value* pytorch_flatten_chain(Graph& g, Value* x) {
  Value* shape = node_output(g, OpKind::kShape, "shape", {x});
  Value* zero = g.add_constant("zero", Tensor::scalar_i64(0));
  Value* batch = node_output(g, OpKind::kGather, "batch", {shape, zero},
                             attributes({{"axis", std::int64_t{0}}}));
  Value* axes = g.add_constant("axes", i64s({0}));
  Value* batch_1d = node_output(g, OpKind::kUnsqueeze, "batch_1d", {batch, axes});
  Value* minus_one = g.add_constant("minus_one", i64s({-1}));
  Value* target = node_output(g, OpKind::kConcat, "target", {batch_1d, minus_one},
                              attributes({{"axis", std::int64_t{0}}}));
  Value* y = node_output(g, OpKind::kReshape, "y", {x, target});
  g.outputs.push_back(y);
  return y;
}

TEST(ConstantFolding, ShapeChainFoldsWhenDimsAreKnown) {
  Graph g;
  Value* x = input(g, "x", {Dim::known(2), Dim::known(7), Dim::known(80)});
  pytorch_flatten_chain(g, x);
  ASSERT_TRUE(infer_in_order(g).is_ok());
  CountingEvaluator evaluator;
  auto pass = ir::make_constant_folding_pass(evaluator.get());
  ir::PassReport report;
  ASSERT_TRUE(apply(*pass, g, report).is_ok());
  EXPECT_EQ(evaluator.calls, 0) << "shape data alone folds this chain";
  ASSERT_EQ(g.nodes().size(), 1u);
  const Node* reshape = g.nodes()[0];
  EXPECT_EQ(reshape->op, OpKind::kReshape);
  ASSERT_TRUE(reshape->inputs[1]->is_constant());
  EXPECT_TRUE(has_values<std::int64_t>(*reshape->inputs[1]->constant, {2}, {2, -1}));
  EXPECT_EQ(g.outputs[0]->name, "y");
  EXPECT_EQ(g.outputs[0]->shape, (SymShape{Dim::known(2), Dim::known(560)}));
  EXPECT_EQ(report.changes.size(), 4u);
  // The unused constants (zero, axes, minus_one and the folded intermediates) are pruned.
  EXPECT_EQ(g.values().size(), 3u);
}

TEST(ConstantFolding, ShapeChainStaysDynamicWithSymbolicBatch) {
  Graph g;
  Value* x = input(g, "x", {Dim::symbolic("batch"), Dim::known(7), Dim::known(80)});
  pytorch_flatten_chain(g, x);
  ASSERT_TRUE(infer_in_order(g).is_ok());
  CountingEvaluator evaluator;
  auto pass = ir::make_constant_folding_pass(evaluator.get());
  ir::PassReport report;
  ASSERT_TRUE(apply(*pass, g, report).is_ok());
  EXPECT_FALSE(report.changed());
  EXPECT_EQ(g.nodes().size(), 5u);
  EXPECT_EQ(evaluator.calls, 0);
  EXPECT_TRUE(g.outputs[0]->rank_known);
  EXPECT_EQ(g.outputs[0]->shape.size(), 2u);
}

TEST(ConstantFolding, EvaluatesNodesWithConstantInputs) {
  Graph g;
  Value* x = input(g, "x", {Dim::known(3), Dim::known(2)});
  Value* w = g.add_constant("w", Tensor::from_vector<float>({2, 3}, {1, 2, 3, 4, 5, 6}));
  Value* wt = node_output(g, OpKind::kTranspose, "wt", {w});
  Value* both =
      node_output(g, OpKind::kConcat, "both", {x, wt}, attributes({{"axis", std::int64_t{0}}}));
  Value* folded_output = node_output(g, OpKind::kTranspose, "w_out", {w});
  g.outputs = {both, folded_output};
  ASSERT_TRUE(infer_in_order(g).is_ok());
  CountingEvaluator evaluator;
  auto pass = ir::make_constant_folding_pass(evaluator.get());
  ir::PassReport report;
  ASSERT_TRUE(apply(*pass, g, report).is_ok());
  EXPECT_EQ(evaluator.calls, 2);
  ASSERT_EQ(g.nodes().size(), 1u);
  EXPECT_EQ(g.nodes()[0]->op, OpKind::kConcat);
  ASSERT_TRUE(g.nodes()[0]->inputs[1]->is_constant());
  EXPECT_TRUE(has_values<float>(*g.nodes()[0]->inputs[1]->constant, {3, 2}, {1, 4, 2, 5, 3, 6}));
  // A folded graph output stays a graph output, under its name, as a constant.
  EXPECT_EQ(g.outputs[1]->name, "w_out");
  ASSERT_TRUE(g.outputs[1]->is_constant());
  EXPECT_EQ(g.outputs[1]->constant->dims(), (Dims{3, 2}));
}

TEST(ConstantFolding, LeavesLargeResultsAndUnevaluableNodes) {
  Graph g;
  Value* dims = g.add_constant("dims", i64s({1024, 1024}));
  Value* big = node_output(g, OpKind::kConstantOfShape, "big", {dims});
  // 100 elements: more than shape inference propagates (64), so only the evaluator could fold it.
  Value* c = g.add_constant("c", Tensor::from_vector<float>({100}, std::vector<float>(100, 1.0f)));
  Value* relu = node_output(g, OpKind::kRelu, "relu", {c});
  g.outputs = {big, relu};
  CountingEvaluator evaluator;
  auto pass = ir::make_constant_folding_pass(evaluator.get(), 1u << 20);
  ir::PassReport report;
  ASSERT_TRUE(apply(*pass, g, report).is_ok());
  EXPECT_FALSE(report.changed());
  EXPECT_EQ(g.nodes().size(), 2u);
  // 4 MiB exceeds the 1 MiB limit; Relu may reach the evaluator, which cannot run it.
  EXPECT_LE(evaluator.calls, 1);
}

std::shared_ptr<Graph> branch_graph(bool transpose) {
  auto b = std::make_shared<Graph>();
  Value* bx = b->add_value("bx", DType::kF32, {Dim::known(2), Dim::known(3)});
  b->inputs = {bx};
  if (!transpose) {
    b->outputs = {bx};
    return b;
  }
  Value* perm_source =
      b->add_constant("offset", Tensor::from_vector<float>({3, 2}, {0, 0, 0, 0, 0, 0}));
  Value* bt = b->add_value("bt", DType::kF32, {Dim::known(3), Dim::known(2)});
  b->add_node(OpKind::kTranspose, "t", {bx}, {bt});
  Value* joined = b->add_value("joined", DType::kF32, {Dim::known(6), Dim::known(2)});
  Node* concat = b->add_node(OpKind::kConcat, "cat", {bt, perm_source}, {joined});
  concat->attrs.set("axis", std::int64_t{0});
  b->outputs = {joined};
  return b;
}

Graph& if_graph(Graph& g, bool condition, bool output_is_graph_output) {
  Value* x = input(g, "x", {Dim::known(2), Dim::known(3)});
  Value* cond = g.add_constant("cond", Tensor::from_vector<bool>({}, {condition}));
  Value* y = g.add_value("y", DType::kF32, {}, false);
  Node* n = g.add_node(OpKind::kIf, "branch", {cond, x}, {y});
  n->attrs.set("then_branch", branch_graph(true));
  n->attrs.set("else_branch", branch_graph(false));
  if (output_is_graph_output) {
    g.outputs = {y};
  } else {
    g.outputs = {node_output(g, OpKind::kFlatten, "z", {y})};
  }
  return g;
}

TEST(ConstantFolding, InlinesTheTakenBranchOfAConstantIf) {
  Graph g;
  if_graph(g, true, true);
  CountingEvaluator evaluator;
  auto pass = ir::make_constant_folding_pass(evaluator.get());
  ir::PassReport report;
  ASSERT_TRUE(apply(*pass, g, report).is_ok());
  EXPECT_EQ(count_ops(g, OpKind::kIf), 0u);
  EXPECT_EQ(count_ops(g, OpKind::kTranspose), 1u);
  ASSERT_EQ(g.outputs.size(), 1u);
  EXPECT_EQ(g.outputs[0]->name, "y");
  ASSERT_NE(g.outputs[0]->producer, nullptr);
  EXPECT_EQ(g.outputs[0]->producer->op, OpKind::kConcat);
  EXPECT_EQ(g.outputs[0]->producer->origin, std::vector<std::string>{"cat"});
  ASSERT_FALSE(report.changes.empty());
  EXPECT_NE(report.changes[0].find("then_branch"), std::string::npos) << report.changes[0];

  // Run the inlined graph: the Transpose of x followed by the branch's constant rows.
  Tensor xt = arange_f32({2, 3});
  Node* transpose = g.outputs[0]->producer->inputs[0]->producer;
  auto t = run_node(*transpose, {&xt}, 0);
  ASSERT_TRUE(t.has_value());
  EXPECT_TRUE(has_values<float>((*t)[0], {3, 2}, {0, 3, 1, 4, 2, 5}));
}

TEST(ConstantFolding, ElseBranchPassThroughKeepsTheOutputName) {
  Graph g;
  if_graph(g, false, true);
  auto pass = ir::make_constant_folding_pass(nullptr);
  ir::PassReport report;
  ASSERT_TRUE(apply(*pass, g, report).is_ok());
  ASSERT_EQ(g.nodes().size(), 1u);
  EXPECT_EQ(g.nodes()[0]->op, OpKind::kIdentity);
  EXPECT_EQ(g.outputs[0]->name, "y");
  EXPECT_EQ(g.nodes()[0]->inputs[0], g.inputs[0]);

  Graph inner;
  if_graph(inner, false, false);
  ASSERT_TRUE(apply(*pass, inner, report).is_ok());
  ASSERT_EQ(inner.nodes().size(), 1u);
  EXPECT_EQ(inner.nodes()[0]->op, OpKind::kFlatten);
  EXPECT_EQ(inner.nodes()[0]->inputs[0], inner.inputs[0]);
}

TEST(EliminateDeadNodes, RemovesWhatReachesNoOutput) {
  Graph g;
  Value* x = input(g, "x", {Dim::known(2), Dim::known(3)});
  Value* unused = node_output(g, OpKind::kTranspose, "unused", {x});
  node_output(g, OpKind::kFlatten, "unused_too", {unused});
  Value* shape = g.add_constant("shape", i64s({3, 2}));
  g.outputs = {node_output(g, OpKind::kReshape, "y", {x, shape})};
  auto pass = ir::make_eliminate_dead_nodes_pass();
  ir::PassReport report;
  ASSERT_TRUE(apply(*pass, g, report).is_ok());
  ASSERT_EQ(g.nodes().size(), 1u);
  EXPECT_EQ(g.nodes()[0]->op, OpKind::kReshape);
  EXPECT_EQ(g.find_value("unused"), nullptr);
  EXPECT_EQ(g.find_value("unused_too"), nullptr);
  EXPECT_NE(g.find_value("shape"), nullptr);
  EXPECT_EQ(report.changes.size(), 3u);  // two nodes, one line about pruned values

  ir::PassReport again;
  ASSERT_TRUE(apply(*pass, g, again).is_ok());
  EXPECT_FALSE(again.changed());
}

TEST(RemoveIdentity, RemovesPassThroughNodesAndKeepsOutputNames) {
  Graph g;
  Value* x = input(g, "x", {Dim::symbolic("batch"), Dim::symbolic("T")});
  Value* a = node_output(g, OpKind::kIdentity, "a", {x});
  Value* b = node_output(g, OpKind::kDropout, "b", {a});
  Value* c = node_output(g, OpKind::kCast, "c", {b},
                         attributes({{"to", static_cast<std::int64_t>(DType::kF32)}}));
  Value* same_shape = g.add_constant("same_shape", i64s({0, 0}));
  Value* d = node_output(g, OpKind::kReshape, "d", {c, same_shape});
  Value* e = node_output(g, OpKind::kTranspose, "e", {d});
  Value* f = node_output(g, OpKind::kTranspose, "f", {e}, attributes({{"perm", I64{0, 1}}}));
  Value* y = node_output(g, OpKind::kIdentity, "y", {f});
  Value* half = node_output(g, OpKind::kCast, "half", {x},
                            attributes({{"to", static_cast<std::int64_t>(DType::kF16)}}));
  Value* passthrough = node_output(g, OpKind::kIdentity, "passthrough", {x});
  g.outputs = {y, half, passthrough};
  ASSERT_TRUE(infer_in_order(g).is_ok());

  auto pass = ir::make_remove_identity_pass();
  ir::PassReport report;
  ASSERT_TRUE(apply(*pass, g, report).is_ok());
  // Left: the real Transpose (named "y" now), the real Cast, and the Identity that feeds a graph
  // output straight from a graph input.
  EXPECT_EQ(g.nodes().size(), 3u);
  EXPECT_EQ(count_ops(g, OpKind::kTranspose), 1u);
  EXPECT_EQ(count_ops(g, OpKind::kCast), 1u);
  EXPECT_EQ(count_ops(g, OpKind::kIdentity), 1u);
  EXPECT_EQ(g.outputs[0]->name, "y");
  ASSERT_NE(g.outputs[0]->producer, nullptr);
  EXPECT_EQ(g.outputs[0]->producer->op, OpKind::kTranspose);
  EXPECT_EQ(g.outputs[0]->producer->inputs[0], x);
  EXPECT_EQ(g.outputs[1]->name, "half");
  EXPECT_EQ(g.outputs[2]->name, "passthrough");
  EXPECT_EQ(g.outputs[2]->producer->op, OpKind::kIdentity);
  EXPECT_EQ(report.changes.size(), 6u);
}

TEST(RemoveIdentity, KeepsNodesThatChangeSomething) {
  Graph g;
  Value* x = input(g, "x", {Dim::symbolic("batch"), Dim::known(6)});
  Value* target = g.add_constant("target", i64s({0, 2, 3}));
  Value* r = node_output(g, OpKind::kReshape, "r", {x, target});
  Value* flat = g.add_constant("flat", i64s({-1, 6}));
  // [batch, 6] -> [-1, 6] is [?, 6]: equal in fact, but not provably.
  Value* unprovable = node_output(g, OpKind::kReshape, "unprovable", {x, flat});
  Value* dropout = g.add_value("dropout", DType::kF32, {}, false);
  Value* mask = g.add_value("mask", DType::kBool, {}, false);
  g.add_node(OpKind::kDropout, "dropout_node", {unprovable}, {dropout, mask});
  g.outputs = {r, dropout, mask};
  ASSERT_TRUE(infer_in_order(g).is_ok());
  EXPECT_EQ(unprovable->shape, (SymShape{Dim{}, Dim::known(6)}));
  auto pass = ir::make_remove_identity_pass();
  ir::PassReport report;
  ASSERT_TRUE(apply(*pass, g, report).is_ok());
  EXPECT_FALSE(report.changed());
  EXPECT_EQ(g.nodes().size(), 3u);
}

}  // namespace
}  // namespace voxrt::testing
