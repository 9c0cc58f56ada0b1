// Helpers for op tests: build a one-node graph, infer its outputs from concrete inputs (as the
// runtime does), run a CPU kernel with a chosen tactic, and make random tensors of any dtype.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "core/thread_pool.h"
#include "ir/shape_inference.h"

namespace voxrt::testing {

inline constexpr DType kAllDTypes[] = {DType::kF32, DType::kF16, DType::kBF16, DType::kI8,
                                       DType::kU8,  DType::kI32, DType::kI64,  DType::kBool};

struct TestNode {
  std::unique_ptr<ir::Graph> graph = std::make_unique<ir::Graph>();
  ir::Node* node = nullptr;
};

// A node whose inputs have the dtypes and dims of `inputs` (nullptr = omitted).
inline TestNode make_node(ir::OpKind op, const std::vector<const Tensor*>& inputs,
                          std::size_t output_count, ir::Attributes attrs = {}, int opset = 17) {
  TestNode t;
  std::vector<ir::Value*> ins, outs;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    ins.push_back(inputs[i] ? t.graph->add_value(str_cat("in", i), inputs[i]->dtype(),
                                                 ir::sym_shape_from_dims(inputs[i]->dims()))
                            : nullptr);
  }
  for (std::size_t i = 0; i < output_count; ++i) {
    outs.push_back(t.graph->add_value(str_cat("out", i), DType::kF32, {}, false));
  }
  t.node = t.graph->add_node(op, "test_node", ins, outs);
  t.node->attrs = std::move(attrs);
  t.node->opset = opset;
  return t;
}

// Output dtypes/dims from shape inference with every input's data known (the run-time case).
inline Expected<std::vector<Tensor>> allocate_outputs(const ir::Node& node,
                                                      const std::vector<const Tensor*>& inputs) {
  std::vector<ir::ValueInfo> infos;
  for (const Tensor* in : inputs) {
    ir::ValueInfo info;
    if (!in) {
      info.present = false;
    } else {
      info.dtype = in->dtype();
      info.shape = ir::sym_shape_from_dims(in->dims());
      info.data = in;
    }
    infos.push_back(info);
  }
  std::vector<ir::InferredOutput> inferred;
  VOXRT_RETURN_IF_ERROR(ir::infer_outputs(node, infos, inferred));
  std::vector<Tensor> outputs;
  for (const ir::InferredOutput& o : inferred) {
    std::optional<Dims> dims = o.rank_known ? ir::known_dims(o.shape) : std::nullopt;
    if (!dims)
      return internal_error("output shape ", ir::sym_shape_to_string(o.shape), " is not known");
    Tensor t = Tensor::uninitialized(o.dtype, *dims);
    // Poison, so an element a kernel forgets to write shows up.
    std::memset(t.raw_data(), 0xA5, t.size_bytes());
    outputs.push_back(std::move(t));
  }
  return outputs;
}

inline Expected<std::vector<Tensor>> run_node(const ir::Node& node,
                                              const std::vector<const Tensor*>& inputs,
                                              backends::TacticId tactic, int threads = 1) {
  VOXRT_ASSIGN_OR_RETURN(std::vector<Tensor> outputs, allocate_outputs(node, inputs));
  VOXRT_ASSIGN_OR_RETURN(auto kernel, backends::cpu::create_kernel(node, tactic));
  ThreadPool pool(threads);
  backends::KernelContext context{&pool};
  std::vector<Tensor*> output_ptrs;
  for (Tensor& t : outputs) output_ptrs.push_back(&t);
  VOXRT_RETURN_IF_ERROR(kernel->run(inputs, output_ptrs, context));
  return outputs;
}

inline ir::Attributes attributes(
    std::initializer_list<std::pair<std::string, ir::AttributeValue>> values) {
  ir::Attributes attrs;
  for (const auto& [name, value] : values) attrs.set(name, value);
  return attrs;
}

inline ::testing::AssertionResult same_tensor(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.dims() != b.dims()) {
    return ::testing::AssertionFailure()
           << dtype_name(a.dtype()) << " " << dims_to_string(a.dims()) << " vs "
           << dtype_name(b.dtype()) << " " << dims_to_string(b.dims());
  }
  if (a.size_bytes() && std::memcmp(a.raw_data(), b.raw_data(), a.size_bytes()) != 0) {
    return ::testing::AssertionFailure() << "contents differ (" << dims_to_string(a.dims()) << ")";
  }
  return ::testing::AssertionSuccess();
}

// Runs every tactic the CPU backend lists for the node, checks they agree byte for byte (with
// 1 and 3 threads) and returns the reference outputs.
inline std::vector<Tensor> run_all_tactics(const ir::Node& node,
                                           const std::vector<const Tensor*>& inputs) {
  const auto tactics = backends::cpu::tactics_for(node);
  EXPECT_FALSE(tactics.empty()) << node.describe() << " is not supported";
  if (tactics.empty()) return {};
  EXPECT_EQ(tactics[0].id, backends::kReferenceTactic);
  auto reference = run_node(node, inputs, backends::kReferenceTactic);
  EXPECT_TRUE(reference.has_value()) << reference.status().to_string();
  if (!reference) return {};
  for (const auto& tactic : tactics) {
    for (int threads : {1, 3}) {
      auto result = run_node(node, inputs, tactic.id, threads);
      EXPECT_TRUE(result.has_value()) << tactic.name << ": " << result.status().to_string();
      if (!result) continue;
      EXPECT_EQ(result->size(), reference->size());
      for (std::size_t i = 0; i < std::min(result->size(), reference->size()); ++i) {
        EXPECT_TRUE(same_tensor((*result)[i], (*reference)[i]))
            << tactic.name << " with " << threads << " threads, output " << i;
      }
    }
  }
  return std::move(reference).value();
}

inline Tensor random_tensor(DType dtype, const Dims& dims, std::mt19937& rng) {
  Tensor t = Tensor::uninitialized(dtype, dims);
  auto* bytes = static_cast<std::uint8_t*>(t.raw_data());
  std::uniform_int_distribution<int> byte(0, 255);
  for (std::size_t i = 0; i < t.size_bytes(); ++i) {
    bytes[i] = static_cast<std::uint8_t>(dtype == DType::kBool ? byte(rng) & 1 : byte(rng));
  }
  return t;
}

inline Tensor random_f32(const Dims& dims, std::mt19937& rng) {
  Tensor t = Tensor::uninitialized(DType::kF32, dims);
  std::uniform_real_distribution<float> dist(-4.0f, 4.0f);
  for (float& v : t.span<float>()) v = dist(rng);
  return t;
}

inline Tensor i64s(const std::vector<std::int64_t>& values) {
  return Tensor::from_vector<std::int64_t>({static_cast<std::int64_t>(values.size())}, values);
}

inline Tensor arange_f32(const Dims& dims, float first = 0.0f) {
  Tensor t = Tensor::uninitialized(DType::kF32, dims);
  for (std::int64_t i = 0; i < t.element_count(); ++i)
    t.data<float>()[i] = first + static_cast<float>(i);
  return t;
}

template <typename T>
::testing::AssertionResult has_values(const Tensor& t, const Dims& dims,
                                      const std::vector<T>& values) {
  if (t.dtype() != DTypeOf<T>::value || t.dims() != dims) {
    return ::testing::AssertionFailure()
           << "got " << dtype_name(t.dtype()) << " " << dims_to_string(t.dims()) << ", expected "
           << dims_to_string(dims);
  }
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (t.data<T>()[i] != values[i]) {
      return ::testing::AssertionFailure()
             << "element " << i << " is " << +t.data<T>()[i] << ", expected " << +values[i];
    }
  }
  return ::testing::AssertionSuccess();
}

}  // namespace voxrt::testing
