// Elementwise shape inference: broadcasting with symbolic dims, dtype rules, errors that name
// the node, and data propagation of small tensors (shape arithmetic folds at build time).
#include "elementwise_test_util.h"

namespace voxrt {
namespace {

using ir::Dim;
using ir::OpKind;
using ir::ValueInfo;

ValueInfo info(DType dtype, ir::SymShape shape, const Tensor* data = nullptr) {
  ValueInfo v;
  v.dtype = dtype;
  v.shape = std::move(shape);
  v.data = data;
  return v;
}
ValueInfo info_of(const Tensor& t) {
  return info(t.dtype(), ir::sym_shape_from_dims(t.dims()), &t);
}

struct Inferred {
  Status status;
  std::vector<ir::InferredOutput> outputs;
};

Inferred infer(OpKind op, std::vector<ValueInfo> inputs, ir::Attributes attrs = {},
               std::size_t outputs = 1) {
  ir::Graph graph;
  std::vector<ir::Value*> ins, outs;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    ins.push_back(graph.add_value("i" + std::to_string(i), inputs[i].dtype, inputs[i].shape));
  }
  for (std::size_t i = 0; i < outputs; ++i)
    outs.push_back(graph.add_value("o" + std::to_string(i), DType::kF32, {}));
  ir::Node* node = graph.add_node(op, "the_node", ins, outs);
  node->attrs = std::move(attrs);
  Inferred result;
  result.status = ir::infer_outputs(*node, inputs, result.outputs);
  return result;
}

TEST(ElementwiseShapes, BroadcastKeepsSymbolsAndKnownDims) {
  const ir::SymShape x = {Dim::symbolic("batch"), Dim::symbolic("T"), Dim::known(80)};
  auto r = infer(OpKind::kAdd, {info(DType::kF32, x), info(DType::kF32, {Dim::known(80)})});
  ASSERT_TRUE(r.status.is_ok()) << r.status.to_string();
  EXPECT_EQ(r.outputs[0].shape, x);
  EXPECT_EQ(r.outputs[0].dtype, DType::kF32);
  auto col =
      infer(OpKind::kMul,
            {info(DType::kF32, {Dim::known(4), Dim::known(1)}),
             info(DType::kF32, {Dim::known(1), Dim::known(5), Dim::known(1), Dim::known(7)})});
  ASSERT_TRUE(col.status.is_ok());
  EXPECT_EQ(ir::sym_shape_to_string(col.outputs[0].shape), "1x5x4x7");
  auto where = infer(OpKind::kWhere, {info(DType::kBool, {Dim::known(3), Dim::known(1)}),
                                      info(DType::kI64, {}), info(DType::kI64, {Dim::known(6)})});
  ASSERT_TRUE(where.status.is_ok()) << where.status.to_string();
  EXPECT_EQ(ir::sym_shape_to_string(where.outputs[0].shape), "3x6");
  EXPECT_EQ(where.outputs[0].dtype, DType::kI64);
  auto max3 = infer(OpKind::kMax, {info(DType::kF32, {Dim::known(2), Dim::known(1)}),
                                   info(DType::kF32, {Dim::known(3)}), info(DType::kF32, {})});
  ASSERT_TRUE(max3.status.is_ok());
  EXPECT_EQ(ir::sym_shape_to_string(max3.outputs[0].shape), "2x3");
}

TEST(ElementwiseShapes, OutputDtypes) {
  const ir::SymShape s = {Dim::known(2)};
  for (OpKind op : {OpKind::kEqual, OpKind::kGreater, OpKind::kLess, OpKind::kGreaterOrEqual,
                    OpKind::kLessOrEqual}) {
    auto r = infer(op, {info(DType::kI64, s), info(DType::kI64, s)});
    ASSERT_TRUE(r.status.is_ok());
    EXPECT_EQ(r.outputs[0].dtype, DType::kBool) << ir::op_name(op);
  }
  ir::Attributes to_f16;
  to_f16.set("to", static_cast<std::int64_t>(DType::kF16));
  EXPECT_EQ(infer(OpKind::kCast, {info(DType::kI32, s)}, to_f16).outputs[0].dtype, DType::kF16);
  auto pow = infer(OpKind::kPow, {info(DType::kF32, s), info(DType::kI64, {})});
  ASSERT_TRUE(pow.status.is_ok());
  EXPECT_EQ(pow.outputs[0].dtype, DType::kF32);
  auto dropout = infer(OpKind::kDropout, {info(DType::kF32, s)}, {}, 2);
  ASSERT_TRUE(dropout.status.is_ok());
  EXPECT_EQ(dropout.outputs[1].dtype, DType::kBool);
  EXPECT_EQ(dropout.outputs[1].shape, s);
}

TEST(ElementwiseShapes, UnknownRankStaysUnknown) {
  ValueInfo unknown = info(DType::kF32, {});
  unknown.rank_known = false;
  auto r = infer(OpKind::kAdd, {unknown, info(DType::kF32, {Dim::known(3)})});
  ASSERT_TRUE(r.status.is_ok());
  EXPECT_FALSE(r.outputs[0].rank_known);
  auto u = infer(OpKind::kRelu, {unknown});
  ASSERT_TRUE(u.status.is_ok());
  EXPECT_FALSE(u.outputs[0].rank_known);
}

TEST(ElementwiseShapes, ErrorsNameTheNodeAndSayWhatIsWrong) {
  const ir::SymShape s3 = {Dim::known(3)};
  const ir::SymShape s4 = {Dim::known(4)};
  struct Case {
    OpKind op;
    std::vector<ValueInfo> inputs;
    ir::Attributes attrs;
    std::string expected_text;
  };
  ir::Attributes bad_cast;
  bad_cast.set("to", std::int64_t{99});
  const std::vector<Case> cases = {
      {OpKind::kAdd, {info(DType::kF32, s3), info(DType::kF32, s4)}, {}, "cannot broadcast"},
      {OpKind::kAdd, {info(DType::kF32, s3), info(DType::kI64, s3)}, {}, "dtype of input 0"},
      {OpKind::kSigmoid, {info(DType::kI64, s3)}, {}, "floating point"},
      {OpKind::kNot, {info(DType::kF32, s3)}, {}, "bool"},
      {OpKind::kAnd, {info(DType::kI32, s3), info(DType::kI32, s3)}, {}, "bool"},
      {OpKind::kWhere,
       {info(DType::kF32, s3), info(DType::kF32, s3), info(DType::kF32, s3)},
       {},
       "bool"},
      {OpKind::kWhere, {info(DType::kBool, s3), info(DType::kF32, s3)}, {}, "inputs"},
      {OpKind::kCast, {info(DType::kF32, s3)}, bad_cast, "'to' = 99"},
      {OpKind::kClip, {info(DType::kF32, s3), info(DType::kF32, s3)}, {}, "scalar"},
      {OpKind::kSub, {info(DType::kBool, s3), info(DType::kBool, s3)}, {}, "numeric"},
      {OpKind::kMax, {}, {}, "inputs"},
      {OpKind::kRelu, {}, {}, "inputs"},
  };
  for (const Case& c : cases) {
    auto r = infer(c.op, c.inputs, c.attrs);
    ASSERT_FALSE(r.status.is_ok()) << ir::op_name(c.op) << " " << c.expected_text;
    EXPECT_NE(r.status.message().find("the_node"), std::string::npos) << r.status.message();
    EXPECT_NE(r.status.message().find(c.expected_text), std::string::npos) << r.status.message();
  }
}

TEST(ElementwiseShapes, PropagatesSmallShapeArithmetic) {
  // Shape -> Gather -> Mul/Div/Add -> Concat -> Reshape: the elementwise steps fold.
  const Tensor dims = Tensor::from_vector<std::int64_t>({2}, {4, 6});
  const Tensor two = Tensor::scalar_i64(2);
  auto mul = infer(OpKind::kMul, {info_of(dims), info_of(two)});
  ASSERT_TRUE(mul.status.is_ok());
  ASSERT_TRUE(mul.outputs[0].data.has_value());
  EXPECT_EQ(mul.outputs[0].data->to_i64_vector(), (std::vector<std::int64_t>{8, 12}));
  const Tensor seven = Tensor::from_vector<std::int64_t>({1}, {-7});
  auto div = infer(OpKind::kDiv, {info_of(seven), info_of(two)});
  EXPECT_EQ(div.outputs[0].data->to_i64_vector(), (std::vector<std::int64_t>{-3}));  // truncates
  ir::Attributes fmod0;
  auto mod = infer(OpKind::kMod, {info_of(seven), info_of(two)}, fmod0);
  EXPECT_EQ(mod.outputs[0].data->to_i64_vector(), (std::vector<std::int64_t>{1}));
  // PyTorch's float detour: Cast(f32) -> Div -> Floor -> Cast(i64).
  ir::Attributes to_f32, to_i64;
  to_f32.set("to", static_cast<std::int64_t>(DType::kF32));
  to_i64.set("to", static_cast<std::int64_t>(DType::kI64));
  auto as_float = infer(OpKind::kCast, {info_of(dims)}, to_f32);
  ASSERT_TRUE(as_float.outputs[0].data.has_value());
  const Tensor four = Tensor::scalar_f32(4.0f);
  auto fdiv = infer(OpKind::kDiv, {info_of(*as_float.outputs[0].data), info_of(four)});
  auto floor = infer(OpKind::kFloor, {info_of(*fdiv.outputs[0].data)});
  auto back = infer(OpKind::kCast, {info_of(*floor.outputs[0].data)}, to_i64);
  ASSERT_TRUE(back.outputs[0].data.has_value());
  EXPECT_EQ(back.outputs[0].data->dtype(), DType::kI64);
  EXPECT_EQ(back.outputs[0].data->to_i64_vector(), (std::vector<std::int64_t>{1, 1}));
  // Comparisons and Where on shape values.
  const Tensor minus_one = Tensor::from_vector<std::int64_t>({3}, {0, -1, 5});
  const Tensor zero = Tensor::scalar_i64(0);
  auto eq = infer(OpKind::kEqual, {info_of(minus_one), info_of(zero)});
  ASSERT_TRUE(eq.outputs[0].data.has_value());
  EXPECT_EQ(eq.outputs[0].data->to_i64_vector(), (std::vector<std::int64_t>{1, 0, 0}));
  const Tensor fill = Tensor::from_vector<std::int64_t>({3}, {10, 20, 30});
  auto where =
      infer(OpKind::kWhere, {info_of(*eq.outputs[0].data), info_of(fill), info_of(minus_one)});
  EXPECT_EQ(where.outputs[0].data->to_i64_vector(), (std::vector<std::int64_t>{10, -1, 5}));
  auto max = infer(OpKind::kMax, {info_of(minus_one), info_of(zero), info_of(two)});
  EXPECT_EQ(max.outputs[0].data->to_i64_vector(), (std::vector<std::int64_t>{2, 2, 5}));
  const Tensor i32 = Tensor::from_vector<std::int32_t>({2}, {3, -4});
  auto neg = infer(OpKind::kNeg, {info_of(i32)});
  EXPECT_EQ(neg.outputs[0].data->dtype(), DType::kI32);
  EXPECT_EQ(neg.outputs[0].data->to_i64_vector(), (std::vector<std::int64_t>{-3, 4}));
}

TEST(ElementwiseShapes, NoPropagationForLargeOrUnknownInputs) {
  const Tensor big = Tensor::zeros(DType::kI64, {65});
  const Tensor one = Tensor::scalar_i64(1);
  auto r = infer(OpKind::kAdd, {info_of(big), info_of(one)});
  ASSERT_TRUE(r.status.is_ok());
  EXPECT_FALSE(r.outputs[0].data.has_value());
  auto partial = infer(OpKind::kAdd, {info(DType::kI64, {Dim::known(1)}), info_of(one)});
  ASSERT_TRUE(partial.status.is_ok());
  EXPECT_FALSE(partial.outputs[0].data.has_value());
}

}  // namespace
}  // namespace voxrt
