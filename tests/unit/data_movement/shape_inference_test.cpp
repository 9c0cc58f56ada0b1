// Build-time shape inference: symbolic dims stay symbolic, data-dependent dims become unknown
// (with the right rank) when the data is absent, and small integer results carry data.
#include "unit/data_movement/op_test_util.h"

namespace voxrt::testing {
namespace {

using ir::Dim;
using ir::OpKind;
using ir::SymShape;
using I64 = std::vector<std::int64_t>;

ir::ValueInfo info(DType dtype, SymShape shape, const Tensor* data = nullptr) {
  ir::ValueInfo v;
  v.dtype = dtype;
  v.shape = std::move(shape);
  v.data = data;
  return v;
}
ir::ValueInfo constant(const Tensor& t) {
  return info(t.dtype(), ir::sym_shape_from_dims(t.dims()), &t);
}
ir::ValueInfo absent() {
  ir::ValueInfo v;
  v.present = false;
  return v;
}

Dim sym(const char* name) {
  return Dim::symbolic(name);
}
Dim k(std::int64_t v) {
  return Dim::known(v);
}

struct Inferred {
  Status status;
  std::vector<ir::InferredOutput> outputs;
};

Inferred infer(OpKind op, std::vector<ir::ValueInfo> inputs, ir::Attributes attrs = {},
               std::size_t output_count = 1) {
  ir::Node node;
  node.op = op;
  node.name = "n";
  node.attrs = std::move(attrs);
  node.outputs.assign(output_count, nullptr);
  Inferred r;
  r.status = ir::infer_outputs(node, inputs, r.outputs);
  return r;
}

SymShape batch_t_80() {
  return {sym("batch"), sym("T"), k(80)};
}

TEST(DataMovementShapes, TransposeAndUnsqueezeKeepSymbols) {
  auto t = infer(OpKind::kTranspose, {info(DType::kF32, batch_t_80())},
                 attributes({{"perm", I64{0, 2, 1}}}));
  ASSERT_TRUE(t.status.is_ok()) << t.status.to_string();
  EXPECT_EQ(t.outputs[0].shape, (SymShape{sym("batch"), k(80), sym("T")}));
  Tensor axes = i64s({1});
  auto u = infer(OpKind::kUnsqueeze, {info(DType::kF32, batch_t_80()), constant(axes)});
  EXPECT_EQ(u.outputs[0].shape, (SymShape{sym("batch"), k(1), sym("T"), k(80)}));
  auto f = infer(OpKind::kFlatten, {info(DType::kF32, {sym("batch"), k(1), k(80)})});
  EXPECT_EQ(f.outputs[0].shape, (SymShape{sym("batch"), k(80)}));
}

TEST(DataMovementShapes, ReshapeWithSymbols) {
  Tensor keep = i64s({0, 0, 4, 20});
  auto r = infer(OpKind::kReshape, {info(DType::kF32, batch_t_80()), constant(keep)});
  EXPECT_EQ(r.outputs[0].shape, (SymShape{sym("batch"), sym("T"), k(4), k(20)}));
  // -1 is inferred when the symbols cancel out.
  Tensor merge = i64s({0, 0, -1});
  auto m = infer(OpKind::kReshape,
                 {info(DType::kF32, {sym("batch"), sym("T"), k(4), k(20)}), constant(merge)});
  EXPECT_EQ(m.outputs[0].shape, (SymShape{sym("batch"), sym("T"), k(80)}));
  Tensor flat = i64s({0, -1});
  auto u = infer(OpKind::kReshape, {info(DType::kF32, batch_t_80()), constant(flat)});
  EXPECT_EQ(u.outputs[0].shape, (SymShape{sym("batch"), Dim{}}));
  // Shape data unknown at build time: the rank still comes from the shape input's length.
  auto d = infer(OpKind::kReshape, {info(DType::kF32, batch_t_80()), info(DType::kI64, {k(2)})});
  ASSERT_TRUE(d.outputs[0].rank_known);
  EXPECT_EQ(d.outputs[0].shape, (SymShape{Dim{}, Dim{}}));
  auto unknown_rank =
      infer(OpKind::kReshape, {info(DType::kF32, batch_t_80()), info(DType::kI64, {sym("n")})});
  EXPECT_FALSE(unknown_rank.outputs[0].rank_known);
}

TEST(DataMovementShapes, DataDependentDimsWithoutData) {
  const ir::ValueInfo x = info(DType::kF32, batch_t_80());
  const ir::ValueInfo vec3 = info(DType::kI64, {k(3)});
  const ir::ValueInfo vec1 = info(DType::kI64, {k(1)});
  auto expand = infer(OpKind::kExpand, {x, vec3});
  EXPECT_EQ(expand.outputs[0].shape, (SymShape{Dim{}, Dim{}, k(80)}));
  auto tile = infer(OpKind::kTile, {x, vec3});
  EXPECT_EQ(tile.outputs[0].shape, (SymShape{Dim{}, Dim{}, Dim{}}));
  auto cos = infer(OpKind::kConstantOfShape, {vec3});
  EXPECT_EQ(cos.outputs[0].shape.size(), 3u);
  auto slice = infer(OpKind::kSlice, {x, vec1, vec1, vec1});
  EXPECT_EQ(slice.outputs[0].shape.size(), 3u);
  Tensor axis2 = i64s({2});
  auto slice_known_axis = infer(OpKind::kSlice, {x, vec1, vec1, constant(axis2)});
  EXPECT_EQ(slice_known_axis.outputs[0].shape, (SymShape{sym("batch"), sym("T"), Dim{}}));
  const ir::ValueInfo scalar = info(DType::kI64, {});
  auto range = infer(OpKind::kRange, {scalar, scalar, scalar});
  EXPECT_EQ(range.outputs[0].shape, (SymShape{Dim{}}));
  auto pad = infer(OpKind::kPad, {x, info(DType::kI64, {k(6)})});
  EXPECT_EQ(pad.outputs[0].shape, (SymShape{Dim{}, Dim{}, Dim{}}));
  auto split = infer(OpKind::kSplit, {x, info(DType::kI64, {k(2)})},
                     attributes({{"axis", std::int64_t{2}}}), 2);
  EXPECT_EQ(split.outputs[1].shape, (SymShape{sym("batch"), sym("T"), Dim{}}));
}

TEST(DataMovementShapes, SymbolicSlicesAndPads) {
  const ir::ValueInfo x = info(DType::kF32, batch_t_80());
  Tensor starts = i64s({0, 2}), ends = i64s({std::numeric_limits<std::int64_t>::max(), 10}),
         axes = i64s({1, 2});
  auto s = infer(OpKind::kSlice, {x, constant(starts), constant(ends), constant(axes)});
  EXPECT_EQ(s.outputs[0].shape, (SymShape{sym("batch"), sym("T"), k(8)}));
  Tensor starts2 = i64s({1}), ends2 = i64s({-1}), axis1 = i64s({1});
  auto s2 = infer(OpKind::kSlice, {x, constant(starts2), constant(ends2), constant(axis1)});
  EXPECT_EQ(s2.outputs[0].shape, (SymShape{sym("batch"), Dim{}, k(80)}));
  Tensor pads = i64s({0, 0, 1, 0, 0, 2});
  auto p = infer(OpKind::kPad, {x, constant(pads)});
  EXPECT_EQ(p.outputs[0].shape, (SymShape{sym("batch"), sym("T"), k(83)}));
  auto sq = infer(OpKind::kSqueeze, {info(DType::kF32, {sym("batch"), k(1), k(80)})});
  EXPECT_EQ(sq.outputs[0].shape, (SymShape{sym("batch"), k(80)}));
  Tensor concat_axis_shape;
  auto c = infer(OpKind::kConcat, {x, info(DType::kF32, {sym("batch"), k(5), k(80)})},
                 attributes({{"axis", std::int64_t{1}}}));
  EXPECT_EQ(c.outputs[0].shape, (SymShape{sym("batch"), Dim{}, k(80)}));
  auto c2 = infer(OpKind::kConcat, {x, info(DType::kF32, {sym("batch"), sym("T"), k(40)})},
                  attributes({{"axis", std::int64_t{-1}}}));
  EXPECT_EQ(c2.outputs[0].shape, (SymShape{sym("batch"), sym("T"), k(120)}));
  auto g = infer(OpKind::kGather, {x, info(DType::kI64, {k(2), k(3)})},
                 attributes({{"axis", std::int64_t{1}}}));
  EXPECT_EQ(g.outputs[0].shape, (SymShape{sym("batch"), k(2), k(3), k(80)}));
  Tensor big = i64s({1, 1, 3});
  auto e = infer(OpKind::kExpand, {info(DType::kF32, {sym("batch"), k(1), k(1)}), constant(big)});
  EXPECT_EQ(e.outputs[0].shape, (SymShape{sym("batch"), k(1), k(3)}));
}

TEST(DataMovementShapes, ShapeAndSizeCarryData) {
  auto full = infer(OpKind::kShape, {info(DType::kF32, {k(2), k(7), k(80)})});
  ASSERT_TRUE(full.outputs[0].data.has_value());
  EXPECT_TRUE(has_values<std::int64_t>(*full.outputs[0].data, {3}, {2, 7, 80}));
  auto symbolic = infer(OpKind::kShape, {info(DType::kF32, batch_t_80())});
  EXPECT_EQ(symbolic.outputs[0].shape, (SymShape{k(3)}));
  EXPECT_FALSE(symbolic.outputs[0].data.has_value());
  // Only the selected dims need to be known.
  auto tail = infer(OpKind::kShape, {info(DType::kF32, batch_t_80())},
                    attributes({{"start", std::int64_t{-1}}}));
  ASSERT_TRUE(tail.outputs[0].data.has_value());
  EXPECT_TRUE(has_values<std::int64_t>(*tail.outputs[0].data, {1}, {80}));
  auto size = infer(OpKind::kSize, {info(DType::kF32, {k(2), k(7), k(80)})});
  EXPECT_TRUE(has_values<std::int64_t>(*size.outputs[0].data, {}, {1120}));
  EXPECT_FALSE(infer(OpKind::kSize, {info(DType::kF32, batch_t_80())}).outputs[0].data.has_value());
}

TEST(DataMovementShapes, SmallIntegerDataPropagates) {
  Tensor shape = i64s({2, 7, 80});
  Tensor index = Tensor::scalar_i64(-1);
  auto g = infer(OpKind::kGather, {constant(shape), constant(index)});
  ASSERT_TRUE(g.outputs[0].data.has_value());
  EXPECT_TRUE(has_values<std::int64_t>(*g.outputs[0].data, {}, {80}));
  Tensor axes0 = i64s({0});
  auto u = infer(OpKind::kUnsqueeze, {constant(*g.outputs[0].data), constant(axes0)});
  EXPECT_TRUE(has_values<std::int64_t>(*u.outputs[0].data, {1}, {80}));
  Tensor minus_one = i64s({-1});
  auto c = infer(OpKind::kConcat, {constant(minus_one), constant(*u.outputs[0].data)},
                 attributes({{"axis", std::int64_t{0}}}));
  EXPECT_TRUE(has_values<std::int64_t>(*c.outputs[0].data, {2}, {-1, 80}));
  Tensor starts = i64s({1}), ends = i64s({3});
  auto s = infer(OpKind::kSlice, {constant(shape), constant(starts), constant(ends)});
  EXPECT_TRUE(has_values<std::int64_t>(*s.outputs[0].data, {2}, {7, 80}));
  auto sq = infer(OpKind::kSqueeze, {constant(*u.outputs[0].data), constant(axes0)});
  EXPECT_TRUE(has_values<std::int64_t>(*sq.outputs[0].data, {}, {80}));
  Tensor i32 = Tensor::from_vector<std::int32_t>({2, 2}, {1, 2, 3, 4});
  Tensor flat = i64s({4});
  auto r = infer(OpKind::kReshape, {constant(i32), constant(flat)});
  EXPECT_TRUE(has_values<std::int32_t>(*r.outputs[0].data, {4}, {1, 2, 3, 4}));
  Tensor start = Tensor::scalar_i64(0), limit = Tensor::scalar_i64(5),
         delta = Tensor::scalar_i64(2);
  auto range = infer(OpKind::kRange, {constant(start), constant(limit), constant(delta)});
  EXPECT_TRUE(has_values<std::int64_t>(*range.outputs[0].data, {3}, {0, 2, 4}));
  Tensor dims = i64s({2, 2});
  auto cos = infer(OpKind::kConstantOfShape, {constant(dims)});
  EXPECT_TRUE(has_values<float>(*cos.outputs[0].data, {2, 2}, {0, 0, 0, 0}));
  // Float tensors and large tensors are left to the evaluator.
  Tensor floats = Tensor::from_vector<float>({2}, {1, 2});
  EXPECT_FALSE(
      infer(OpKind::kGather, {constant(floats), constant(index)}).outputs[0].data.has_value());
  Tensor large_dims = i64s({100});
  EXPECT_FALSE(infer(OpKind::kConstantOfShape, {constant(large_dims)}).outputs[0].data.has_value());
}

TEST(DataMovementShapes, ErrorsNameTheNode) {
  auto bad_axis =
      infer(OpKind::kConcat, {info(DType::kF32, {k(2)})}, attributes({{"axis", std::int64_t{3}}}));
  ASSERT_FALSE(bad_axis.status.is_ok());
  EXPECT_NE(bad_axis.status.message().find("node 'n' (Concat)"), std::string::npos)
      << bad_axis.status.message();
  EXPECT_FALSE(infer(OpKind::kReshape, {info(DType::kF32, {k(2)})}).status.is_ok());
  EXPECT_FALSE(
      infer(OpKind::kGather, {info(DType::kF32, {}), info(DType::kI64, {})}).status.is_ok());
  EXPECT_FALSE(
      infer(OpKind::kGather, {info(DType::kF32, {k(3)}), info(DType::kF32, {})}).status.is_ok());
  EXPECT_FALSE(infer(OpKind::kSplit, {info(DType::kF32, {k(5)})}, {}, 2).status.is_ok());
  EXPECT_FALSE(
      infer(OpKind::kPad, {info(DType::kF32, {k(5)}), constant(i64s({1}))}).status.is_ok());
  EXPECT_FALSE(infer(OpKind::kPad, {info(DType::kF32, {k(5)}), constant(i64s({1, 1}))},
                     attributes({{"mode", std::string("wrap")}}))
                   .status.is_ok());
  EXPECT_FALSE(infer(OpKind::kTranspose, {}).status.is_ok());
  EXPECT_FALSE(infer(OpKind::kUnsqueeze, {info(DType::kF32, {k(5)}), absent()}).status.is_ok());
  EXPECT_FALSE(infer(OpKind::kConstantOfShape, {constant(i64s({-2}))}).status.is_ok());
}

}  // namespace
}  // namespace voxrt::testing
