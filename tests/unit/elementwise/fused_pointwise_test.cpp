// FusedPointwise: the program format (round trip, malformed programs rejected), its kernels,
// and the fuse_pointwise pass on hand-built graphs, checked by running the graph before and
// after the pass with a test-local interpreter over the CPU kernels.
#include <cmath>
#include <map>

#include "elementwise_test_util.h"
#include "ir/passes/fuse_pointwise.h"
#include "ir/pointwise_program.h"

namespace voxrt {
namespace {

using ir::OpKind;
using ir::PointwiseInstruction;
using ir::PointwiseProgram;
using test::tensors_close;

constexpr std::int64_t op_code(OpKind op) {
  return static_cast<std::int64_t>(op);
}

// gelu(x) = x * 0.5 * (1 + erf(x / sqrt(2))) with inputs (x).
PointwiseProgram gelu_program() {
  PointwiseProgram p;
  p.input_count = 1;
  p.constants = {0.70710678f, 1.0f, 0.5f};
  p.code = {
      {ir::kPointwiseConstantOpcode, -1, -1, 0},  // r1 = 1/sqrt2
      {op_code(OpKind::kMul), 0, 1, -1},          // r2 = x / sqrt2
      {op_code(OpKind::kErf), 2, -1, -1},         // r3
      {ir::kPointwiseConstantOpcode, -1, -1, 1},  // r4 = 1
      {op_code(OpKind::kAdd), 3, 4, -1},          // r5
      {ir::kPointwiseConstantOpcode, -1, -1, 2},  // r6 = 0.5
      {op_code(OpKind::kMul), 0, 6, -1},          // r7
      {op_code(OpKind::kMul), 7, 5, -1},          // r8
  };
  return p;
}

// (a * b + c) clipped to [-1, 2], then LeakyRelu(0.2) with inputs (a, b, c).
PointwiseProgram three_input_program() {
  PointwiseProgram p;
  p.input_count = 3;
  p.constants = {-1.0f, 2.0f, 0.2f};
  p.code = {
      {op_code(OpKind::kMul), 0, 1, -1},
      {op_code(OpKind::kAdd), 3, 2, -1},
      {op_code(OpKind::kClip), 4, -1, 0},
      {op_code(OpKind::kLeakyRelu), 5, -1, 2},
  };
  return p;
}

ir::Attributes attrs_of(const PointwiseProgram& program) {
  ir::Attributes attrs;
  ir::encode_pointwise_program(program, attrs);
  return attrs;
}

TEST(PointwiseProgram, EncodeDecodeRoundTrip) {
  const PointwiseProgram program = three_input_program();
  ir::Graph graph;
  std::vector<ir::Value*> ins;
  for (int i = 0; i < 3; ++i)
    ins.push_back(graph.add_value("x" + std::to_string(i), DType::kF32, {}));
  ir::Node* node =
      graph.add_node(OpKind::kFusedPointwise, "fp", ins, {graph.add_value("y", DType::kF32, {})});
  node->attrs = attrs_of(program);
  auto decoded = ir::decode_pointwise_program(*node);
  ASSERT_TRUE(decoded.has_value()) << decoded.status().to_string();
  EXPECT_EQ(decoded->input_count, 3);
  ASSERT_EQ(decoded->code.size(), program.code.size());
  for (std::size_t i = 0; i < program.code.size(); ++i) {
    EXPECT_EQ(decoded->code[i].opcode, program.code[i].opcode);
    EXPECT_EQ(decoded->code[i].a, program.code[i].a);
    EXPECT_EQ(decoded->code[i].b, program.code[i].b);
    EXPECT_EQ(decoded->code[i].param, program.code[i].param);
  }
  EXPECT_EQ(decoded->constants, program.constants);
  EXPECT_EQ(decoded->to_string(),
            "r3 = Mul r0 r1; r4 = Add r3 r2; r5 = Clip r4 -1 2; r6 = LeakyRelu r5 0.2");
}

TEST(PointwiseProgram, MalformedProgramsAreRejected) {
  struct Case {
    std::string what;
    std::function<void(ir::Attributes&)> corrupt;
    std::string expected_text;
  };
  const std::vector<Case> cases = {
      {"version", [](ir::Attributes& a) { a.set("pointwise_version", std::int64_t{7}); },
       "pointwise_version"},
      {"no code", [](ir::Attributes& a) { a.erase("pointwise_code"); }, "pointwise_code"},
      {"ragged",
       [](ir::Attributes& a) {
         a.set("pointwise_code", std::vector<std::int64_t>{26, 0, 0});
       },
       "multiple of 4"},
      {"forward reference",
       [](ir::Attributes& a) {
         a.set("pointwise_code", std::vector<std::int64_t>{26, 0, 1, -1});
       },
       "registers defined before"},
      {"self reference",
       [](ir::Attributes& a) {
         a.set("pointwise_code", std::vector<std::int64_t>{3, 1, -1, -1});
       },
       "register 1"},
      {"unknown opcode",
       [](ir::Attributes& a) {
         a.set("pointwise_code", std::vector<std::int64_t>{9999, 0, -1, -1});
       },
       "not a pointwise op"},
      {"not fusable op",
       [](ir::Attributes& a) {
         a.set("pointwise_code", std::vector<std::int64_t>{op_code(OpKind::kCast), 0, -1, -1});
       },
       "not a pointwise op"},
      {"unused source set",
       [](ir::Attributes& a) {
         a.set("pointwise_code", std::vector<std::int64_t>{3, 0, 0, -1});
       },
       "must be -1"},
      {"missing constant",
       [](ir::Attributes& a) {
         a.set("pointwise_code", std::vector<std::int64_t>{0, -1, -1, 5});
       },
       "constants"},
      {"clip needs two constants",
       [](ir::Attributes& a) {
         a.set("pointwise_code", std::vector<std::int64_t>{op_code(OpKind::kClip), 0, -1, 0});
         a.set("pointwise_constants", std::vector<float>{1.0f});
       },
       "needs 2 constants"},
      {"huge index",
       [](ir::Attributes& a) {
         a.set("pointwise_code", std::vector<std::int64_t>{3, 1LL << 40, -1, -1});
       },
       "not a register"},
  };
  for (const Case& c : cases) {
    ir::Graph graph;
    ir::Value* x = graph.add_value("x", DType::kF32, ir::sym_shape_from_dims({4}));
    ir::Node* node = graph.add_node(OpKind::kFusedPointwise, "broken", {x},
                                    {graph.add_value("y", DType::kF32, {})});
    PointwiseProgram ok;
    ok.input_count = 1;
    ok.code = {{op_code(OpKind::kRelu), 0, -1, -1}};
    node->attrs = attrs_of(ok);
    ASSERT_TRUE(ir::decode_pointwise_program(*node).has_value());
    c.corrupt(node->attrs);
    auto decoded = ir::decode_pointwise_program(*node);
    ASSERT_FALSE(decoded.has_value()) << c.what;
    EXPECT_EQ(decoded.status().code(), StatusCode::kCorrupt) << c.what;
    EXPECT_NE(decoded.status().message().find("broken"), std::string::npos)
        << decoded.status().message();
    EXPECT_NE(decoded.status().message().find(c.expected_text), std::string::npos)
        << c.what << ": " << decoded.status().message();
    // Neither shape inference nor the kernel factory accept it.
    std::vector<ir::ValueInfo> infos(1);
    infos[0].shape = x->shape;
    std::vector<ir::InferredOutput> outs;
    EXPECT_FALSE(ir::infer_outputs(*node, infos, outs).is_ok()) << c.what;
    EXPECT_TRUE(backends::cpu::elementwise_tactics(*node).empty()) << c.what;
    EXPECT_FALSE(backends::cpu::create_kernel(*node, 1).has_value()) << c.what;
  }
}

TEST(FusedPointwiseKernel, GeluMatchesFormulaOnBothTactics) {
  std::mt19937 rng(5);
  const Tensor x = test::random_f32({3, 333}, rng, -6.0f, 6.0f);
  Tensor expected = Tensor::uninitialized(DType::kF32, x.dims());
  for (std::int64_t i = 0; i < x.element_count(); ++i) {
    const double v = x.data<float>()[i];
    expected.data<float>()[i] = static_cast<float>(v * 0.5 * (1.0 + std::erf(v / std::sqrt(2.0))));
  }
  for (backends::TacticId tactic : {0u, 1u}) {
    auto out = test::run_op(OpKind::kFusedPointwise, {&x}, attrs_of(gelu_program()), tactic, 2);
    ASSERT_TRUE(out.has_value()) << out.status().to_string();
    EXPECT_TRUE(tensors_close(expected, (*out)[0], 5e-6, 1e-6)) << "tactic " << tactic;
  }
}

// Power spectra: Pow with a constant exponent 2 (or 3) takes the multiply path in the vectorized
// tactic; other exponents keep std::pow. Both must agree with the reference (std::pow) tactic.
TEST(FusedPointwiseKernel, ConstantSmallPowersMatchStdPow) {
  std::mt19937 rng(13);
  const Tensor x = test::random_f32({3, 600}, rng, -40.0f, 40.0f);
  for (const float exponent : {2.0f, 3.0f, 2.5f, 0.5f}) {
    PointwiseProgram program;
    program.input_count = 1;
    program.constants = {exponent};
    program.code = {{ir::kPointwiseConstantOpcode, -1, -1, 0}, {op_code(OpKind::kPow), 0, 1, -1}};
    auto reference = test::run_op(OpKind::kFusedPointwise, {&x}, attrs_of(program), 0);
    auto fast = test::run_op(OpKind::kFusedPointwise, {&x}, attrs_of(program), 1, 2);
    ASSERT_TRUE(reference.has_value() && fast.has_value()) << exponent;
    const auto r = (*reference)[0].span<float>();
    const auto f = (*fast)[0].span<float>();
    for (std::size_t i = 0; i < r.size(); ++i) {
      if (std::isnan(r[i])) {
        EXPECT_TRUE(std::isnan(f[i])) << "x^" << exponent << " at " << i;
        continue;
      }
      EXPECT_NEAR(f[i], r[i], std::abs(r[i]) * 2.5e-7f) << "x^" << exponent << " at " << i;
    }
  }
}

TEST(FusedPointwiseKernel, VectorizedMatchesReferenceOnBroadcasts) {
  std::mt19937 rng(11);
  const std::vector<std::vector<Dims>> cases = {
      {{7, 300}, {7, 300}, {7, 300}}, {{7, 300}, {300}, {7, 1}}, {{1}, {5, 1, 9}, {4, 1}},
      {{2, 513}, {}, {513}},          {{60, 700}, {700}, {}},    {{0, 4}, {4}, {1}},
  };
  for (const auto& dims : cases) {
    const Tensor a = test::random_f32(dims[0], rng);
    const Tensor b = test::random_f32(dims[1], rng);
    const Tensor c = test::random_f32(dims[2], rng);
    auto reference =
        test::run_op(OpKind::kFusedPointwise, {&a, &b, &c}, attrs_of(three_input_program()), 0);
    auto fast =
        test::run_op(OpKind::kFusedPointwise, {&a, &b, &c}, attrs_of(three_input_program()), 1, 3);
    ASSERT_TRUE(reference.has_value() && fast.has_value());
    EXPECT_TRUE(tensors_close((*reference)[0], (*fast)[0], 0, 0))
        << dims_to_string(dims[0]) << " " << dims_to_string(dims[1]) << " "
        << dims_to_string(dims[2]);
  }
}

// ---- the pass ------------------------------------------------------------------------------

// Runs `graph` node by node with the CPU kernels of `tactic`; returns the graph outputs.
Expected<std::vector<Tensor>> interpret(const ir::Graph& graph, const std::vector<Tensor>& feeds,
                                        backends::TacticId tactic) {
  std::map<const ir::Value*, Tensor> env;
  for (std::size_t i = 0; i < graph.inputs.size(); ++i) env[graph.inputs[i]] = feeds.at(i);
  VOXRT_ASSIGN_OR_RETURN(std::vector<ir::Node*> order, graph.topological_order());
  ThreadPool pool(2);
  backends::KernelContext context{&pool};
  for (const ir::Node* node : order) {
    std::vector<const Tensor*> ins;
    std::vector<ir::ValueInfo> infos;
    for (const ir::Value* v : node->inputs) {
      ir::ValueInfo info;
      if (!v) {
        info.present = false;
        ins.push_back(nullptr);
      } else {
        const Tensor* t = v->constant ? &*v->constant : &env.at(v);
        ins.push_back(t);
        info.dtype = t->dtype();
        info.shape = ir::sym_shape_from_dims(t->dims());
        info.data = t;
      }
      infos.push_back(info);
    }
    std::vector<ir::InferredOutput> inferred;
    VOXRT_RETURN_IF_ERROR(ir::infer_outputs(*node, infos, inferred));
    std::vector<Tensor*> outs;
    for (std::size_t i = 0; i < node->outputs.size(); ++i) {
      env[node->outputs[i]] = Tensor::zeros(inferred[i].dtype, *ir::known_dims(inferred[i].shape));
      outs.push_back(&env[node->outputs[i]]);
    }
    VOXRT_ASSIGN_OR_RETURN(auto kernel, backends::cpu::create_kernel(*node, tactic));
    VOXRT_RETURN_IF_ERROR(kernel->run(ins, outs, context));
  }
  std::vector<Tensor> results;
  for (const ir::Value* v : graph.outputs)
    results.push_back(v->constant ? *v->constant : env.at(v));
  return results;
}

// A small graph builder: values by name, f32 unless said otherwise.
struct Builder {
  ir::Graph graph;
  ir::Value* input(const std::string& name, Dims dims) {
    ir::Value* v = graph.add_value(name, DType::kF32, ir::sym_shape_from_dims(dims));
    graph.inputs.push_back(v);
    return v;
  }
  ir::Value* constant(const std::string& name, Tensor t) {
    return graph.add_constant(name, std::move(t));
  }
  ir::Value* node(OpKind op, const std::string& name, std::vector<ir::Value*> ins,
                  ir::Attributes attrs = {}, DType out_dtype = DType::kF32) {
    ir::Value* out = graph.add_value(name + ":0", out_dtype, {});
    ir::Node* n = graph.add_node(op, name, std::move(ins), {out});
    n->attrs = std::move(attrs);
    n->opset = 17;
    return out;
  }
};

int count_ops(const ir::Graph& graph, OpKind op) {
  int n = 0;
  for (const ir::Node* node : graph.nodes()) n += node->op == op;
  return n;
}

// Runs the graph, fuses it, runs it again (both tactics) and compares.
void expect_same_outputs_after_fusion(Builder& b, const std::vector<Tensor>& feeds,
                                      ir::PassReport& report, double atol = 2e-6) {
  ASSERT_TRUE(ir::infer_graph(b.graph).is_ok());
  auto before = interpret(b.graph, feeds, 0);
  ASSERT_TRUE(before.has_value()) << before.status().to_string();
  auto pass = ir::make_fuse_pointwise_pass();
  EXPECT_EQ(pass->name(), "fuse_pointwise");
  ASSERT_TRUE(pass->apply(b.graph, report).is_ok());
  ASSERT_TRUE(b.graph.validate().is_ok()) << b.graph.validate().to_string();
  for (backends::TacticId tactic : {0u, 1u}) {
    auto after = interpret(b.graph, feeds, tactic);
    ASSERT_TRUE(after.has_value()) << after.status().to_string();
    ASSERT_EQ(after->size(), before->size());
    for (std::size_t i = 0; i < before->size(); ++i) {
      EXPECT_TRUE(tensors_close((*before)[i], (*after)[i], atol, 1e-6))
          << "output " << i << " tactic " << tactic;
    }
  }
}

TEST(FusePointwisePass, FusesAChainWithScalarAndTensorConstants) {
  Builder b;
  ir::Value* x = b.input("x", {4, 37});
  ir::Value* half = b.constant("half", Tensor::scalar_f32(0.5f));
  std::mt19937 rng(3);
  ir::Value* bias = b.constant("bias", test::random_f32({37}, rng));
  ir::Value* m = b.node(OpKind::kMul, "scale", {x, half});
  ir::Value* a = b.node(OpKind::kAdd, "bias_add", {m, bias});
  ir::Value* s = b.node(OpKind::kSigmoid, "gate", {a});
  ir::Value* y = b.node(OpKind::kMul, "swish", {x, s});
  b.graph.outputs = {y};
  ir::PassReport report;
  expect_same_outputs_after_fusion(b, {test::random_f32({4, 37}, rng)}, report);
  ASSERT_EQ(report.changes.size(), 1u);
  EXPECT_NE(report.changes[0].find("Sigmoid 'gate'"), std::string::npos) << report.changes[0];
  EXPECT_EQ(b.graph.nodes().size(), 1u);
  const ir::Node* fused = b.graph.nodes()[0];
  EXPECT_EQ(fused->op, OpKind::kFusedPointwise);
  EXPECT_EQ(fused->origin, (std::vector<std::string>{"scale", "bias_add", "gate", "swish"}));
  // x is read twice but is one input; the scalar became a program constant, the bias an input.
  EXPECT_EQ(fused->inputs, (std::vector<ir::Value*>{x, bias}));
  EXPECT_EQ(fused->outputs[0], y);
}

TEST(FusePointwisePass, FusesADiamondWhoseInnerValueStaysInside) {
  Builder b;
  ir::Value* x = b.input("x", {3, 5});
  ir::Value* r = b.node(OpKind::kRelu, "relu", {x});
  ir::Value* t = b.node(OpKind::kTanh, "tanh", {r});
  ir::Value* n = b.node(OpKind::kNeg, "neg", {r});
  ir::Value* y = b.node(OpKind::kAdd, "sum", {t, n});
  b.graph.outputs = {y};
  std::mt19937 rng(4);
  ir::PassReport report;
  expect_same_outputs_after_fusion(b, {test::random_f32({3, 5}, rng)}, report);
  EXPECT_EQ(report.changes.size(), 1u);
  EXPECT_EQ(b.graph.nodes().size(), 1u);
  EXPECT_EQ(b.graph.nodes()[0]->origin.size(), 4u);
}

TEST(FusePointwisePass, StopsAtSharedValuesGraphOutputsAndOtherDtypes) {
  Builder b;
  ir::Value* x = b.input("x", {2, 9});
  ir::Value* one = b.constant("one", Tensor::scalar_f32(1.0f));
  ir::Value* a = b.node(OpKind::kAbs, "abs", {x});
  ir::Value* s = b.node(OpKind::kSqrt, "sqrt", {a});  // read by Greater and Where
  ir::Value* c = b.node(OpKind::kGreater, "gt", {s, one}, {}, DType::kBool);
  ir::Value* w = b.node(OpKind::kWhere, "where", {c, s, x});
  ir::Value* e = b.node(OpKind::kExp, "exp", {w});  // a graph output
  ir::Value* n = b.node(OpKind::kNeg, "neg", {e});
  b.graph.outputs = {e, n};
  std::mt19937 rng(8);
  ir::PassReport report;
  expect_same_outputs_after_fusion(b, {test::random_f32({2, 9}, rng)}, report);
  ASSERT_EQ(report.changes.size(), 1u) << (report.changes.empty() ? "" : report.changes[1]);
  EXPECT_NE(report.changes[0].find("Abs 'abs' + Sqrt 'sqrt'"), std::string::npos)
      << report.changes[0];
  EXPECT_EQ(count_ops(b.graph, OpKind::kFusedPointwise), 1);
  EXPECT_EQ(count_ops(b.graph, OpKind::kExp), 1);
  EXPECT_EQ(count_ops(b.graph, OpKind::kNeg), 1);
  EXPECT_EQ(count_ops(b.graph, OpKind::kWhere), 1);
}

TEST(FusePointwisePass, ParametrizedOpsAndClipBounds) {
  Builder b;
  ir::Value* x = b.input("x", {5, 1, 11});
  ir::Value* z = b.input("z", {7, 1});
  ir::Value* lo = b.constant("lo", Tensor::scalar_f32(-0.5f));
  ir::Value* hi = b.constant("hi", Tensor::from_vector<float>({1}, {0.8f}));
  ir::Attributes leaky, hard, elu;
  leaky.set("alpha", 0.3f);
  hard.set("alpha", 0.25f);
  hard.set("beta", 0.45f);
  elu.set("alpha", 0.9f);
  ir::Value* l = b.node(OpKind::kLeakyRelu, "leaky", {x}, leaky);
  ir::Value* d = b.node(OpKind::kSub, "sub", {l, z});  // broadcasts to 5x7x11
  ir::Value* c = b.node(OpKind::kClip, "clip", {d, lo, hi});
  ir::Value* h = b.node(OpKind::kHardSigmoid, "hard", {c}, hard);
  ir::Value* e = b.node(OpKind::kElu, "elu", {d}, elu);
  ir::Value* mx = b.node(OpKind::kMax, "max", {h, e, z});
  b.graph.outputs = {mx};
  std::mt19937 rng(21);
  ir::PassReport report;
  expect_same_outputs_after_fusion(
      b, {test::random_f32({5, 1, 11}, rng), test::random_f32({7, 1}, rng)}, report);
  EXPECT_EQ(report.changes.size(), 1u);
  EXPECT_EQ(count_ops(b.graph, OpKind::kFusedPointwise), 1);
  EXPECT_EQ(b.graph.nodes().size(), 1u);
  EXPECT_EQ(b.graph.nodes()[0]->inputs, (std::vector<ir::Value*>{x, z}));
}

TEST(FusePointwisePass, LeavesSingleOpsNonConstantClipAndIntegerChainsAlone) {
  Builder b;
  ir::Value* x = b.input("x", {6});
  ir::Value* lo = b.input("lo", {});
  ir::Value* c = b.node(OpKind::kClip, "clip", {x, lo, nullptr});  // runtime bound: not fusable
  ir::Value* r = b.node(OpKind::kRelu, "relu", {c});               // alone: nothing to fuse with
  b.graph.outputs = {r};
  std::mt19937 rng(2);
  ir::PassReport report;
  expect_same_outputs_after_fusion(b, {test::random_f32({6}, rng), Tensor::scalar_f32(0.1f)},
                                   report);
  EXPECT_TRUE(report.changes.empty());
  EXPECT_EQ(b.graph.nodes().size(), 2u);

  Builder ints;
  ir::Value* i = ints.graph.add_value("i", DType::kI64, ir::sym_shape_from_dims({3}));
  ints.graph.inputs.push_back(i);
  ir::Value* two = ints.constant("two", Tensor::scalar_i64(2));
  ir::Value* m = ints.node(OpKind::kMul, "mul", {i, two}, {}, DType::kI64);
  ir::Value* n = ints.node(OpKind::kNeg, "neg", {m}, {}, DType::kI64);
  ints.graph.outputs = {n};
  ir::PassReport int_report;
  expect_same_outputs_after_fusion(ints, {Tensor::from_vector<std::int64_t>({3}, {1, -2, 3})},
                                   int_report);
  EXPECT_TRUE(int_report.changes.empty());
}

}  // namespace
}  // namespace voxrt
