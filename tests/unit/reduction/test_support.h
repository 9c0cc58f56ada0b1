// Helpers for the reduction family's tests: build a one-node graph, run shape inference and a
// kernel tactic on it, make random tensors and compare them.
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

namespace voxrt::testing {

inline constexpr backends::TacticId kReference = 0;
inline constexpr backends::TacticId kVectorized = 1;

// One node in a graph of its own; inputs marked constant become constant values (like axes).
struct SingleNode {
  std::unique_ptr<ir::Graph> graph = std::make_unique<ir::Graph>();
  ir::Node* node = nullptr;
};

// `inputs[i]` null = omitted optional input; `constant[i]` makes input i a constant value.
inline SingleNode make_node(ir::OpKind op, const std::vector<const Tensor*>& inputs,
                            std::size_t outputs, ir::Attributes attrs = {}, int opset = 17,
                            std::vector<bool> constant = {}) {
  SingleNode single;
  std::vector<ir::Value*> in_values;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i]) {
      in_values.push_back(nullptr);
      continue;
    }
    const std::string name = "in" + std::to_string(i);
    if (i < constant.size() && constant[i]) {
      in_values.push_back(single.graph->add_constant(name, inputs[i]->clone()));
    } else {
      in_values.push_back(single.graph->add_value(name, inputs[i]->dtype(),
                                                  ir::sym_shape_from_dims(inputs[i]->dims())));
    }
  }
  std::vector<ir::Value*> out_values;
  for (std::size_t i = 0; i < outputs; ++i) {
    out_values.push_back(
        single.graph->add_value("out" + std::to_string(i), DType::kF32, {}, false));
  }
  single.node = single.graph->add_node(op, "test_node", in_values, out_values);
  single.node->attrs = std::move(attrs);
  single.node->opset = opset;
  return single;
}

inline ir::Attributes attributes(
    std::initializer_list<std::pair<std::string, ir::AttributeValue>> list) {
  ir::Attributes attrs;
  for (const auto& [name, value] : list) attrs.set(name, value);
  return attrs;
}

// Run-time shape inference (every input's data known), then the kernel; outputs in node order
// (an invalid Tensor for an omitted output).
inline Expected<std::vector<Tensor>> run_node(const ir::Node& node,
                                              const std::vector<const Tensor*>& inputs,
                                              backends::TacticId tactic, int threads = 1) {
  std::vector<ir::ValueInfo> infos;
  for (const Tensor* t : inputs) {
    ir::ValueInfo info;
    if (!t) {
      info.present = false;
    } else {
      info.dtype = t->dtype();
      info.shape = ir::sym_shape_from_dims(t->dims());
      info.data = t;
    }
    infos.push_back(info);
  }
  std::vector<ir::InferredOutput> inferred;
  VOXRT_RETURN_IF_ERROR(ir::infer_outputs(node, infos, inferred));
  std::vector<Tensor> outputs(node.outputs.size());
  std::vector<Tensor*> output_ptrs(node.outputs.size(), nullptr);
  for (std::size_t i = 0; i < node.outputs.size(); ++i) {
    if (!node.outputs[i]) continue;
    auto dims = ir::known_dims(inferred[i].shape);
    if (!dims) return internal_error("run_node: output ", i, " has unknown dims");
    // Garbage-filled, so a kernel that skips an element is caught.
    outputs[i] = Tensor::uninitialized(inferred[i].dtype, *dims);
    std::memset(outputs[i].raw_data(), 0xA5, outputs[i].size_bytes());
    output_ptrs[i] = &outputs[i];
  }
  VOXRT_ASSIGN_OR_RETURN(auto kernel, backends::cpu::make_reduction_kernel(node, tactic));
  ThreadPool pool(threads);
  backends::KernelContext context{&pool};
  VOXRT_RETURN_IF_ERROR(kernel->run(inputs, output_ptrs, context));
  return outputs;
}

inline Tensor random_f32(const Dims& dims, std::mt19937& rng, float low = -3.0f,
                         float high = 3.0f) {
  std::uniform_real_distribution<float> dist(low, high);
  Tensor t = Tensor::uninitialized(DType::kF32, dims);
  for (float& v : t.span<float>()) v = dist(rng);
  return t;
}

template <typename T>
Tensor random_int(const Dims& dims, std::mt19937& rng, int low, int high) {
  std::uniform_int_distribution<int> dist(low, high);
  Tensor t = Tensor::uninitialized(DTypeOf<T>::value, dims);
  for (T& v : t.template span<T>()) v = static_cast<T>(dist(rng));
  return t;
}

inline Tensor i64_vector(const std::vector<std::int64_t>& values) {
  return Tensor::from_vector<std::int64_t>({static_cast<std::int64_t>(values.size())}, values);
}

inline std::vector<double> values_of(const Tensor& t) {
  std::vector<double> out(static_cast<std::size_t>(t.element_count()));
  for (std::size_t i = 0; i < out.size(); ++i)
    out[i] = t.element_as_double(static_cast<std::int64_t>(i));
  return out;
}

// |a - b| <= atol + rtol * |b| element by element (NaN equals NaN, inf equals the same inf).
inline ::testing::AssertionResult all_close(const Tensor& actual, const Tensor& expected,
                                            double rtol, double atol) {
  if (actual.dims() != expected.dims()) {
    return ::testing::AssertionFailure() << "dims " << dims_to_string(actual.dims())
                                         << " vs expected " << dims_to_string(expected.dims());
  }
  if (actual.dtype() != expected.dtype()) {
    return ::testing::AssertionFailure() << "dtype " << dtype_name(actual.dtype())
                                         << " vs expected " << dtype_name(expected.dtype());
  }
  for (std::int64_t i = 0; i < actual.element_count(); ++i) {
    const double a = actual.element_as_double(i), e = expected.element_as_double(i);
    if (std::isnan(e) && std::isnan(a)) continue;
    if (std::isinf(e) && a == e) continue;
    if (!(std::fabs(a - e) <= atol + rtol * std::fabs(e))) {
      return ::testing::AssertionFailure()
             << "element " << i << " of " << dims_to_string(actual.dims()) << ": " << a
             << " vs expected " << e;
    }
  }
  return ::testing::AssertionSuccess();
}

inline ::testing::AssertionResult equals(const Tensor& actual, Dims dims,
                                         const std::vector<double>& expected,
                                         double tolerance = 1e-6) {
  Tensor e = Tensor::uninitialized(DType::kF32, std::move(dims));
  if (static_cast<std::size_t>(e.element_count()) != expected.size()) {
    return ::testing::AssertionFailure() << "test bug: " << expected.size() << " expected values";
  }
  std::vector<double> got = values_of(actual);
  if (actual.dims() != e.dims()) {
    return ::testing::AssertionFailure() << "dims " << dims_to_string(actual.dims())
                                         << " vs expected " << dims_to_string(e.dims());
  }
  for (std::size_t i = 0; i < expected.size(); ++i) {
    if (std::isnan(expected[i]) && std::isnan(got[i])) continue;
    if (std::isinf(expected[i]) && got[i] == expected[i]) continue;
    if (!(std::fabs(got[i] - expected[i]) <= tolerance * std::max(1.0, std::fabs(expected[i])))) {
      return ::testing::AssertionFailure()
             << "element " << i << ": " << got[i] << " vs expected " << expected[i];
    }
  }
  return ::testing::AssertionSuccess();
}

}  // namespace voxrt::testing
