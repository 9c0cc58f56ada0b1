// Shape inference of the reduction family at build time: symbolic dims, unknown axes, data
// propagation on small i64 tensors, and errors that name the node.
#include "test_support.h"

namespace voxrt::testing {
namespace {

using ir::Dim;
using ir::OpKind;
using ir::SymShape;
using ir::ValueInfo;

ValueInfo symbolic(DType dtype, SymShape shape) {
  ValueInfo info;
  info.dtype = dtype;
  info.shape = std::move(shape);
  return info;
}

ValueInfo known(const Tensor& t) {
  ValueInfo info = symbolic(t.dtype(), ir::sym_shape_from_dims(t.dims()));
  info.data = &t;
  return info;
}

ValueInfo absent() {
  ValueInfo info;
  info.present = false;
  return info;
}

struct Inferred {
  Status status;
  std::vector<ir::InferredOutput> outputs;
};

// A node whose inputs/outputs exist only for their count (infer_outputs reads the ValueInfos).
Inferred infer(OpKind op, std::vector<ValueInfo> inputs, std::size_t outputs,
               ir::Attributes attrs = {}, int opset = 18) {
  ir::Graph graph;
  std::vector<ir::Value*> in_values, out_values;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    in_values.push_back(inputs[i].present
                            ? graph.add_value("in" + std::to_string(i), inputs[i].dtype, {})
                            : nullptr);
  }
  for (std::size_t i = 0; i < outputs; ++i)
    out_values.push_back(graph.add_value("out" + std::to_string(i), DType::kF32, {}));
  ir::Node* node = graph.add_node(op, "probe", in_values, out_values);
  node->attrs = std::move(attrs);
  node->opset = opset;
  Inferred result;
  result.status = ir::infer_outputs(*node, inputs, result.outputs);
  return result;
}

const Dim kBatch = Dim::symbolic("batch");
const Dim kTime = Dim::symbolic("T");

TEST(ReductionShapes, ConstantAxesKeepSymbolsOfKeptDims) {
  const Tensor axes = i64_vector({-1});
  auto kept = infer(OpKind::kReduceMean,
                    {symbolic(DType::kF32, {kBatch, kTime, Dim::known(80)}), known(axes)}, 1);
  ASSERT_TRUE(kept.status.is_ok()) << kept.status.to_string();
  EXPECT_EQ(kept.outputs[0].shape, (SymShape{kBatch, kTime, Dim::known(1)}));
  EXPECT_EQ(kept.outputs[0].dtype, DType::kF32);
  const Tensor two = i64_vector({0, 2});
  auto dropped = infer(OpKind::kReduceMax,
                       {symbolic(DType::kF32, {kBatch, kTime, Dim::known(80)}), known(two)}, 1,
                       attributes({{"keepdims", std::int64_t{0}}}));
  ASSERT_TRUE(dropped.status.is_ok());
  EXPECT_EQ(dropped.outputs[0].shape, (SymShape{kTime}));
  auto all = infer(OpKind::kReduceSum, {symbolic(DType::kI32, {kBatch, Dim::known(3)}), absent()},
                   1, attributes({{"keepdims", std::int64_t{0}}}));
  ASSERT_TRUE(all.status.is_ok());
  EXPECT_TRUE(all.outputs[0].shape.empty());
  EXPECT_TRUE(all.outputs[0].rank_known);
  EXPECT_EQ(all.outputs[0].dtype, DType::kI32);
  auto noop = infer(OpKind::kReduceSum, {symbolic(DType::kF32, {kBatch, Dim::known(3)})}, 1,
                    attributes({{"noop_with_empty_axes", std::int64_t{1}}}));
  ASSERT_TRUE(noop.status.is_ok());
  EXPECT_EQ(noop.outputs[0].shape, (SymShape{kBatch, Dim::known(3)}));
}

TEST(ReductionShapes, AxesComputedAtRunTimeStillGiveTheRankWhenTheyCan) {
  const ValueInfo x = symbolic(DType::kF32, {kBatch, Dim::known(1), Dim::known(80)});
  auto kept = infer(OpKind::kReduceMean, {x, symbolic(DType::kI64, {Dim::known(2)})}, 1);
  ASSERT_TRUE(kept.status.is_ok());
  ASSERT_EQ(kept.outputs[0].shape.size(), 3u);
  EXPECT_FALSE(kept.outputs[0].shape[0].is_known());
  EXPECT_EQ(kept.outputs[0].shape[1], Dim::known(1));
  auto counted = infer(OpKind::kReduceMean, {x, symbolic(DType::kI64, {Dim::known(2)})}, 1,
                       attributes({{"keepdims", std::int64_t{0}}}));
  ASSERT_TRUE(counted.status.is_ok());
  EXPECT_TRUE(counted.outputs[0].rank_known);
  EXPECT_EQ(counted.outputs[0].shape.size(), 1u);
  auto unknown = infer(OpKind::kReduceMean, {x, symbolic(DType::kI64, {Dim::symbolic("n")})}, 1,
                       attributes({{"keepdims", std::int64_t{0}}}));
  ASSERT_TRUE(unknown.status.is_ok());
  EXPECT_FALSE(unknown.outputs[0].rank_known);
  ValueInfo unranked = x;
  unranked.rank_known = false;
  auto no_rank = infer(OpKind::kReduceSum, {unranked}, 1);
  ASSERT_TRUE(no_rank.status.is_ok());
  EXPECT_FALSE(no_rank.outputs[0].rank_known);
}

TEST(ReductionShapes, SmallI64ReductionsPropagateTheirData) {
  const Tensor shape = Tensor::from_vector<std::int64_t>({2, 3}, {2, 3, 4, 5, 6, 7});
  const Tensor axis1 = i64_vector({1});
  struct Case {
    OpKind op;
    std::vector<std::int64_t> expected;
  } cases[] = {{OpKind::kReduceSum, {9, 18}},
               {OpKind::kReduceProd, {24, 210}},
               {OpKind::kReduceMax, {4, 7}},
               {OpKind::kReduceMin, {2, 5}}};
  for (const Case& c : cases) {
    auto r =
        infer(c.op, {known(shape), known(axis1)}, 1, attributes({{"keepdims", std::int64_t{0}}}));
    ASSERT_TRUE(r.status.is_ok()) << r.status.to_string();
    ASSERT_TRUE(r.outputs[0].data.has_value()) << ir::op_name(c.op);
    EXPECT_EQ(r.outputs[0].data->dims(), (Dims{2}));
    EXPECT_EQ(r.outputs[0].data->to_i64_vector(), c.expected) << ir::op_name(c.op);
  }
  // All axes of a Shape-like vector: the element count that Reshape chains need.
  const Tensor dims = i64_vector({3, 5, 7});
  auto count =
      infer(OpKind::kReduceProd, {known(dims)}, 1, attributes({{"keepdims", std::int64_t{0}}}));
  ASSERT_TRUE(count.status.is_ok());
  ASSERT_TRUE(count.outputs[0].data.has_value());
  EXPECT_EQ(count.outputs[0].data->to_i64_vector(), (std::vector<std::int64_t>{105}));
  // Not for floats, means or big tensors.
  const Tensor f = Tensor::from_vector<float>({2}, {1, 2});
  EXPECT_FALSE(infer(OpKind::kReduceSum, {known(f)}, 1).outputs[0].data.has_value());
  EXPECT_FALSE(infer(OpKind::kReduceMean, {known(dims)}, 1).outputs[0].data.has_value());
  const Tensor big = Tensor::zeros(DType::kI64, {65});
  EXPECT_FALSE(infer(OpKind::kReduceSum, {known(big)}, 1).outputs[0].data.has_value());
}

TEST(ReductionShapes, BadAxesAndInputsAreErrorsNamingTheNode) {
  const ValueInfo x = symbolic(DType::kF32, {kBatch, Dim::known(3)});
  const Tensor out_of_range = i64_vector({2});
  const Tensor twice = i64_vector({1, -1});
  const Tensor two_d = Tensor::from_vector<std::int64_t>({1, 1}, {0});
  for (const Tensor* axes : {&out_of_range, &twice, &two_d}) {
    auto r = infer(OpKind::kReduceSum, {x, known(*axes)}, 1);
    ASSERT_FALSE(r.status.is_ok()) << dims_to_string(axes->dims());
    EXPECT_NE(r.status.message().find("probe"), std::string::npos) << r.status.message();
  }
  EXPECT_FALSE(
      infer(OpKind::kReduceSum, {symbolic(DType::kBool, {Dim::known(2)})}, 1).status.is_ok());
  EXPECT_FALSE(infer(OpKind::kReduceSum, {absent()}, 1).status.is_ok());
  EXPECT_FALSE(infer(OpKind::kReduceSum, {x, known(i64_vector({0})), x}, 1).status.is_ok());
  EXPECT_FALSE(
      infer(OpKind::kReduceSum, {x}, 1, attributes({{"axes", std::vector<std::int64_t>{0}}}))
          .status.is_ok());
}

TEST(ReductionShapes, ArgMaxGivesI64AndChecksItsAxis) {
  const ValueInfo x = symbolic(DType::kF32, {kBatch, kTime, Dim::known(29)});
  auto kept = infer(OpKind::kArgMax, {x}, 1, attributes({{"axis", std::int64_t{-1}}}));
  ASSERT_TRUE(kept.status.is_ok());
  EXPECT_EQ(kept.outputs[0].dtype, DType::kI64);
  EXPECT_EQ(kept.outputs[0].shape, (SymShape{kBatch, kTime, Dim::known(1)}));
  auto dropped = infer(OpKind::kArgMax, {x}, 1,
                       attributes({{"axis", std::int64_t{1}}, {"keepdims", std::int64_t{0}}}));
  ASSERT_TRUE(dropped.status.is_ok());
  EXPECT_EQ(dropped.outputs[0].shape, (SymShape{kBatch, Dim::known(29)}));
  EXPECT_FALSE(
      infer(OpKind::kArgMax, {x}, 1, attributes({{"axis", std::int64_t{3}}})).status.is_ok());
  auto empty = infer(OpKind::kArgMax, {symbolic(DType::kF32, {Dim::known(0), Dim::known(2)})}, 1);
  ASSERT_FALSE(empty.status.is_ok());
  EXPECT_NE(empty.status.message().find("probe"), std::string::npos);
}

TEST(ReductionShapes, SoftmaxAxisDefaultsDependOnOpset) {
  const ValueInfo x = symbolic(DType::kF32, {kBatch, kTime});
  auto y = infer(OpKind::kSoftmax, {x}, 1, {}, 13);
  ASSERT_TRUE(y.status.is_ok());
  EXPECT_EQ(y.outputs[0].shape, x.shape);
  EXPECT_TRUE(infer(OpKind::kLogSoftmax, {x}, 1, attributes({{"axis", std::int64_t{-2}}}), 11)
                  .status.is_ok());
  EXPECT_FALSE(
      infer(OpKind::kSoftmax, {x}, 1, attributes({{"axis", std::int64_t{2}}}), 13).status.is_ok());
  // Opset 11's default axis 1 is out of range for a vector; opset 13's -1 is fine.
  const ValueInfo vector = symbolic(DType::kF32, {Dim::known(5)});
  EXPECT_FALSE(infer(OpKind::kSoftmax, {vector}, 1, {}, 11).status.is_ok());
  EXPECT_TRUE(infer(OpKind::kSoftmax, {vector}, 1, {}, 13).status.is_ok());
  EXPECT_FALSE(infer(OpKind::kSoftmax, {symbolic(DType::kI64, {Dim::known(5)})}, 1).status.is_ok());
}

TEST(ReductionShapes, LayerNormStatisticsKeepReducedDimsAsOne) {
  const ValueInfo x = symbolic(DType::kF32, {kBatch, kTime, Dim::known(16), Dim::known(8)});
  const ValueInfo scale = symbolic(DType::kF32, {Dim::known(16), Dim::known(8)});
  auto r = infer(OpKind::kLayerNormalization, {x, scale, scale}, 3,
                 attributes({{"axis", std::int64_t{-2}}}), 17);
  ASSERT_TRUE(r.status.is_ok()) << r.status.to_string();
  EXPECT_EQ(r.outputs[0].shape, x.shape);
  EXPECT_EQ(r.outputs[1].shape, (SymShape{kBatch, kTime, Dim::known(1), Dim::known(1)}));
  EXPECT_EQ(r.outputs[2].shape, r.outputs[1].shape);
  EXPECT_EQ(r.outputs[2].dtype, DType::kF32);
  // Scale must broadcast to the normalized dims [8] (axis -1): [16, 8] does not.
  auto bad = infer(OpKind::kLayerNormalization, {x, scale}, 1, {}, 17);
  ASSERT_FALSE(bad.status.is_ok());
  EXPECT_NE(bad.status.message().find("Scale"), std::string::npos);
  EXPECT_FALSE(infer(OpKind::kLayerNormalization, {x}, 1, {}, 17).status.is_ok());
  EXPECT_FALSE(
      infer(OpKind::kLayerNormalization, {x, scale}, 1, attributes({{"axis", std::int64_t{4}}}), 17)
          .status.is_ok());
  EXPECT_FALSE(
      infer(OpKind::kLayerNormalization, {x, symbolic(DType::kI64, {Dim::known(8)})}, 1, {}, 17)
          .status.is_ok());
}

TEST(ReductionShapes, BatchNormChecksRankChannelsAndTrainingOutputs) {
  const ValueInfo x = symbolic(DType::kF32, {kBatch, Dim::known(4), kTime});
  const ValueInfo param = symbolic(DType::kF32, {Dim::known(4)});
  auto ok = infer(OpKind::kBatchNormalization, {x, param, param, param, param}, 1, {}, 15);
  ASSERT_TRUE(ok.status.is_ok()) << ok.status.to_string();
  EXPECT_EQ(ok.outputs[0].shape, x.shape);
  const ValueInfo wrong = symbolic(DType::kF32, {Dim::known(5)});
  auto mismatch = infer(OpKind::kBatchNormalization, {x, param, wrong, param, param}, 1, {}, 15);
  ASSERT_FALSE(mismatch.status.is_ok());
  EXPECT_NE(mismatch.status.message().find("channels"), std::string::npos);
  EXPECT_FALSE(infer(OpKind::kBatchNormalization,
                     {symbolic(DType::kF32, {Dim::known(4)}), param, param, param, param}, 1, {},
                     15)
                   .status.is_ok());
  EXPECT_FALSE(infer(OpKind::kBatchNormalization, {x, param, param, param, param}, 3, {}, 15)
                   .status.is_ok());
  EXPECT_FALSE(infer(OpKind::kBatchNormalization, {x, param, param, param, param}, 1,
                     attributes({{"training_mode", std::int64_t{1}}}), 15)
                   .status.is_ok());
  EXPECT_FALSE(
      infer(OpKind::kBatchNormalization, {x, param, param, param}, 1, {}, 15).status.is_ok());
}

}  // namespace
}  // namespace voxrt::testing
