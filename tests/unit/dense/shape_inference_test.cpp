// Dense shape inference: concrete and symbolic dims, attribute defaults and errors.
#include "dense_test_util.h"

namespace voxrt::dense_test {
namespace {

using ir::Dim;
using ir::OpKind;
using ir::SymShape;

Expected<ir::InferredOutput> infer(OpKind op, std::vector<ir::ValueInfo> inputs,
                                   ir::Attributes attrs = {}) {
  ir::Node node;
  node.op = op;
  node.name = "n";
  node.attrs = std::move(attrs);
  node.outputs = {nullptr};
  std::vector<ir::InferredOutput> outs;
  VOXRT_RETURN_IF_ERROR(ir::infer_outputs(node, inputs, outs));
  return outs[0];
}

ir::ValueInfo info(SymShape shape) {
  ir::ValueInfo v;
  v.shape = std::move(shape);
  return v;
}
ir::ValueInfo info(const Dims& dims) {
  return info(ir::sym_shape_from_dims(dims));
}
ir::ValueInfo missing() {
  ir::ValueInfo v;
  v.present = false;
  return v;
}

std::string shape_of(const Expected<ir::InferredOutput>& out) {
  return out.has_value() ? ir::sym_shape_to_string(out->shape) : "error: " + out.status().message();
}

TEST(DenseShapes, ConvConcreteAndAutoPad) {
  EXPECT_EQ(shape_of(infer(OpKind::kConv, {info(Dims{1, 1, 161, 37}), info(Dims{32, 1, 41, 11})},
                           attrs_of({{"strides", Ints{2, 2}}, {"pads", Ints{20, 5, 20, 5}}}))),
            "1x32x81x19");
  EXPECT_EQ(
      shape_of(infer(OpKind::kConv, {info(Dims{1, 3, 10, 9}), info(Dims{4, 3, 4, 3})},
                     attrs_of({{"auto_pad", std::string("SAME_UPPER")}, {"strides", Ints{2, 2}}}))),
      "1x4x5x5");
  EXPECT_EQ(
      shape_of(infer(OpKind::kConv, {info(Dims{1, 3, 10, 9}), info(Dims{4, 3, 4, 3})},
                     attrs_of({{"auto_pad", std::string("VALID")}, {"strides", Ints{3, 2}}}))),
      "1x4x3x4");
  EXPECT_EQ(
      shape_of(infer(
          OpKind::kConv, {info(Dims{2, 6, 30}), info(Dims{6, 2, 5}), info(Dims{6})},
          attrs_of({{"group", std::int64_t{3}}, {"dilations", Ints{2}}, {"pads", Ints{4, 0}}}))),
      "2x6x26");
  EXPECT_EQ(
      shape_of(infer(OpKind::kFusedConv, {info(Dims{1, 2, 5, 6, 7}), info(Dims{3, 2, 3, 3, 3})},
                     attrs_of({{"pads", Ints{1, 1, 1, 0, 0, 0}}}))),
      "1x3x4x5x6");
}

TEST(DenseShapes, ConvKeepsSymbolicDims) {
  SymShape x{Dim::symbolic("batch"), Dim::known(1), Dim::known(161), Dim::symbolic("T")};
  EXPECT_EQ(shape_of(infer(OpKind::kConv, {info(x), info(Dims{32, 1, 41, 11})},
                           attrs_of({{"strides", Ints{2, 2}}, {"pads", Ints{20, 5, 20, 5}}}))),
            "batchx32x81x(T+-1)/2+1");
  // Stride 1 with "same" padding keeps the time symbol itself.
  EXPECT_EQ(shape_of(infer(OpKind::kConv, {info(x), info(Dims{8, 1, 3, 11})},
                           attrs_of({{"pads", Ints{1, 5, 1, 5}}}))),
            "batchx8x161xT");
  EXPECT_EQ(shape_of(infer(OpKind::kConv, {info(x), info(Dims{8, 1, 3, 3})},
                           attrs_of({{"auto_pad", std::string("SAME_LOWER")}}))),
            "batchx8x161xT");
}

TEST(DenseShapes, ConvErrorsNameTheNode) {
  auto bad_channels = infer(OpKind::kConv, {info(Dims{1, 4, 8, 8}), info(Dims{2, 3, 3, 3})});
  ASSERT_FALSE(bad_channels.has_value());
  EXPECT_NE(bad_channels.status().message().find("node 'n' (Conv)"), std::string::npos);
  EXPECT_FALSE(infer(OpKind::kConv, {info(Dims{1, 3, 2, 2}), info(Dims{2, 3, 3, 3})}).has_value());
  EXPECT_FALSE(infer(OpKind::kConv, {info(Dims{1, 3, 8}), info(Dims{2, 3, 3})},
                     attrs_of({{"strides", Ints{0}}}))
                   .has_value());
  EXPECT_FALSE(infer(OpKind::kConv, {info(Dims{1, 3, 8}), info(Dims{2, 3, 3})},
                     attrs_of({{"pads", Ints{1}}}))
                   .has_value());
  EXPECT_FALSE(infer(OpKind::kConv, {info(Dims{3, 8}), info(Dims{2, 3, 3})}).has_value());
  EXPECT_FALSE(infer(OpKind::kConv, {info(Dims{1, 3, 8})}).has_value());
  EXPECT_FALSE(
      infer(OpKind::kConv, {info(Dims{1, 3, 8}), info(Dims{2, 3, 3}), info(Dims{3})}).has_value());
}

TEST(DenseShapes, MatMulNumpySemantics) {
  EXPECT_EQ(shape_of(infer(OpKind::kMatMul, {info(Dims{2, 1, 3, 5}), info(Dims{4, 5, 6})})),
            "2x4x3x6");
  EXPECT_EQ(shape_of(infer(OpKind::kMatMul, {info(Dims{5}), info(Dims{5, 7})})), "7");
  EXPECT_EQ(shape_of(infer(OpKind::kMatMul, {info(Dims{2, 3, 5}), info(Dims{5})})), "2x3");
  EXPECT_EQ(shape_of(infer(OpKind::kMatMul, {info(Dims{5}), info(Dims{5})})), "scalar");
  SymShape a{Dim::symbolic("batch"), Dim::symbolic("T"), Dim::known(1312)};
  EXPECT_EQ(shape_of(infer(OpKind::kMatMul, {info(a), info(Dims{1312, 1536})})), "batchxTx1536");
  EXPECT_FALSE(infer(OpKind::kMatMul, {info(Dims{3, 5}), info(Dims{4, 7})}).has_value());
  EXPECT_FALSE(infer(OpKind::kMatMul, {info(Dims{2, 3, 5}), info(Dims{3, 5, 7})}).has_value());
  EXPECT_FALSE(infer(OpKind::kMatMul, {info(Dims{}), info(Dims{3})}).has_value());
}

TEST(DenseShapes, FusedMatMulTransposesAndBias) {
  EXPECT_EQ(
      shape_of(infer(OpKind::kFusedMatMul, {info(Dims{2, 5, 3}), info(Dims{7, 5}), info(Dims{7})},
                     attrs_of({{"trans_a", std::int64_t{1}}, {"trans_b", std::int64_t{1}}}))),
      "2x3x7");
  EXPECT_FALSE(
      infer(OpKind::kFusedMatMul, {info(Dims{3, 5}), info(Dims{5, 7}), info(Dims{6})}).has_value());
}

TEST(DenseShapes, GemmTransposesAndC) {
  EXPECT_EQ(shape_of(infer(OpKind::kGemm, {info(Dims{5, 3}), info(Dims{7, 5}), info(Dims{3, 1})},
                           attrs_of({{"transA", std::int64_t{1}}, {"transB", std::int64_t{1}}}))),
            "3x7");
  EXPECT_EQ(shape_of(infer(OpKind::kGemm, {info(Dims{3, 5}), info(Dims{5, 7}), missing()})), "3x7");
  SymShape a{Dim::symbolic("T"), Dim::known(5)};
  EXPECT_EQ(shape_of(infer(OpKind::kGemm, {info(a), info(Dims{5, 7}), info(Dims{7})})), "Tx7");
  EXPECT_FALSE(
      infer(OpKind::kGemm, {info(Dims{3, 5}), info(Dims{5, 7}), info(Dims{2, 7})}).has_value());
  EXPECT_FALSE(infer(OpKind::kGemm, {info(Dims{2, 3, 5}), info(Dims{5, 7})}).has_value());
}

}  // namespace
}  // namespace voxrt::dense_test
