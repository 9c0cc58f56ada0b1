// Helpers for the attention tests: an Attention node in a graph of its own, a run of one CPU
// tactic on it, and the unfused computation (MatMul, Mul, Add, Where, Softmax, MatMul) that the
// fused op must equal, written out naively in float as those ops compute it.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "core/thread_pool.h"
#include "ir/attention_params.h"
#include "ir/graph.h"
#include "ir/shape_inference.h"

namespace voxrt::attention_test {

struct AttentionCase {
  Tensor q, k, v;
  std::optional<Tensor> mask, bias;
  ir::Attributes attrs;
};

struct SingleNode {
  std::unique_ptr<ir::Graph> graph = std::make_unique<ir::Graph>();
  ir::Node* node = nullptr;
};

inline std::vector<const Tensor*> case_inputs(const AttentionCase& c) {
  std::vector<const Tensor*> inputs{&c.q, &c.k, &c.v};
  if (c.mask || c.bias) inputs.push_back(c.mask ? &*c.mask : nullptr);
  if (c.bias) inputs.push_back(&*c.bias);
  return inputs;
}

inline SingleNode make_attention_node(const AttentionCase& c) {
  SingleNode single;
  std::vector<ir::Value*> inputs;
  int index = 0;
  for (const Tensor* t : case_inputs(c)) {
    const std::string name = "in" + std::to_string(index++);
    inputs.push_back(
        t ? single.graph->add_value(name, t->dtype(), ir::sym_shape_from_dims(t->dims()))
          : nullptr);
  }
  ir::Value* out = single.graph->add_value("out", DType::kF32, {}, false);
  single.node = single.graph->add_node(ir::OpKind::kAttention, "attention", inputs, {out});
  single.node->attrs = c.attrs;
  return single;
}

// Shape inference with every dim known, then the tactic's kernel on garbage-filled outputs.
inline Expected<Tensor> run_attention(const AttentionCase& c, backends::TacticId tactic,
                                      int threads = 1) {
  SingleNode single = make_attention_node(c);
  const std::vector<const Tensor*> inputs = case_inputs(c);
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
  VOXRT_RETURN_IF_ERROR(ir::infer_outputs(*single.node, infos, inferred));
  auto dims = ir::known_dims(inferred[0].shape);
  if (!dims) return internal_error("run_attention: the output's dims are not known");
  Tensor out = Tensor::uninitialized(inferred[0].dtype, *dims);
  std::memset(out.raw_data(), 0xA5, out.size_bytes());
  VOXRT_ASSIGN_OR_RETURN(auto kernel, backends::cpu::create_kernel(*single.node, tactic));
  ThreadPool pool(threads);
  backends::KernelContext context{&pool};
  Tensor* outputs[] = {&out};
  VOXRT_RETURN_IF_ERROR(kernel->run(inputs, outputs, context));
  return out;
}

// Index of (b, h, i, j) in a tensor broadcast to [B, H, Sq, Sk].
inline std::int64_t broadcast_offset(const Dims& dims, const std::int64_t (&coords)[4]) {
  std::int64_t offset = 0;
  for (std::size_t a = 0; a < dims.size(); ++a) {
    const std::int64_t c = coords[4 - dims.size() + a];
    offset = offset * dims[a] + (dims[a] == 1 ? 0 : c);
  }
  return offset;
}

// The unfused graph in float, op by op: S = Q K^T (float sums), S *= scale, S += bias,
// S = Where(mask, S, fill) or S += mask, causal Where(-inf), P = Softmax(S), O = P V.
inline Tensor unfused_attention(const AttentionCase& c) {
  SingleNode single = make_attention_node(c);
  const ir::AttentionParams params = *ir::attention_params(*single.node);
  const bool seq_major = params.layout == ir::AttentionLayout::kSequenceMajor;
  const ir::AttentionDims d =
      *ir::attention_dims("test", params.layout, c.q.dims(), c.k.dims(), c.v.dims());
  const float scale = ir::attention_scale(params, d);
  auto at = [&](const Tensor& t, std::int64_t b, std::int64_t h, std::int64_t s, std::int64_t x) {
    const Dims& dims = t.dims();
    const std::int64_t index = seq_major ? ((b * dims[1] + s) * dims[2] + h) * dims[3] + x
                                         : ((b * dims[1] + h) * dims[2] + s) * dims[3] + x;
    return t.data<float>()[index];
  };
  Tensor out = Tensor::uninitialized(DType::kF32, ir::attention_output_dims(d, params.layout));
  const std::int64_t group = d.heads / d.kv_heads;
  std::vector<float> scores(static_cast<std::size_t>(d.kv_len));
  for (std::int64_t b = 0; b < d.batch; ++b) {
    for (std::int64_t h = 0; h < d.heads; ++h) {
      for (std::int64_t i = 0; i < d.q_len; ++i) {
        for (std::int64_t j = 0; j < d.kv_len; ++j) {
          float dot = 0.0f;
          for (std::int64_t x = 0; x < d.key_dim; ++x)
            dot += at(c.q, b, h, i, x) * at(c.k, b, h / group, j, x);
          float s = dot * scale;
          const std::int64_t coords[4] = {b, h, i, j};
          if (c.bias) s += c.bias->data<float>()[broadcast_offset(c.bias->dims(), coords)];
          if (c.mask && c.mask->dtype() == DType::kF32)
            s += c.mask->data<float>()[broadcast_offset(c.mask->dims(), coords)];
          if (c.mask && c.mask->dtype() == DType::kBool &&
              !c.mask->data<bool>()[broadcast_offset(c.mask->dims(), coords)])
            s = params.mask_fill;
          if (params.causal && j > i + d.kv_len - d.q_len)
            s = -std::numeric_limits<float>::infinity();
          scores[static_cast<std::size_t>(j)] = s;
        }
        float max = -std::numeric_limits<float>::infinity();
        for (float s : scores) max = std::max(max, s);
        float sum = 0.0f;
        for (float& s : scores) {
          s = std::exp(s - max);
          sum += s;
        }
        for (float& s : scores) s /= sum;
        for (std::int64_t x = 0; x < d.value_dim; ++x) {
          float acc = d.kv_len == 0 ? std::numeric_limits<float>::quiet_NaN() : 0.0f;
          for (std::int64_t j = 0; j < d.kv_len; ++j)
            acc += scores[static_cast<std::size_t>(j)] * at(c.v, b, h / group, j, x);
          const std::int64_t index = seq_major
                                         ? ((b * d.q_len + i) * d.heads + h) * d.value_dim + x
                                         : ((b * d.heads + h) * d.q_len + i) * d.value_dim + x;
          out.data<float>()[index] = acc;
        }
      }
    }
  }
  return out;
}

inline Tensor random_f32(const Dims& dims, std::mt19937& rng, float low = -1.0f,
                         float high = 1.0f) {
  std::uniform_real_distribution<float> dist(low, high);
  Tensor t = Tensor::uninitialized(DType::kF32, dims);
  for (float& v : t.span<float>()) v = dist(rng);
  return t;
}

inline Tensor random_bool(const Dims& dims, std::mt19937& rng, double p_true) {
  std::bernoulli_distribution dist(p_true);
  Tensor t = Tensor::uninitialized(DType::kBool, dims);
  for (std::int64_t i = 0; i < t.element_count(); ++i) t.data<bool>()[i] = dist(rng);
  return t;
}

// |a - b| <= atol + rtol |b| everywhere; NaN must match NaN.
inline ::testing::AssertionResult all_close(const Tensor& actual, const Tensor& expected,
                                            double rtol, double atol) {
  if (actual.dims() != expected.dims()) {
    return ::testing::AssertionFailure() << "dims " << dims_to_string(actual.dims())
                                         << " vs expected " << dims_to_string(expected.dims());
  }
  std::int64_t bad = 0, first_bad = -1;
  double worst = 0.0;
  for (std::int64_t i = 0; i < actual.element_count(); ++i) {
    const double a = actual.element_as_double(i), e = expected.element_as_double(i);
    const bool ok = std::isnan(e) ? std::isnan(a) : std::fabs(a - e) <= atol + rtol * std::fabs(e);
    if (!ok) {
      if (first_bad < 0) first_bad = i;
      ++bad;
    }
    if (!std::isnan(a) && !std::isnan(e)) worst = std::max(worst, std::fabs(a - e));
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << bad << " of " << actual.element_count() << " elements differ; first at " << first_bad
         << ": " << actual.element_as_double(first_bad) << " vs "
         << expected.element_as_double(first_bad) << "; max |diff| " << worst;
}

}  // namespace voxrt::attention_test
