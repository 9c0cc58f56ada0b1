// Conv / FusedConv with few output positions per image (tactic "few_positions"): constant
// weights, group 1, 1 to 3 spatial dims, on an AVX2/FMA CPU (AVX-512 where there is one). It is
// for streaming front ends that run a short-time Fourier transform as a strided convolution on
// one chunk: the openWakeWord melspectrogram's two 257 x 512-tap convolutions yield 5 frames of
// 1280 samples, Silero VAD's 258 x 256-tap one 4 frames of 576. im2col + GEMM there is a
// [OC x K] x [K x 5] product whose thin right side leaves oneDNN's and OpenBLAS's kernels far from
// the FMA rate. Here:
//   - each image's receptive fields are copied once into scratch as rows [position][K]
//     (zero-padded, K rounded up to the vector width), the same layout as the weight rows;
//   - each output is then a dot product of two contiguous rows; a register block of R weight
//     rows x P positions (R * P accumulators) loads R weight vectors and P field vectors per
//     R * P FMAs, every weight row read once per block of positions;
//   - threads split the output channels; bias, activation and the NCHW store follow each block.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "backends/cpu/avx512_math.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/dense/dense_common.h"
#include "backends/cpu/dense/dense_kernels.h"
#include "core/thread_pool.h"
#include "ir/shape_inference/dense.h"

namespace voxrt::backends::cpu::dense {
namespace {

// Rows of K are padded to this many floats (one AVX-512 vector, two AVX2 vectors).
constexpr std::int64_t kRowAlign = 16;
// Multiply-adds below which a call stays on one thread (see run()).
constexpr std::int64_t kMinMacsPerThread = std::int64_t{1} << 18;

std::int64_t padded_depth(std::int64_t depth) {
  return (depth + kRowAlign - 1) / kRowAlign * kRowAlign;
}

// The receptive field of output position p of one image (`channels` planes) as a row of
// K = C * kd * kh * kw values in the weights' order, zeros where it reaches past the input, then
// zeros up to `row_floats`.
void copy_field(const Geometry3& g, std::int64_t channels, const float* x, std::int64_t p,
                std::int64_t row_floats, float* row) {
  const std::int64_t ow = p % g.out[2], oh = (p / g.out[2]) % g.out[1];
  const std::int64_t od = p / (g.out[2] * g.out[1]);
  const std::int64_t in_plane = g.in[0] * g.in[1] * g.in[2];
  const std::int64_t iw0 = ow * g.stride[2] - g.pad[2];
  float* out = row;
  for (std::int64_t c = 0; c < channels; ++c) {
    for (std::int64_t kd = 0; kd < g.kernel[0]; ++kd) {
      const std::int64_t id = od * g.stride[0] - g.pad[0] + kd * g.dilation[0];
      for (std::int64_t kh = 0; kh < g.kernel[1]; ++kh) {
        const std::int64_t ih = oh * g.stride[1] - g.pad[1] + kh * g.dilation[1];
        if (id < 0 || id >= g.in[0] || ih < 0 || ih >= g.in[1]) {
          std::fill(out, out + g.kernel[2], 0.0f);
        } else {
          const float* src = x + c * in_plane + (id * g.in[1] + ih) * g.in[2];
          if (g.dilation[2] == 1 && iw0 >= 0 && iw0 + g.kernel[2] <= g.in[2]) {
            std::memcpy(out, src + iw0, static_cast<std::size_t>(g.kernel[2]) * sizeof(float));
          } else {
            for (std::int64_t kw = 0; kw < g.kernel[2]; ++kw) {
              const std::int64_t iw = iw0 + kw * g.dilation[2];
              out[kw] = iw >= 0 && iw < g.in[2] ? src[iw] : 0.0f;
            }
          }
        }
        out += g.kernel[2];
      }
    }
  }
  std::fill(out, row + row_floats, 0.0f);
}

// out[r * P + p] = dot(w row r, field row p) over `depth` floats (a multiple of 16), for R
// weight rows and P field rows, with 8-lane (AVX2) vectors.
template <int R, int P>
VOXRT_AVX2 void dot_block_avx2(const float* w, const float* fields, std::int64_t depth,
                               float* out) {
  __m256 acc[R][P];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 8
    for (int p = 0; p < P; ++p) acc[r][p] = _mm256_setzero_ps();
  }
  for (std::int64_t k = 0; k < depth; k += 8) {
    __m256 wv[R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) wv[r] = _mm256_loadu_ps(w + r * depth + k);
#pragma GCC unroll 8
    for (int p = 0; p < P; ++p) {
      const __m256 f = _mm256_loadu_ps(fields + p * depth + k);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) acc[r][p] = _mm256_fmadd_ps(wv[r], f, acc[r][p]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 8
    for (int p = 0; p < P; ++p) {
      const __m128 q =
          _mm_add_ps(_mm256_castps256_ps128(acc[r][p]), _mm256_extractf128_ps(acc[r][p], 1));
      const __m128 h = _mm_add_ps(q, _mm_movehl_ps(q, q));
      out[r * P + p] = _mm_cvtss_f32(_mm_add_ss(h, _mm_movehdup_ps(h)));
    }
  }
}

// The same with 16-lane (AVX-512) vectors.
template <int R, int P>
VOXRT_AVX512 void dot_block_avx512(const float* w, const float* fields, std::int64_t depth,
                                   float* out) {
  __m512 acc[R][P];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 8
    for (int p = 0; p < P; ++p) acc[r][p] = _mm512_setzero_ps();
  }
  for (std::int64_t k = 0; k < depth; k += 16) {
    __m512 wv[R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) wv[r] = _mm512_loadu_ps(w + r * depth + k);
#pragma GCC unroll 8
    for (int p = 0; p < P; ++p) {
      const __m512 f = _mm512_loadu_ps(fields + p * depth + k);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) acc[r][p] = _mm512_fmadd_ps(wv[r], f, acc[r][p]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 8
    for (int p = 0; p < P; ++p) out[r * P + p] = sum_lanes(acc[r][p]);
  }
}

// Register blocks: AVX2 has 16 vector registers (2 rows x up to 4 positions: 8 accumulators, 2
// weights, 1 field), AVX-512 32 (4 rows x up to 5 positions: 20 + 4 + 1).
constexpr int kRowsAvx2 = 2, kPositionsAvx2 = 4;
constexpr int kRowsAvx512 = 4, kPositionsAvx512 = 5;

template <int R, int P>
void dot_block(bool avx512, const float* w, const float* fields, std::int64_t depth, float* out) {
  if constexpr (R <= kRowsAvx512 && P <= kPositionsAvx512) {
    if (avx512) return dot_block_avx512<R, P>(w, fields, depth, out);
  }
  if constexpr (R <= kRowsAvx2 && P <= kPositionsAvx2) dot_block_avx2<R, P>(w, fields, depth, out);
}

// `rows` (<= R) weight rows against `positions` (<= P) field rows, by a fixed-size block.
template <int R>
void dot_rows(bool avx512, int positions, const float* w, const float* fields, std::int64_t depth,
              float* out) {
  switch (positions) {
    case 1: return dot_block<R, 1>(avx512, w, fields, depth, out);
    case 2: return dot_block<R, 2>(avx512, w, fields, depth, out);
    case 3: return dot_block<R, 3>(avx512, w, fields, depth, out);
    case 4: return dot_block<R, 4>(avx512, w, fields, depth, out);
    default: return dot_block<R, 5>(avx512, w, fields, depth, out);
  }
}

void dot(bool avx512, int rows, int positions, const float* w, const float* fields,
         std::int64_t depth, float* out) {
  switch (rows) {
    case 1: return dot_rows<1>(avx512, positions, w, fields, depth, out);
    case 2: return dot_rows<2>(avx512, positions, w, fields, depth, out);
    case 3: return dot_rows<3>(avx512, positions, w, fields, depth, out);
    default: return dot_rows<4>(avx512, positions, w, fields, depth, out);
  }
}

class ConvFewPositionsKernel final : public Kernel {
 public:
  ConvFewPositionsKernel(ir::Node node, Activation activation, std::vector<float> weights,
                         std::int64_t out_channels, std::int64_t depth)
      : node_(std::move(node)),
        activation_(activation),
        weights_(std::move(weights)),
        out_channels_(out_channels),
        depth_(depth) {}

  Status run(std::span<const Tensor* const> inputs, std::span<Tensor* const> outputs,
             KernelContext& context) const override {
    const Tensor& x = *inputs[0];
    const Tensor* bias = inputs.size() > 2 ? inputs[2] : nullptr;
    VOXRT_ASSIGN_OR_RETURN(ir::ConvGeometry geometry,
                           ir::resolve_conv_geometry(node_, x.dims(), inputs[1]->dims()));
    if (geometry.input.empty() || geometry.input.size() > 3 || geometry.group != 1)
      return unsupported(node_.describe(),
                         ": few_positions Conv takes 1 to 3 spatial dims, group 1");
    const Geometry3 g = to_3d(geometry);
    const std::int64_t channels = geometry.in_channels;
    const std::int64_t positions = g.out[0] * g.out[1] * g.out[2];
    const std::int64_t depth = padded_depth(depth_);
    const std::int64_t in_image = channels * g.in[0] * g.in[1] * g.in[2];
    const float* xd = x.data<float>();
    const float* bd = bias ? bias->data<float>() : nullptr;
    float* yd = outputs[0]->data<float>();
    if (positions == 0 || geometry.batch == 0) return Status::ok();
    const bool avx512 = cpu_has_avx512f();
    const int rows_per_block = avx512 ? kRowsAvx512 : kRowsAvx2;
    const int positions_per_block = avx512 ? kPositionsAvx512 : kPositionsAvx2;
    // Every image's fields at once: [batch][position][depth], shared by the workers.
    float* fields =
        thread_scratch_floats(static_cast<std::size_t>(geometry.batch * positions * depth), 0);
    for (std::int64_t n = 0; n < geometry.batch; ++n) {
      for (std::int64_t p = 0; p < positions; ++p)
        copy_field(g, channels, xd + n * in_image, p, depth, fields + (n * positions + p) * depth);
    }
    const std::int64_t row_blocks = (out_channels_ + rows_per_block - 1) / rows_per_block;
    // A range is handed to another thread only with some microseconds of work in it: the hand-
    // off costs a few even with the pool's spinning workers (the melspectrogram's 257 x 512 x 5
    // product: 12 us on one thread, 11 us on two, in bench/dense on the 2-vCPU Xeon VM).
    const std::int64_t macs_per_unit = rows_per_block * positions * depth;
    const std::int64_t grain = std::max<std::int64_t>(1, kMinMacsPerThread / macs_per_unit);
    context.pool->parallel_for(
        geometry.batch * row_blocks, grain, [&](std::int64_t begin, std::int64_t end) {
          float block_out[kRowsAvx512 * kPositionsAvx512];
          for (std::int64_t unit = begin; unit < end; ++unit) {
            const std::int64_t n = unit / row_blocks;
            const std::int64_t oc0 = (unit % row_blocks) * rows_per_block;
            const int rows =
                static_cast<int>(std::min<std::int64_t>(rows_per_block, out_channels_ - oc0));
            for (std::int64_t p0 = 0; p0 < positions; p0 += positions_per_block) {
              const int count =
                  static_cast<int>(std::min<std::int64_t>(positions_per_block, positions - p0));
              dot(avx512, rows, count, weights_.data() + oc0 * depth,
                  fields + (n * positions + p0) * depth, depth, block_out);
              for (int r = 0; r < rows; ++r) {
                float* y = yd + (n * out_channels_ + oc0 + r) * positions + p0;
                const float b = bd ? bd[oc0 + r] : 0.0f;
                for (int p = 0; p < count; ++p) y[p] = block_out[r * count + p] + b;
              }
            }
            for (int r = 0; r < rows; ++r)
              apply_activation(activation_, yd + (n * out_channels_ + oc0 + r) * positions,
                               positions);
          }
        });
    return Status::ok();
  }

 private:
  ir::Node node_;
  Activation activation_;
  std::vector<float> weights_;  // [OC][padded_depth(K)], zeros past K
  std::int64_t out_channels_, depth_;
};

}  // namespace

bool conv_few_positions_applies(const ir::Node& node) {
  if (!cpu_has_avx2_fma()) return false;
  const ir::Value* x = node.input(0);
  const ir::Value* w = node.input(1);
  if (!w || !w->is_constant()) return false;
  const std::size_t rank = w->constant->dims().size();
  if (rank < 3 || rank > 5) return false;
  if (x && x->rank_known && x->shape.size() != rank) return false;
  return node.attrs.get_int("group", 1) == 1;
}

Expected<std::unique_ptr<Kernel>> make_conv_few_positions_kernel(const ir::Node& node) {
  if (!conv_few_positions_applies(node))
    return unsupported(node.describe(),
                       ": few_positions needs AVX2/FMA, constant 3-D to 5-D weights and group 1");
  VOXRT_ASSIGN_OR_RETURN(Activation activation, read_activation(node));
  const Tensor& w = *node.input(1)->constant;
  const std::int64_t out_channels = w.dim(0);
  const std::int64_t depth = out_channels ? w.element_count() / out_channels : 0;
  const std::int64_t padded = padded_depth(depth);
  std::vector<float> weights(static_cast<std::size_t>(out_channels * padded), 0.0f);
  const float* wd = w.data<float>();
  for (std::int64_t oc = 0; oc < out_channels; ++oc)
    std::copy(wd + oc * depth, wd + (oc + 1) * depth, weights.data() + oc * padded);
  return std::unique_ptr<Kernel>(new ConvFewPositionsKernel(
      detached_node(node), activation, std::move(weights), out_channels, depth));
}

}  // namespace voxrt::backends::cpu::dense
