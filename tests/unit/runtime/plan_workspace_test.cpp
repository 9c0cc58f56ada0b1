// Plan::execute with a PlanWorkspace kept between calls (memoized output shapes, reused output
// buffers) must give exactly what a fresh call gives, whatever the sequence of input shapes,
// and must never write into a tensor the caller holds.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <random>

#include "core/thread_pool.h"
#include "ir/graph.h"
#include "runtime/plan.h"

namespace voxrt {
namespace {

using ir::Dim;
using ir::OpKind;

// x [batch, 4], indices [n] (i64):
//   scaled  = x * w                      (memoizable shapes; its bytes come back through a view)
//   act     = Tanh(Unsqueeze(scaled, [0]))
//   doubled = x + x
//   flat    = Reshape(Reshape(doubled, Shape(x)), [-1])  (the first Reshape's shape is
//             computed at run time, so its output shape needs input values; doubled's bytes
//             are handed to the caller as flat)
//   rows    = Gather(x, indices, axis 0) (i64 input: shapes from values)
//   unused  = Neg(x)                     (an output nobody reads)
// outputs: (flat, rows, act, act_again = Tanh(act)), and the constant w itself.
std::unique_ptr<ir::Graph> make_graph() {
  auto g = std::make_unique<ir::Graph>();
  g->name = "workspace_test";
  ir::Value* x = g->add_value("x", DType::kF32, {Dim::symbolic("batch"), Dim::known(4)});
  ir::Value* indices = g->add_value("indices", DType::kI64, {Dim::symbolic("n")});
  ir::Value* w = g->add_constant("w", Tensor::from_vector<float>({4}, {0.5f, -1.0f, 2.0f, 0.25f}));
  ir::Value* minus_one = g->add_constant("minus_one", Tensor::from_vector<std::int64_t>({1}, {-1}));
  ir::Value* axes0 = g->add_constant("axes0", Tensor::from_vector<std::int64_t>({1}, {0}));
  auto value = [&](const char* name, DType dtype = DType::kF32) {
    return g->add_value(name, dtype, {}, false);
  };
  ir::Value* scaled = value("scaled");
  ir::Value* doubled = value("doubled");
  ir::Value* shape = value("shape", DType::kI64);
  ir::Value* as_x = value("as_x");
  ir::Value* flat = value("flat");
  ir::Value* rows = value("rows");
  ir::Value* expanded = value("expanded");
  ir::Value* act = value("act");
  ir::Value* act_again = value("act_again");
  ir::Value* unused = value("unused");
  g->add_node(OpKind::kMul, "scale", {x, w}, {scaled});
  g->add_node(OpKind::kShape, "shape_of_x", {x}, {shape});
  g->add_node(OpKind::kAdd, "double", {x, x}, {doubled});
  g->add_node(OpKind::kReshape, "reshape_to_x", {doubled, shape}, {as_x});
  g->add_node(OpKind::kReshape, "flatten", {as_x, minus_one}, {flat});
  ir::Node* gather = g->add_node(OpKind::kGather, "gather_rows", {x, indices}, {rows});
  gather->attrs.set("axis", std::int64_t{0});
  g->add_node(OpKind::kUnsqueeze, "unsqueeze", {scaled, axes0}, {expanded});
  g->add_node(OpKind::kTanh, "tanh", {expanded}, {act});
  g->add_node(OpKind::kTanh, "tanh_again", {act}, {act_again});
  g->add_node(OpKind::kNeg, "neg_unused", {x}, {unused});
  g->inputs = {x, indices};
  g->outputs = {flat, rows, act, act_again, w};
  return g;
}

Tensor random_x(std::int64_t batch, std::mt19937& rng) {
  std::normal_distribution<float> normal;
  Tensor t = Tensor::uninitialized(DType::kF32, {batch, 4});
  for (auto& v : t.span<float>()) v = normal(rng);
  return t;
}

Tensor indices_for(std::int64_t batch) {
  std::vector<std::int64_t> values;
  for (std::int64_t i = batch - 1; i >= 0; i -= 2) values.push_back(i);
  return Tensor::from_vector<std::int64_t>({static_cast<std::int64_t>(values.size())}, values);
}

void expect_same(const std::vector<Tensor>& a, const std::vector<Tensor>& b,
                 const std::string& where) {
  ASSERT_EQ(a.size(), b.size()) << where;
  for (std::size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].dims(), b[i].dims()) << where << ", output " << i;
    ASSERT_EQ(a[i].dtype(), b[i].dtype()) << where << ", output " << i;
    EXPECT_EQ(std::memcmp(a[i].raw_data(), b[i].raw_data(), a[i].size_bytes()), 0)
        << where << ", output " << i;
  }
}

class PlanWorkspaceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    graph_ = make_graph();
    auto plan = runtime::Plan::compile(*graph_, runtime::TacticPolicy::kFirstFast);
    ASSERT_TRUE(plan.has_value()) << plan.status().to_string();
    plan_ = std::move(*plan);
    context_.pool = &pool_;
  }

  std::unique_ptr<ir::Graph> graph_;
  std::unique_ptr<runtime::Plan> plan_;
  ThreadPool pool_{1};
  backends::KernelContext context_;
};

TEST_F(PlanWorkspaceTest, ChangingShapesGiveWhatFreshCallsGive) {
  runtime::PlanWorkspace workspace;
  std::mt19937 rng(7);
  int round = 0;
  // Repeats, returns to earlier shapes, and more distinct shapes than a step remembers
  // (kMaxShapeSignatures), so old signatures are replaced and then needed again.
  for (std::int64_t batch : {3, 3, 5, 1, 5, 5, 2, 3, 4, 6, 7, 8, 9, 10, 11, 3, 12, 5, 1, 9}) {
    const std::string where =
        "round " + std::to_string(round++) + ", batch " + std::to_string(batch);
    const std::vector<Tensor> inputs = {random_x(batch, rng), indices_for(batch)};
    std::vector<Tensor> kept, fresh;
    ASSERT_TRUE(plan_->execute(inputs, kept, context_, nullptr, &workspace).is_ok()) << where;
    ASSERT_TRUE(plan_->execute(inputs, fresh, context_).is_ok()) << where;
    expect_same(kept, fresh, where);
    // And what the graph means, by hand.
    ASSERT_EQ(kept[0].dims(), (Dims{batch * 4})) << where;
    ASSERT_EQ(kept[2].dims(), (Dims{1, batch, 4})) << where;
    const float w[4] = {0.5f, -1.0f, 2.0f, 0.25f};
    for (std::int64_t i = 0; i < batch * 4; ++i) {
      const float x = inputs[0].data<float>()[i];
      EXPECT_EQ(kept[0].data<float>()[i], x + x) << where;
      EXPECT_NEAR(kept[2].data<float>()[i], std::tanh(x * w[i % 4]), 1e-6) << where;
    }
    EXPECT_EQ(kept[1].dims()[0], (batch + 1) / 2) << where;
    EXPECT_EQ(kept[4].data<float>()[2], 2.0f) << where;  // the constant output survives runs
  }
}

TEST_F(PlanWorkspaceTest, OutputsHandedToTheCallerAreNeverWrittenAgain) {
  runtime::PlanWorkspace workspace;
  std::mt19937 rng(8);
  std::vector<std::vector<Tensor>> held;
  std::vector<std::vector<Tensor>> snapshots;
  for (int run = 0; run < 4; ++run) {
    std::vector<Tensor> outputs;
    ASSERT_TRUE(plan_
                    ->execute(std::vector<Tensor>{random_x(3, rng), indices_for(3)}, outputs,
                              context_, nullptr, &workspace)
                    .is_ok());
    std::vector<Tensor> copies;
    for (const Tensor& t : outputs) copies.push_back(t.clone());
    held.push_back(std::move(outputs));
    snapshots.push_back(std::move(copies));
  }
  for (std::size_t run = 0; run < held.size(); ++run)
    expect_same(held[run], snapshots[run], "run " + std::to_string(run));
}

TEST_F(PlanWorkspaceTest, IntermediateBuffersAreReusedAtTheSameShapes) {
  runtime::PlanWorkspace workspace;
  std::map<std::string, std::vector<const void*>> addresses;
  runtime::StepObserver observer = [&](const ir::Node& node, std::span<const Tensor* const>,
                                       std::span<const Tensor* const> outputs, double) {
    addresses[node.name].push_back(outputs[0]->raw_data());
  };
  std::mt19937 rng(9);
  std::vector<std::vector<Tensor>> held;  // every output stays alive, so no address repeats
  for (int run = 0; run < 3; ++run) {
    std::vector<Tensor> outputs;
    ASSERT_TRUE(plan_
                    ->execute(std::vector<Tensor>{random_x(4, rng), indices_for(4)}, outputs,
                              context_, &observer, &workspace)
                    .is_ok());
    held.push_back(std::move(outputs));
  }
  // scale's bytes are read through a view and come back after it; neg_unused's are read by
  // nobody. double's bytes leave as the graph output flat, tanh_again's are a graph output:
  // those must be new on every run.
  for (const char* name : {"scale", "neg_unused", "double", "tanh_again"}) {
    ASSERT_EQ(addresses[name].size(), 3u) << name;
    const bool reused = std::string(name) == "scale" || std::string(name) == "neg_unused";
    for (int run = 1; run < 3; ++run) {
      if (reused) {
        EXPECT_EQ(addresses[name][run], addresses[name][0]) << name << ", run " << run;
      } else {
        EXPECT_NE(addresses[name][run], addresses[name][0]) << name << ", run " << run;
      }
    }
  }
}

TEST_F(PlanWorkspaceTest, AFailedRunLeavesTheWorkspaceUsable) {
  runtime::PlanWorkspace workspace;
  std::mt19937 rng(10);
  std::vector<Tensor> outputs;
  ASSERT_TRUE(plan_
                  ->execute(std::vector<Tensor>{random_x(3, rng), indices_for(3)}, outputs,
                            context_, nullptr, &workspace)
                  .is_ok());
  const Tensor bad_indices = Tensor::from_vector<std::int64_t>({1}, {7});
  const Status failed = plan_->execute(std::vector<Tensor>{random_x(3, rng), bad_indices}, outputs,
                                       context_, nullptr, &workspace);
  ASSERT_FALSE(failed.is_ok());
  EXPECT_NE(failed.message().find("out of range"), std::string::npos) << failed.message();
  const std::vector<Tensor> inputs = {random_x(3, rng), indices_for(3)};
  std::vector<Tensor> after, fresh;
  ASSERT_TRUE(plan_->execute(inputs, after, context_, nullptr, &workspace).is_ok());
  ASSERT_TRUE(plan_->execute(inputs, fresh, context_).is_ok());
  expect_same(after, fresh, "after the failed run");
}

}  // namespace
}  // namespace voxrt
