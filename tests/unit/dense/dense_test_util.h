// Helpers of the dense unit tests: random tensors, one-node graphs, running a tactic.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "core/thread_pool.h"
#include "ir/graph.h"
#include "ir/shape_inference.h"

namespace voxrt::dense_test {

inline Tensor random_tensor(const Dims& dims, std::uint32_t seed, float lo = -1.0f,
                            float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  Tensor t = Tensor::uninitialized(DType::kF32, dims);
  for (float& v : t.span<float>()) v = dist(rng);
  return t;
}

// One operand of a test node: constant (an initializer) or a runtime input, optionally with a
// symbolic first dim so kernels are created without knowing the batch.
struct Operand {
  Tensor tensor;
  bool constant = false;
  bool symbolic_batch = false;
  bool present = true;
};

inline Operand runtime(Tensor t, bool symbolic_batch = false) {
  return {std::move(t), false, symbolic_batch, true};
}
inline Operand constant(Tensor t) {
  return {std::move(t), true, false, true};
}
inline Operand absent() {
  return {Tensor(), false, false, false};
}

// A graph holding one node of `op` over the operands, with its output inferred.
struct OneNode {
  ir::Graph graph;
  ir::Node* node = nullptr;
  std::vector<Tensor> inputs;
  std::vector<bool> present;
};

inline std::unique_ptr<OneNode> make_node(ir::OpKind op, std::vector<Operand> operands,
                                          ir::Attributes attrs = {}) {
  auto one = std::make_unique<OneNode>();
  std::vector<ir::Value*> values;
  for (std::size_t i = 0; i < operands.size(); ++i) {
    Operand& operand = operands[i];
    one->inputs.push_back(operand.tensor);
    one->present.push_back(operand.present);
    if (!operand.present) {
      values.push_back(nullptr);
      continue;
    }
    if (operand.constant) {
      values.push_back(one->graph.add_constant("in" + std::to_string(i), operand.tensor));
    } else {
      ir::SymShape shape = ir::sym_shape_from_dims(operand.tensor.dims());
      if (operand.symbolic_batch) shape[0] = ir::Dim::symbolic("batch");
      ir::Value* v = one->graph.add_value("in" + std::to_string(i), DType::kF32, shape);
      one->graph.inputs.push_back(v);
      values.push_back(v);
    }
  }
  ir::Value* out = one->graph.add_value("out", DType::kF32, {}, false);
  one->node = one->graph.add_node(op, "node_under_test", values, {out});
  one->node->attrs = std::move(attrs);
  one->graph.outputs.push_back(out);
  Status status = ir::infer_graph(one->graph);
  EXPECT_TRUE(status.is_ok()) << status.to_string();
  return one;
}

// Runs `kernel` on the node's inputs (output dims from run-time shape inference).
inline Expected<Tensor> run_kernel(const OneNode& one, const backends::Kernel& kernel,
                                   ThreadPool& pool) {
  std::vector<ir::ValueInfo> infos;
  std::vector<const Tensor*> inputs;
  for (std::size_t i = 0; i < one.inputs.size(); ++i) {
    ir::ValueInfo info;
    info.present = one.present[i];
    if (info.present) {
      info.shape = ir::sym_shape_from_dims(one.inputs[i].dims());
      info.data = &one.inputs[i];
    }
    infos.push_back(info);
    inputs.push_back(one.present[i] ? &one.inputs[i] : nullptr);
  }
  std::vector<ir::InferredOutput> outs;
  VOXRT_RETURN_IF_ERROR(ir::infer_outputs(*one.node, infos, outs));
  auto dims = ir::known_dims(outs[0].shape);
  if (!dims) return internal_error("run-time shape inference left a dim unknown");
  Tensor y = Tensor::zeros(DType::kF32, *dims);
  // Poison the output so a kernel that skips elements fails the comparison.
  for (float& v : y.span<float>()) v = std::nanf("");
  Tensor* outputs[] = {&y};
  backends::KernelContext context{&pool};
  VOXRT_RETURN_IF_ERROR(kernel.run(inputs, outputs, context));
  return y;
}

inline Expected<Tensor> run_tactic(const OneNode& one, backends::TacticId tactic, int threads) {
  VOXRT_ASSIGN_OR_RETURN(auto kernel, backends::cpu::create_kernel(*one.node, tactic));
  ThreadPool pool(threads);
  return run_kernel(one, *kernel, pool);
}

// |got - want| <= atol + rtol * |want| everywhere (and no NaN in got).
inline ::testing::AssertionResult all_close(const Tensor& want, const Tensor& got,
                                            double atol = 1e-4, double rtol = 1e-4) {
  if (want.dims() != got.dims()) {
    return ::testing::AssertionFailure() << "dims " << dims_to_string(got.dims()) << " vs expected "
                                         << dims_to_string(want.dims());
  }
  double worst = 0.0;
  std::int64_t worst_index = -1;
  for (std::int64_t i = 0; i < want.element_count(); ++i) {
    const double w = want.data<float>()[i], g = got.data<float>()[i];
    const double excess = std::fabs(w - g) - (atol + rtol * std::fabs(w));
    if (std::isnan(g) || excess > worst) {
      worst = std::isnan(g) ? INFINITY : excess;
      worst_index = i;
    }
  }
  if (worst_index < 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "element " << worst_index << ": got " << got.data<float>()[worst_index] << ", expected "
         << want.data<float>()[worst_index];
}

// Every tactic of the node against the reference, at 1 and 2 threads.
inline void expect_tactics_match_reference(const OneNode& one, double atol = 1e-4,
                                           double rtol = 1e-4) {
  const auto tactics = backends::cpu::tactics_for(*one.node);
  ASSERT_GE(tactics.size(), 3u) << one.node->describe();
  ASSERT_EQ(tactics[0].id, backends::kReferenceTactic);
  Expected<Tensor> reference = run_tactic(one, backends::kReferenceTactic, 1);
  ASSERT_TRUE(reference.has_value()) << reference.status().to_string();
  for (const auto& tactic : tactics) {
    for (int threads : {1, 2}) {
      Expected<Tensor> got = run_tactic(one, tactic.id, threads);
      ASSERT_TRUE(got.has_value()) << tactic.name << ": " << got.status().to_string();
      EXPECT_TRUE(all_close(*reference, *got, atol, rtol))
          << "tactic " << tactic.name << ", " << threads << " threads";
    }
  }
}

// Two threads calling each tactic's one kernel at once get what one call alone gets, bit for bit.
inline void expect_concurrent_calls_identical(const OneNode& one) {
  for (const auto& tactic : backends::cpu::tactics_for(*one.node)) {
    SCOPED_TRACE(tactic.name);
    auto kernel = backends::cpu::create_kernel(*one.node, tactic.id);
    ASSERT_TRUE(kernel.has_value());
    ThreadPool serial_pool(2);
    Expected<Tensor> expected = run_kernel(one, **kernel, serial_pool);
    ASSERT_TRUE(expected.has_value());
    std::vector<int> mismatches(2, 0);
    auto worker = [&](int index) {
      ThreadPool pool(2);
      for (int i = 0; i < 20; ++i) {
        Expected<Tensor> got = run_kernel(one, **kernel, pool);
        if (!got.has_value() ||
            std::memcmp(got->raw_data(), expected->raw_data(), expected->size_bytes()) != 0) {
          ++mismatches[static_cast<std::size_t>(index)];
        }
      }
    };
    std::thread first(worker, 0), second(worker, 1);
    first.join();
    second.join();
    EXPECT_EQ(mismatches[0] + mismatches[1], 0);
  }
}

inline ir::Attributes attrs_of(
    std::initializer_list<std::pair<std::string, ir::AttributeValue>> list) {
  ir::Attributes attrs;
  for (const auto& [name, value] : list) attrs.set(name, value);
  return attrs;
}

using Ints = std::vector<std::int64_t>;

}  // namespace voxrt::dense_test
