// TacticPolicy::kFirstFastPrepacked (the INT8 calibration's plans): a MatMul with constant
// weights runs on the kernel that packs them once where that kernel applies, and computes what
// the first fast tactic computes; elsewhere it is kFirstFast.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>

#include "backends/cpu/dense/dense_kernels.h"
#include "core/thread_pool.h"
#include "ir/graph.h"
#include "runtime/plan.h"

namespace voxrt {
namespace {

using ir::Dim;

// y = x [batch, 64] x w [64, 96] (constant), then Tanh.
std::unique_ptr<ir::Graph> make_dense_graph() {
  auto g = std::make_unique<ir::Graph>();
  g->name = "tactic_policy_test";
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.0f, 0.2f);
  std::vector<float> weights(64 * 96);
  for (float& v : weights) v = normal(rng);
  ir::Value* x = g->add_value("x", DType::kF32, {Dim::symbolic("batch"), Dim::known(64)});
  ir::Value* w = g->add_constant("w", Tensor::from_vector<float>({64, 96}, weights));
  ir::Value* product = g->add_value("product", DType::kF32, {}, false);
  ir::Value* y = g->add_value("y", DType::kF32, {}, false);
  g->add_node(ir::OpKind::kMatMul, "matmul", {x, w}, {product});
  g->add_node(ir::OpKind::kTanh, "tanh", {product}, {y});
  g->inputs = {x};
  g->outputs = {y};
  return g;
}

std::string tactic_of(const runtime::Plan& plan, const std::string& node) {
  for (const auto& [n, tactic] : plan.tactics())
    if (n->name == node) return tactic;
  return "";
}

TEST(PlanTacticPolicy, PrepackedPolicyPicksThePackingKernelAndComputesTheSame) {
  auto graph = make_dense_graph();
  auto first_fast = runtime::Plan::compile(*graph, runtime::TacticPolicy::kFirstFast);
  auto prepacked = runtime::Plan::compile(*graph, runtime::TacticPolicy::kFirstFastPrepacked);
  ASSERT_TRUE(first_fast.has_value()) << first_fast.status().to_string();
  ASSERT_TRUE(prepacked.has_value()) << prepacked.status().to_string();

  const ir::Node* matmul = nullptr;
  for (const ir::Node* node : graph->nodes())
    if (node->name == "matmul") matmul = node;
  ASSERT_NE(matmul, nullptr);
  EXPECT_EQ(tactic_of(**first_fast, "matmul"), "openblas");
  if (backends::cpu::dense::matmul_packed_applies(*matmul)) {
    EXPECT_EQ(tactic_of(**prepacked, "matmul"), "avx512_packed");
  } else {  // no AVX-512 here: nothing packs, so the policy is kFirstFast's
    EXPECT_EQ(tactic_of(**prepacked, "matmul"), "openblas");
  }
  // Nodes without a packing kernel keep the first fast tactic.
  EXPECT_EQ(tactic_of(**prepacked, "tanh"), tactic_of(**first_fast, "tanh"));

  ThreadPool pool(1);
  backends::KernelContext context{&pool};
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  for (std::int64_t batch : {1, 8}) {
    std::vector<float> values(static_cast<std::size_t>(batch) * 64);
    for (float& v : values) v = uniform(rng);
    const Tensor x = Tensor::from_vector<float>({batch, 64}, values);
    std::vector<Tensor> a, b;
    ASSERT_TRUE((*first_fast)->execute(std::span<const Tensor>(&x, 1), a, context).is_ok());
    ASSERT_TRUE((*prepacked)->execute(std::span<const Tensor>(&x, 1), b, context).is_ok());
    ASSERT_EQ(a[0].dims(), b[0].dims());
    const auto ya = a[0].span<float>();
    const auto yb = b[0].span<float>();
    for (std::size_t i = 0; i < ya.size(); ++i)
      EXPECT_NEAR(ya[i], yb[i], 1e-5f) << "batch " << batch;
  }
}

}  // namespace
}  // namespace voxrt
