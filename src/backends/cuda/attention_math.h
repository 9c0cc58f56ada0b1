// What every CUDA attention kernel shares, for the device and the host alike (a CPU-only unit
// test runs these exact functions through the kernels' tiling against the CPU reference): one
// score's modifiers in the order the op's semantics give them (ir/op_kind.h: scale * Q.K + bias,
// then a float mask is added or a false bool mask replaces the score with mask_fill, then causal
// -inf), the online softmax that keeps a row's running maximum and sum in FP32, and the weight of
// a partial softmax when partials are merged.
#pragma once

#include <cmath>
#include <cstdint>

#include "backends/cuda/attention_launch.h"

#if defined(__CUDACC__)
#define VOXRT_ATTENTION_HD __host__ __device__ __forceinline__
#else
#define VOXRT_ATTENTION_HD inline
#endif

namespace voxrt::backends::cuda::ops {

// exp(x): the fast intrinsic on the device (ex2.approx; ~2 ulp), std::exp on the host.
VOXRT_ATTENTION_HD float softmax_exp(float x) {
#if defined(__CUDA_ARCH__)
  return __expf(x);
#else
  return std::exp(x);
#endif
}

// The score of query row i against key j of head h in batch b, from the scaled dot product.
VOXRT_ATTENTION_HD float modified_score(const AttentionShape& s, float scaled_dot, std::int64_t b,
                                        std::int64_t h, std::int64_t i, std::int64_t j,
                                        const void* mask, const float* bias) {
  float v = scaled_dot;
  if (s.has_bias)
    v += bias[b * s.bias_stride[0] + h * s.bias_stride[1] + i * s.bias_stride[2] +
              j * s.bias_stride[3]];
  if (s.mask != AttentionMask::kNone) {
    const std::int64_t at =
        b * s.mask_stride[0] + h * s.mask_stride[1] + i * s.mask_stride[2] + j * s.mask_stride[3];
    if (s.mask == AttentionMask::kFloat) {
      v += static_cast<const float*>(mask)[at];
    } else if (!static_cast<const bool*>(mask)[at]) {
      v = s.mask_fill;
    }
  }
  if (s.causal && j > i + s.kv_len - s.q_len) v = -INFINITY;
  return v;
}

// Whether key j exists for row i at all for the causal rule (tiles past every row's horizon are
// skipped: their scores would all be -inf, which changes nothing in an online softmax).
VOXRT_ATTENTION_HD std::int64_t causal_key_limit(const AttentionShape& s, std::int64_t last_row) {
  return s.causal ? last_row + s.kv_len - s.q_len + 1 : s.kv_len;
}

// A row's softmax state: m the running maximum, l the running sum of exp(score - m). Scores of
// -inf contribute nothing; while every score seen is -inf, m stays -inf and nothing is kept (so a
// later finite score does not meet exp(-inf - -inf) = NaN). A row that ends with m == -inf had
// every score -inf (or no keys): it gives NaN, as Softmax does (finish()).
struct OnlineSoftmax {
  float m = -INFINITY;
  float l = 0.0f;
  // Folds in a block of scores whose maximum is `block_max`; returns the factor the kept
  // output must be scaled by, and sets `shift` to the value exp() subtracts from each score.
  VOXRT_ATTENTION_HD float rescale(float block_max, float& shift) {
    const float m_new = std::fmax(m, block_max);
    if (m_new == -INFINITY) {
      shift = 0.0f;  // every score so far is -inf: probabilities are 0 (see p())
      return 1.0f;
    }
    const float alpha = m == -INFINITY ? 0.0f : softmax_exp(m - m_new);
    m = m_new;
    shift = m_new;
    l *= alpha;
    return alpha;
  }
  // exp(score - shift), 0 for a score of -inf (NaN stays NaN).
  VOXRT_ATTENTION_HD static float p(float score, float shift) {
    return score == -INFINITY ? 0.0f : softmax_exp(score - shift);
  }
  VOXRT_ATTENTION_HD float finish(float acc) const { return m == -INFINITY ? NAN : acc / l; }
};

// When partial softmaxes (each with its own maximum m_part) are merged under the overall maximum
// m_total, each partial's sum and output are scaled by this; a partial that saw only -inf counts
// for nothing.
VOXRT_ATTENTION_HD float partial_weight(float m_part, float m_total) {
  return m_part == -INFINITY ? 0.0f : softmax_exp(m_part - m_total);
}

}  // namespace voxrt::backends::cuda::ops
