// Helpers for the elementwise tests: random tensors, running one node through shape inference
// and a CPU kernel, and comparing tensors.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "core/thread_pool.h"
#include "ir/graph.h"
#include "ir/shape_inference.h"

namespace voxrt::test {

inline Tensor random_f32(const Dims& dims, std::mt19937& rng, float lo = -3.0f, float hi = 3.0f) {
  Tensor t = Tensor::uninitialized(DType::kF32, dims);
  std::uniform_real_distribution<float> dist(lo, hi);
  for (float& v : t.span<float>()) v = dist(rng);
  return t;
}

template <typename T>
Tensor random_int(const Dims& dims, std::mt19937& rng, std::int64_t lo, std::int64_t hi) {
  Tensor t = Tensor::uninitialized(DTypeOf<T>::value, dims);
  std::uniform_int_distribution<std::int64_t> dist(lo, hi);
  for (T& v : t.span<T>()) v = static_cast<T>(dist(rng));
  return t;
}

inline Tensor random_bool(const Dims& dims, std::mt19937& rng) {
  Tensor t = Tensor::uninitialized(DType::kBool, dims);
  std::bernoulli_distribution dist(0.5);
  for (std::int64_t i = 0; i < t.element_count(); ++i) t.data<bool>()[i] = dist(rng);
  return t;
}

// Runs one node of `op` on `inputs` (nullptr = omitted optional input): shape inference in
// run-time mode (every input has data), output allocation, then the kernel of `tactic`.
inline Expected<std::vector<Tensor>> run_op(ir::OpKind op, const std::vector<const Tensor*>& inputs,
                                            const ir::Attributes& attrs = {},
                                            backends::TacticId tactic = 0, int threads = 1,
                                            std::size_t output_count = 1) {
  ir::Graph graph;
  std::vector<ir::Value*> values;
  std::vector<ir::ValueInfo> infos;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    ir::ValueInfo info;
    if (!inputs[i]) {
      values.push_back(nullptr);
      info.present = false;
    } else {
      values.push_back(graph.add_value("in" + std::to_string(i), inputs[i]->dtype(),
                                       ir::sym_shape_from_dims(inputs[i]->dims())));
      info.dtype = inputs[i]->dtype();
      info.shape = ir::sym_shape_from_dims(inputs[i]->dims());
      info.data = inputs[i];
    }
    infos.push_back(info);
  }
  std::vector<ir::Value*> outs;
  for (std::size_t i = 0; i < output_count; ++i) {
    outs.push_back(graph.add_value("out" + std::to_string(i), DType::kF32, {}));
  }
  ir::Node* node = graph.add_node(op, "node", values, outs);
  node->attrs = attrs;
  node->opset = 17;
  std::vector<ir::InferredOutput> inferred;
  VOXRT_RETURN_IF_ERROR(ir::infer_outputs(*node, infos, inferred));
  std::vector<Tensor> results;
  std::vector<Tensor*> result_ptrs;
  for (std::size_t i = 0; i < output_count; ++i) {
    outs[i]->dtype = inferred[i].dtype;
    outs[i]->shape = inferred[i].shape;
    auto dims = ir::known_dims(inferred[i].shape);
    if (!dims) return internal_error("output ", i, " dims unknown at run time");
    results.push_back(Tensor::zeros(inferred[i].dtype, *dims));
  }
  for (Tensor& t : results) result_ptrs.push_back(&t);
  VOXRT_ASSIGN_OR_RETURN(auto kernel, backends::cpu::create_kernel(*node, tactic));
  ThreadPool pool(threads);
  backends::KernelContext context{&pool};
  VOXRT_RETURN_IF_ERROR(kernel->run(inputs, result_ptrs, context));
  return results;
}

// Element-by-element comparison; NaN equals NaN. Integers and bools must match exactly.
inline ::testing::AssertionResult tensors_close(const Tensor& expected, const Tensor& actual,
                                                double atol = 1e-6, double rtol = 1e-6) {
  if (expected.dtype() != actual.dtype() || expected.dims() != actual.dims()) {
    return ::testing::AssertionFailure()
           << "expected " << dtype_name(expected.dtype()) << " " << dims_to_string(expected.dims())
           << ", found " << dtype_name(actual.dtype()) << " " << dims_to_string(actual.dims());
  }
  const bool exact = !is_floating(expected.dtype());
  for (std::int64_t i = 0; i < expected.element_count(); ++i) {
    if (exact) {
      if (expected.element_as_i64(i) != actual.element_as_i64(i)) {
        return ::testing::AssertionFailure()
               << "element " << i << ": expected " << expected.element_as_i64(i) << ", found "
               << actual.element_as_i64(i);
      }
      continue;
    }
    const double e = expected.element_as_double(i), a = actual.element_as_double(i);
    if (std::isnan(e) && std::isnan(a)) continue;
    if (std::isinf(e) && e == a) continue;
    if (!(std::fabs(e - a) <= atol + rtol * std::fabs(e))) {
      return ::testing::AssertionFailure()
             << "element " << i << " of " << dims_to_string(expected.dims()) << ": expected " << e
             << ", found " << a << " (diff " << std::fabs(e - a) << ")";
    }
  }
  return ::testing::AssertionSuccess();
}

}  // namespace voxrt::test
