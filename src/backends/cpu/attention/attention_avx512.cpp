// The AVX-512 Attention tactic ("avx512_strips"): the queries of one head are taken a strip of
// up to six rows at a time; the strip's scores against every key live in a per-thread buffer of
// 6 x Sk floats (36 KiB at Sk = 1500), never a full Sq x Sk matrix. Per strip:
//   1. S = Q K^T with a 6-row x 64-key register block over K^T, packed once per task in panels
//      of 64 keys ([Sk / 64][Dk][64], read front to back);
//      strips of fewer than four rows in all (a decoder step) take plain dot products instead;
//   2. scale, bias, mask and causal applied, then the row max, exp and sum in FP32 (exp512);
//   3. O = P V with a 6-row x 64-column register block, divided by the sums at the end.
// Work is split over the context's pool by (batch, head) when there are enough heads to go round,
// else also by query block (each task packs its head's K^T once). A row whose every score
// is -inf gives NaN, as the unfused Softmax does (ir/op_kind.h).
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "backends/cpu/attention/attention_kernels.h"
#include "backends/cpu/avx512_math.h"
#include "core/thread_pool.h"

namespace voxrt::backends::cpu::attention {
namespace {

constexpr int kStripRows = 6;
constexpr int kKeyBlock = 64;     // keys per score register block (4 vectors)
constexpr int kColumnBlock = 64;  // output columns per PV register block
// Tasks per thread before a head's queries are split into blocks (each block packs K^T again).
constexpr std::int64_t kTasksPerThread = 2;
// Fewer query rows than this in a task: dot products against K as it is, no packing.
constexpr std::int64_t kMinPackedRows = 4;

// Per-thread scratch: packed K^T and the strip's scores.
struct Scratch {
  std::vector<float> key_t;
  std::vector<float> scores;
};
thread_local Scratch scratch;

inline std::int64_t round_up(std::int64_t n, std::int64_t to) {
  return (n + to - 1) / to * to;
}

// Where one query row's bias and masks live along the keys (step 0: broadcast).
struct RowTerms {
  const float* bias = nullptr;
  std::int64_t bias_step = 0;
  const float* float_mask = nullptr;
  std::int64_t float_mask_step = 0;
  const bool* bool_mask = nullptr;
  std::int64_t bool_mask_step = 0;
  std::int64_t last_key = 0;  // keys after this one are excluded (causal); Sk - 1 otherwise
};

RowTerms row_terms(const AttentionRun& run, bool causal, std::int64_t b, std::int64_t h,
                   std::int64_t i) {
  RowTerms t;
  if (run.bias) {
    t.bias = run.bias + run.bias_strides.offset(b, h, i, 0);
    t.bias_step = run.bias_strides.stride[3];
  }
  if (run.float_mask) {
    t.float_mask = run.float_mask + run.mask.offset(b, h, i, 0);
    t.float_mask_step = run.mask.stride[3];
  }
  if (run.bool_mask) {
    t.bool_mask = run.bool_mask + run.mask.offset(b, h, i, 0);
    t.bool_mask_step = run.mask.stride[3];
  }
  t.last_key = causal ? i + run.dims.kv_len - run.dims.q_len : run.dims.kv_len - 1;
  return t;
}

VOXRT_AVX512 inline __mmask16 tail_mask(std::int64_t remaining) {
  return remaining >= 16 ? static_cast<__mmask16>(0xFFFF)
                         : static_cast<__mmask16>((1u << remaining) - 1u);
}

// K^T of one head in panels of kKeyBlock keys: element (c, j) at
// key_t[((j / kKeyBlock) * Dk + c) * kKeyBlock + j % kKeyBlock], zeros after the last key.
void pack_key_transposed(const AttentionRun& run, std::int64_t b, std::int64_t kv_h, float* key_t) {
  const ir::AttentionDims& d = run.dims;
  const float* k0 = run.k_data + run.k.offset(b, kv_h, 0);
  const std::int64_t row = run.k.row;
  for (std::int64_t j0 = 0; j0 < d.kv_len; j0 += kKeyBlock) {
    const std::int64_t keys = std::min<std::int64_t>(kKeyBlock, d.kv_len - j0);
    float* panel = key_t + j0 * d.key_dim;
    for (std::int64_t c = 0; c < d.key_dim; ++c) {
      float* dst = panel + c * kKeyBlock;
      for (std::int64_t j = 0; j < keys; ++j) dst[j] = k0[(j0 + j) * row + c];
      std::fill(dst + keys, dst + kKeyBlock, 0.0f);
    }
  }
}

// scores[r * ld + j] = q_r . k_j for the strip's `Rows` rows and keys [0, key_end), over K^T.
template <int Rows>
VOXRT_AVX512 void strip_scores_packed(const float* const* q, const float* key_t, std::int64_t ld,
                                      std::int64_t key_dim, std::int64_t key_end, float* scores) {
  for (std::int64_t j0 = 0; j0 < key_end; j0 += kKeyBlock) {
    const float* panel = key_t + j0 * key_dim;
    __m512 acc[Rows][4];
    for (int r = 0; r < Rows; ++r)
      for (int v = 0; v < 4; ++v) acc[r][v] = _mm512_setzero_ps();
    const int vectors = static_cast<int>(std::min<std::int64_t>(4, (key_end - j0 + 15) / 16));
    if (vectors == 4) {
      for (std::int64_t c = 0; c < key_dim; ++c) {
        const float* row = panel + c * kKeyBlock;
        const __m512 k0 = _mm512_loadu_ps(row), k1 = _mm512_loadu_ps(row + 16),
                     k2 = _mm512_loadu_ps(row + 32), k3 = _mm512_loadu_ps(row + 48);
        for (int r = 0; r < Rows; ++r) {
          const __m512 qc = _mm512_set1_ps(q[r][c]);
          acc[r][0] = _mm512_fmadd_ps(qc, k0, acc[r][0]);
          acc[r][1] = _mm512_fmadd_ps(qc, k1, acc[r][1]);
          acc[r][2] = _mm512_fmadd_ps(qc, k2, acc[r][2]);
          acc[r][3] = _mm512_fmadd_ps(qc, k3, acc[r][3]);
        }
      }
    } else {
      for (std::int64_t c = 0; c < key_dim; ++c) {
        const float* row = panel + c * kKeyBlock;
        for (int r = 0; r < Rows; ++r) {
          const __m512 qc = _mm512_set1_ps(q[r][c]);
          for (int v = 0; v < vectors; ++v)
            acc[r][v] = _mm512_fmadd_ps(qc, _mm512_loadu_ps(row + 16 * v), acc[r][v]);
        }
      }
    }
    for (int r = 0; r < Rows; ++r)
      for (int v = 0; v < vectors; ++v) _mm512_storeu_ps(scores + r * ld + j0 + 16 * v, acc[r][v]);
  }
}

// Dot products against K row by row (no packing), for strips of one to three queries.
VOXRT_AVX512 void row_scores_direct(const AttentionRun& run, std::int64_t b, std::int64_t kv_h,
                                    const float* q, std::int64_t key_end, float* scores) {
  const std::int64_t depth = run.dims.key_dim;
  for (std::int64_t j = 0; j < key_end; ++j) {
    const float* k = run.k_data + run.k.offset(b, kv_h, j);
    __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
    std::int64_t c = 0;
    for (; c + 32 <= depth; c += 32) {
      acc0 = _mm512_fmadd_ps(_mm512_loadu_ps(q + c), _mm512_loadu_ps(k + c), acc0);
      acc1 = _mm512_fmadd_ps(_mm512_loadu_ps(q + c + 16), _mm512_loadu_ps(k + c + 16), acc1);
    }
    for (; c < depth; c += 16) {
      const __mmask16 m = tail_mask(depth - c);
      acc0 =
          _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, q + c), _mm512_maskz_loadu_ps(m, k + c), acc0);
    }
    scores[j] = sum_lanes(_mm512_add_ps(acc0, acc1));
  }
}

// Scale, terms and causal cut on one row of scores, then exp(s - max) in place; returns the sum
// of the exponentials (0 when every score is -inf: the caller writes NaN).
VOXRT_AVX512 float softmax_row(float* s, std::int64_t keys, float scale, const RowTerms& t,
                               float mask_fill) {
  const float minus_inf = -std::numeric_limits<float>::infinity();
  const std::int64_t visible = std::clamp<std::int64_t>(t.last_key + 1, 0, keys);
  const __m512 vscale = _mm512_set1_ps(scale);
  __m512 vmax = _mm512_set1_ps(minus_inf);
  for (std::int64_t j = 0; j < visible; j += 16) {
    const __mmask16 m = tail_mask(visible - j);
    __m512 x = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, s + j), vscale);
    if (t.bias) {
      x = _mm512_add_ps(x, t.bias_step == 1   ? _mm512_maskz_loadu_ps(m, t.bias + j)
                           : t.bias_step == 0 ? _mm512_set1_ps(t.bias[0])
                                              : _mm512_setzero_ps());
      if (t.bias_step > 1) {
        alignas(64) float lanes[16];
        _mm512_store_ps(lanes, x);
        for (int l = 0; l < 16 && j + l < visible; ++l) lanes[l] += t.bias[(j + l) * t.bias_step];
        x = _mm512_load_ps(lanes);
      }
    }
    if (t.float_mask) {
      if (t.float_mask_step <= 1) {
        x = _mm512_add_ps(x, t.float_mask_step == 1 ? _mm512_maskz_loadu_ps(m, t.float_mask + j)
                                                    : _mm512_set1_ps(t.float_mask[0]));
      } else {
        alignas(64) float lanes[16];
        _mm512_store_ps(lanes, x);
        for (int l = 0; l < 16 && j + l < visible; ++l)
          lanes[l] += t.float_mask[(j + l) * t.float_mask_step];
        x = _mm512_load_ps(lanes);
      }
    }
    if (t.bool_mask) {
      __mmask16 keep = 0;
      if (t.bool_mask_step == 1 && j + 16 <= visible) {
        const __m512i bytes = _mm512_maskz_cvtepu8_epi32(
            0xffff, _mm_loadu_si128(reinterpret_cast<const __m128i*>(t.bool_mask + j)));
        keep = _mm512_test_epi32_mask(bytes, bytes);
      } else {
        for (int l = 0; l < 16 && j + l < visible; ++l)
          keep |= static_cast<__mmask16>(t.bool_mask[(j + l) * t.bool_mask_step] ? 1u << l : 0u);
      }
      x = _mm512_mask_mov_ps(_mm512_set1_ps(mask_fill), keep, x);
    }
    _mm512_mask_storeu_ps(s + j, m, x);
    vmax = _mm512_mask_max_ps(vmax, m, vmax, x);
  }
  for (std::int64_t j = visible; j < keys; ++j) s[j] = 0.0f;  // causally excluded: weight 0
  const float max = max_lanes(vmax);
  if (max == minus_inf || std::isnan(max)) return 0.0f;
  const __m512 shift = _mm512_set1_ps(max);
  __m512 vsum = _mm512_setzero_ps();
  for (std::int64_t j = 0; j < visible; j += 16) {
    const __mmask16 m = tail_mask(visible - j);
    const __m512 e = exp512(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, s + j), shift));
    _mm512_mask_storeu_ps(s + j, m, e);
    vsum = _mm512_add_ps(vsum, _mm512_maskz_mov_ps(m, e));
  }
  return sum_lanes(vsum);
}

// out_r = (sum_j p[r][j] V_j) * inv_sum[r] for the strip's `Rows` rows.
template <int Rows>
VOXRT_AVX512 void strip_values(const AttentionRun& run, std::int64_t b, std::int64_t kv_h,
                               const float* p, std::int64_t ld, std::int64_t key_end,
                               float* const* out, const float* inv_sum) {
  const std::int64_t depth = run.dims.value_dim;
  const float* v0 = run.v_data + run.v.offset(b, kv_h, 0);
  const std::int64_t v_row = run.v.row;
  for (std::int64_t c0 = 0; c0 < depth; c0 += kColumnBlock) {
    const int vectors = static_cast<int>(std::min<std::int64_t>(4, (depth - c0 + 15) / 16));
    __mmask16 masks[4];
    for (int v = 0; v < 4; ++v)
      masks[v] = tail_mask(std::max<std::int64_t>(0, depth - c0 - 16 * v));
    __m512 acc[Rows][4];
    for (int r = 0; r < Rows; ++r)
      for (int v = 0; v < 4; ++v) acc[r][v] = _mm512_setzero_ps();
    if (vectors == 4 && masks[3] == 0xFFFF) {
      for (std::int64_t j = 0; j < key_end; ++j) {
        const float* vj = v0 + j * v_row + c0;
        const __m512 x0 = _mm512_loadu_ps(vj), x1 = _mm512_loadu_ps(vj + 16),
                     x2 = _mm512_loadu_ps(vj + 32), x3 = _mm512_loadu_ps(vj + 48);
        for (int r = 0; r < Rows; ++r) {
          const __m512 w = _mm512_set1_ps(p[r * ld + j]);
          acc[r][0] = _mm512_fmadd_ps(w, x0, acc[r][0]);
          acc[r][1] = _mm512_fmadd_ps(w, x1, acc[r][1]);
          acc[r][2] = _mm512_fmadd_ps(w, x2, acc[r][2]);
          acc[r][3] = _mm512_fmadd_ps(w, x3, acc[r][3]);
        }
      }
    } else {
      for (std::int64_t j = 0; j < key_end; ++j) {
        const float* vj = v0 + j * v_row + c0;
        for (int v = 0; v < vectors; ++v) {
          const __m512 x = _mm512_maskz_loadu_ps(masks[v], vj + 16 * v);
          for (int r = 0; r < Rows; ++r)
            acc[r][v] = _mm512_fmadd_ps(_mm512_set1_ps(p[r * ld + j]), x, acc[r][v]);
        }
      }
    }
    for (int r = 0; r < Rows; ++r) {
      const __m512 scale = _mm512_set1_ps(inv_sum[r]);
      for (int v = 0; v < vectors; ++v)
        _mm512_mask_storeu_ps(out[r] + c0 + 16 * v, masks[v], _mm512_mul_ps(acc[r][v], scale));
    }
  }
}

template <int Rows>
VOXRT_AVX512 void run_strip(const AttentionRun& run, const ir::AttentionParams& params,
                            std::int64_t b, std::int64_t h, std::int64_t kv_h, std::int64_t i0,
                            const float* key_t, std::int64_t ld, float* scores) {
  const ir::AttentionDims& d = run.dims;
  const float* q[kStripRows];
  float* out[kStripRows];
  RowTerms terms[kStripRows];
  std::int64_t key_end = 0;
  for (int r = 0; r < Rows; ++r) {
    q[r] = run.q_data + run.q.offset(b, h, i0 + r);
    out[r] = run.out_data + run.out.offset(b, h, i0 + r);
    terms[r] = row_terms(run, params.causal, b, h, i0 + r);
    key_end = std::max(key_end, std::clamp<std::int64_t>(terms[r].last_key + 1, 0, d.kv_len));
  }
  if (key_t) {
    strip_scores_packed<Rows>(q, key_t, ld, d.key_dim, key_end, scores);
  } else {
    for (int r = 0; r < Rows; ++r) row_scores_direct(run, b, kv_h, q[r], key_end, scores + r * ld);
  }
  float inv_sum[kStripRows];
  const float nan = std::numeric_limits<float>::quiet_NaN();
  bool any_empty = false;
  for (int r = 0; r < Rows; ++r) {
    const float sum = softmax_row(scores + r * ld, key_end, run.scale, terms[r], params.mask_fill);
    inv_sum[r] = sum > 0.0f ? 1.0f / sum : nan;
    any_empty = any_empty || !(sum > 0.0f);
  }
  strip_values<Rows>(run, b, kv_h, scores, ld, key_end, out, inv_sum);
  if (any_empty) {
    for (int r = 0; r < Rows; ++r)
      if (std::isnan(inv_sum[r])) std::fill(out[r], out[r] + d.value_dim, nan);
  }
}

VOXRT_AVX512 void run_task(const AttentionRun& run, const ir::AttentionParams& params,
                           std::int64_t b, std::int64_t h, std::int64_t i_begin,
                           std::int64_t i_end) {
  const ir::AttentionDims& d = run.dims;
  const std::int64_t kv_h = h / (d.heads / d.kv_heads);
  const std::int64_t ld = round_up(std::max<std::int64_t>(d.kv_len, 1), 16);
  const bool packed = i_end - i_begin >= kMinPackedRows;
  if (packed) {
    scratch.key_t.resize(static_cast<std::size_t>(d.key_dim * round_up(d.kv_len, kKeyBlock)));
    pack_key_transposed(run, b, kv_h, scratch.key_t.data());
  }
  scratch.scores.resize(static_cast<std::size_t>(kStripRows * ld));
  const float* key_t = packed ? scratch.key_t.data() : nullptr;
  float* scores = scratch.scores.data();
  std::int64_t i = i_begin;
  for (; i + kStripRows <= i_end; i += kStripRows)
    run_strip<kStripRows>(run, params, b, h, kv_h, i, key_t, ld, scores);
  switch (i_end - i) {
    case 5: run_strip<5>(run, params, b, h, kv_h, i, key_t, ld, scores); break;
    case 4: run_strip<4>(run, params, b, h, kv_h, i, key_t, ld, scores); break;
    case 3: run_strip<3>(run, params, b, h, kv_h, i, key_t, ld, scores); break;
    case 2: run_strip<2>(run, params, b, h, kv_h, i, key_t, ld, scores); break;
    case 1: run_strip<1>(run, params, b, h, kv_h, i, key_t, ld, scores); break;
    default: break;
  }
}

class Avx512AttentionKernel final : public Kernel {
 public:
  Avx512AttentionKernel(std::string where, ir::AttentionParams params)
      : where_(std::move(where)), params_(params) {}

  Status run(std::span<const Tensor* const> inputs, std::span<Tensor* const> outputs,
             KernelContext& context) const override {
    VOXRT_ASSIGN_OR_RETURN(const AttentionRun run,
                           prepare_run(where_, params_, inputs, *outputs[0]));
    const ir::AttentionDims& d = run.dims;
    if (d.q_len == 0 || d.batch == 0 || d.heads == 0 || d.value_dim == 0) return Status::ok();
    if (d.kv_len == 0) {
      float* out = run.out_data;
      std::fill(out, out + outputs[0]->element_count(), std::numeric_limits<float>::quiet_NaN());
      return Status::ok();
    }
    // A whole head per task when the heads keep every thread busy; else query blocks of whole
    // strips, about kTasksPerThread per thread.
    const std::int64_t threads = context.pool->threads();
    std::int64_t rows = d.q_len;
    const std::int64_t heads = d.batch * d.heads;
    if (heads < kTasksPerThread * threads) {
      const std::int64_t blocks_per_head = (kTasksPerThread * threads + heads - 1) / heads;
      rows = std::max<std::int64_t>(
          kStripRows, round_up((d.q_len + blocks_per_head - 1) / blocks_per_head, kStripRows));
    }
    const std::int64_t per_head = (d.q_len + rows - 1) / rows;
    context.pool->parallel_for(
        d.batch * d.heads * per_head, 1, [&](std::int64_t begin, std::int64_t end) {
          for (std::int64_t task = begin; task < end; ++task) {
            const std::int64_t bh = task / per_head;
            const std::int64_t i0 = (task % per_head) * rows;
            run_task(run, params_, bh / d.heads, bh % d.heads, i0, std::min(d.q_len, i0 + rows));
          }
        });
    return Status::ok();
  }

 private:
  std::string where_;
  ir::AttentionParams params_;
};

}  // namespace

std::unique_ptr<Kernel> make_avx512_attention_kernel(const ir::Node& node,
                                                     ir::AttentionParams params) {
  return std::make_unique<Avx512AttentionKernel>(node.describe(), params);
}

}  // namespace voxrt::backends::cpu::attention
