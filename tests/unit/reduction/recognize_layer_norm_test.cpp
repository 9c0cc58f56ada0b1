// The recognize_layer_norm pass on hand-built decomposed LayerNorm graphs, checking the rewrite
// and that the graph computes the same numbers before and after it. Reduction nodes run on this
// family's reference kernels; the few elementwise ops of the pattern run on a tiny evaluator
// here, so the test does not depend on the elementwise kernels.
#include <map>

#include "ir/passes/recognize_layer_norm.h"
#include "test_support.h"

namespace voxrt::testing {
namespace {

using ir::Graph;
using ir::Node;
using ir::OpKind;
using ir::Value;

Tensor broadcast_binary(const Tensor& a, const Tensor& b, OpKind op) {
  const std::size_t rank = std::max(a.rank(), b.rank());
  auto padded = [rank](const Dims& d) {
    Dims p(rank - d.size(), 1);
    p.insert(p.end(), d.begin(), d.end());
    return p;
  };
  const Dims da = padded(a.dims()), db = padded(b.dims());
  Dims out_dims(rank);
  for (std::size_t i = 0; i < rank; ++i) out_dims[i] = std::max(da[i], db[i]);
  const Dims sa = row_major_strides(da), sb = row_major_strides(db);
  Tensor out = Tensor::uninitialized(DType::kF32, out_dims);
  std::vector<std::int64_t> index(rank, 0);
  for (std::int64_t flat = 0; flat < out.element_count(); ++flat) {
    std::int64_t ia = 0, ib = 0;
    for (std::size_t d = 0; d < rank; ++d) {
      if (da[d] != 1) ia += index[d] * sa[d];
      if (db[d] != 1) ib += index[d] * sb[d];
    }
    const double x = a.element_as_double(ia), y = b.element_as_double(ib);
    double r = 0;
    switch (op) {
      case OpKind::kAdd: r = x + y; break;
      case OpKind::kSub: r = x - y; break;
      case OpKind::kMul: r = x * y; break;
      case OpKind::kDiv: r = x / y; break;
      case OpKind::kPow: r = std::pow(x, y); break;
      default: ADD_FAILURE() << "evaluator has no " << ir::op_name(op);
    }
    out.data<float>()[flat] = static_cast<float>(r);
    for (std::size_t d = rank; d-- > 0;) {
      if (++index[d] < out_dims[d]) break;
      index[d] = 0;
    }
  }
  return out;
}

// Runs the graph on `input` (its only graph input) and returns its only output.
Expected<Tensor> evaluate(const Graph& graph, const Tensor& input) {
  std::map<const Value*, Tensor> values;
  values[graph.inputs.at(0)] = input;
  VOXRT_ASSIGN_OR_RETURN(std::vector<Node*> order, graph.topological_order());
  for (const Node* node : order) {
    std::vector<const Tensor*> inputs;
    for (const Value* in : node->inputs) {
      if (!in) {
        inputs.push_back(nullptr);
      } else if (in->is_constant()) {
        inputs.push_back(&*in->constant);
      } else {
        inputs.push_back(&values.at(in));
      }
    }
    if (ir::op_family(node->op) == ir::OpFamily::kReduction) {
      VOXRT_ASSIGN_OR_RETURN(std::vector<Tensor> outs, run_node(*node, inputs, kReference));
      values[node->outputs[0]] = outs[0];
    } else if (node->op == OpKind::kSqrt) {
      Tensor out = inputs[0]->clone();
      for (float& v : out.span<float>()) v = std::sqrt(v);
      values[node->outputs[0]] = out;
    } else {
      values[node->outputs[0]] = broadcast_binary(*inputs[0], *inputs[1], node->op);
    }
  }
  return values.at(graph.outputs.at(0));
}

struct Options {
  bool use_pow = true;
  bool affine = true;
  std::vector<std::int64_t> axes{-1};
  Dims gamma_dims{8};
  bool epsilon_first = false;       // Add(eps, v) instead of Add(v, eps)
  bool centered_extra_use = false;  // the Sub output also feeds a graph output
};

// x [2, 5, 8] -> the decomposed LayerNorm PyTorch exports at opset 11..16.
void build(Graph& g, const Options& opt, std::mt19937& rng) {
  Value* x = g.add_value("x", DType::kF32, ir::sym_shape_from_dims({2, 5, 8}));
  g.inputs = {x};
  Value* axes = g.add_constant("axes", i64_vector(opt.axes));
  auto value = [&](const std::string& name) { return g.add_value(name, DType::kF32, {}, false); };
  Value* mean = value("mean");
  g.add_node(OpKind::kReduceMean, "ReduceMean_0", {x, axes}, {mean});
  Value* centered = value("centered");
  g.add_node(OpKind::kSub, "Sub_1", {x, mean}, {centered});
  Value* squared = value("squared");
  if (opt.use_pow) {
    g.add_node(OpKind::kPow, "Pow_2", {centered, g.add_constant("two", Tensor::scalar_f32(2.0f))},
               {squared});
  } else {
    g.add_node(OpKind::kMul, "Mul_2", {centered, centered}, {squared});
  }
  Value* variance = value("variance");
  g.add_node(OpKind::kReduceMean, "ReduceMean_3", {squared, axes}, {variance});
  Value* eps = g.add_constant("eps", Tensor::scalar_f32(1e-5f));
  Value* shifted = value("shifted");
  g.add_node(
      OpKind::kAdd, "Add_4",
      opt.epsilon_first ? std::vector<Value*>{eps, variance} : std::vector<Value*>{variance, eps},
      {shifted});
  Value* std_dev = value("std_dev");
  g.add_node(OpKind::kSqrt, "Sqrt_5", {shifted}, {std_dev});
  Value* normalized = value("normalized");
  g.add_node(OpKind::kDiv, "Div_6", {centered, std_dev}, {normalized});
  Value* result = normalized;
  if (opt.affine) {
    Value* gamma = g.add_constant("gamma", random_f32(opt.gamma_dims, rng, 0.5f, 2.0f));
    Value* beta = g.add_constant("beta", random_f32({8}, rng));
    Value* scaled = value("scaled");
    g.add_node(OpKind::kMul, "Mul_7", {gamma, normalized}, {scaled});
    result = value("y");
    g.add_node(OpKind::kAdd, "Add_8", {scaled, beta}, {result});
  }
  g.outputs = {result};
  if (opt.centered_extra_use) {
    Value* extra = value("extra");
    g.add_node(OpKind::kMul, "Mul_extra",
               {centered, g.add_constant("three", Tensor::scalar_f32(3.0f))}, {extra});
    g.outputs.push_back(extra);
  }
}

struct Outcome {
  ir::PassReport report;
  Tensor before, after;
};

Outcome run_pass(Graph& g, std::mt19937& rng) {
  Outcome outcome;
  const Tensor x = random_f32({2, 5, 8}, rng, -2.0f, 5.0f);
  auto before = evaluate(g, x);
  EXPECT_TRUE(before.has_value()) << before.status().to_string();
  const Status applied = ir::make_recognize_layer_norm_pass()->apply(g, outcome.report);
  EXPECT_TRUE(applied.is_ok()) << applied.to_string();
  EXPECT_TRUE(g.validate().is_ok());
  auto after = evaluate(g, x);
  EXPECT_TRUE(after.has_value()) << after.status().to_string();
  if (before && after) {
    outcome.before = *before;
    outcome.after = *after;
  }
  return outcome;
}

std::vector<OpKind> ops_of(const Graph& g) {
  std::vector<OpKind> ops;
  for (const Node* n : g.nodes()) ops.push_back(n->op);
  return ops;
}

TEST(RecognizeLayerNorm, RewritesThePowFormWithScaleAndBias) {
  std::mt19937 rng(1);
  Graph g;
  build(g, {}, rng);
  Value* output = g.outputs[0];
  Outcome outcome = run_pass(g, rng);
  ASSERT_EQ(ops_of(g), (std::vector<OpKind>{OpKind::kLayerNormalization}));
  const Node* ln = g.nodes()[0];
  EXPECT_EQ(ln->outputs[0], output);
  EXPECT_EQ(ln->inputs[0], g.inputs[0]);
  EXPECT_EQ(ln->inputs.size(), 3u);
  EXPECT_EQ(ln->inputs[1]->name, "gamma");
  EXPECT_EQ(ln->inputs[2]->name, "beta");
  EXPECT_EQ(ln->attrs.get_int("axis", 0), -1);
  EXPECT_FLOAT_EQ(ln->attrs.get_float("epsilon", 0), 1e-5f);
  EXPECT_EQ(ln->opset, 17);
  EXPECT_EQ(ln->origin, (std::vector<std::string>{"ReduceMean_0", "Sub_1", "Pow_2", "ReduceMean_3",
                                                  "Add_4", "Sqrt_5", "Div_6", "Mul_7", "Add_8"}));
  ASSERT_EQ(outcome.report.changes.size(), 1u);
  EXPECT_NE(outcome.report.changes[0].find("LayerNormalization"), std::string::npos);
  EXPECT_NE(outcome.report.changes[0].find("Div_6"), std::string::npos);
  EXPECT_TRUE(all_close(outcome.after, outcome.before, 1e-5, 1e-5));
  // The intermediate values are gone with their nodes.
  EXPECT_EQ(g.find_value("centered"), nullptr);
}

TEST(RecognizeLayerNorm, RewritesTheMulFormOverTwoPositiveAxesWithoutAffine) {
  std::mt19937 rng(2);
  Graph g;
  Options opt;
  opt.use_pow = false;
  opt.affine = false;
  opt.axes = {2, 1};
  opt.epsilon_first = true;
  build(g, opt, rng);
  Outcome outcome = run_pass(g, rng);
  ASSERT_EQ(ops_of(g), (std::vector<OpKind>{OpKind::kLayerNormalization}));
  const Node* ln = g.nodes()[0];
  EXPECT_EQ(ln->attrs.get_int("axis", 0), -2);
  ASSERT_EQ(ln->inputs.size(), 2u);
  ASSERT_TRUE(ln->inputs[1]->is_constant());
  EXPECT_EQ(ln->inputs[1]->constant->dims(), (Dims{5, 8}));
  EXPECT_EQ(ln->origin.size(), 7u);
  EXPECT_TRUE(all_close(outcome.after, outcome.before, 1e-5, 1e-5));
}

TEST(RecognizeLayerNorm, LeavesThePatternAloneWhenTheCenteredValueHasAnotherConsumer) {
  std::mt19937 rng(3);
  Graph g;
  Options opt;
  opt.centered_extra_use = true;
  build(g, opt, rng);
  const std::size_t nodes_before = g.nodes().size();
  ir::PassReport report;
  ASSERT_TRUE(ir::make_recognize_layer_norm_pass()->apply(g, report).is_ok());
  EXPECT_FALSE(report.changed());
  EXPECT_EQ(g.nodes().size(), nodes_before);
  for (OpKind op : ops_of(g)) EXPECT_NE(op, OpKind::kLayerNormalization);
}

TEST(RecognizeLayerNorm, KeepsAPerRowMulOutsideTheLayerNorm) {
  // gamma [5, 1] scales rows, not features: LayerNormalization cannot absorb it.
  std::mt19937 rng(4);
  Graph g;
  Options opt;
  opt.gamma_dims = {5, 1};
  build(g, opt, rng);
  Outcome outcome = run_pass(g, rng);
  EXPECT_EQ(ops_of(g),
            (std::vector<OpKind>{OpKind::kMul, OpKind::kAdd, OpKind::kLayerNormalization}));
  ASSERT_EQ(outcome.report.changes.size(), 1u);
  EXPECT_NE(outcome.report.changes[0].find("without scale"), std::string::npos);
  EXPECT_TRUE(all_close(outcome.after, outcome.before, 1e-5, 1e-5));
}

TEST(RecognizeLayerNorm, IgnoresReductionsThatAreNotOverTheLastAxes) {
  std::mt19937 rng(5);
  Graph g;
  Options opt;
  opt.axes = {-2};
  build(g, opt, rng);
  ir::PassReport report;
  ASSERT_TRUE(ir::make_recognize_layer_norm_pass()->apply(g, report).is_ok());
  EXPECT_FALSE(report.changed());
  EXPECT_EQ(g.nodes().size(), 9u);
}

}  // namespace
}  // namespace voxrt::testing
