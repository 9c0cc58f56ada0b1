#include <gtest/gtest.h>

#include <cmath>

#include "core/thread_pool.h"
#include "ir/graph.h"
#include "voxrt/tensor.h"

namespace voxrt {
namespace {

TEST(Tensor, ReshapeKeepsBytesAndRejectsWrongCounts) {
  Tensor t = Tensor::from_vector<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  auto r = t.reshaped({3, 2});
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->data<float>(), t.data<float>());
  auto bad = t.reshaped({4, 2});
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.status().message().find("2x3"), std::string::npos);
}

TEST(DType, HalfAndBfloat16RoundTrip) {
  for (float v : {0.0f, 1.0f, -2.5f, 65504.0f, 1e-5f, 3.14159f}) {
    EXPECT_NEAR(half_bits_to_float(float_to_half_bits(v)), v, std::fabs(v) * 1e-3f + 1e-7f);
    EXPECT_NEAR(bfloat16_bits_to_float(float_to_bfloat16_bits(v)), v, std::fabs(v) * 8e-3f);
  }
  EXPECT_TRUE(std::isinf(half_bits_to_float(float_to_half_bits(1e6f))));
  EXPECT_TRUE(std::isnan(half_bits_to_float(float_to_half_bits(NAN))));
}

TEST(ThreadPool, CoversEveryIndexOnce) {
  ThreadPool pool(3);
  std::vector<int> hits(1000, 0);
  for (int round = 0; round < 20; ++round) {
    pool.parallel_for(1000, 10, [&](std::int64_t b, std::int64_t e) {
      for (auto i = b; i < e; ++i) hits[static_cast<std::size_t>(i)]++;
    });
  }
  for (int h : hits) EXPECT_EQ(h, 20);
}

TEST(Graph, TopologicalOrderAndCycleDetection) {
  ir::Graph g;
  ir::Value* x = g.add_value("x", DType::kF32, {ir::Dim::known(2)});
  g.inputs.push_back(x);
  ir::Value* y = g.add_value("y", DType::kF32, {});
  ir::Value* z = g.add_value("z", DType::kF32, {});
  g.add_node(ir::OpKind::kRelu, "b", {y}, {z});
  g.add_node(ir::OpKind::kRelu, "a", {x}, {y});
  g.outputs.push_back(z);
  auto order = g.topological_order();
  ASSERT_TRUE(order.has_value());
  EXPECT_EQ((*order)[0]->name, "a");
  EXPECT_TRUE(g.validate().is_ok());
  g.nodes()[0]->inputs[0] = z;  // b reads its own output: a cycle
  EXPECT_FALSE(g.topological_order().has_value());
}

}  // namespace
}  // namespace voxrt
