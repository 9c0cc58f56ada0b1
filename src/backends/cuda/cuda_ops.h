// Launchers for the CUDA backend's own kernels (the .cu files). Plain types only, so the .cu files
// need no voxrt headers and the .cpp files no device code. Every launcher enqueues on `stream`
// and returns cudaGetLastError().
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "backends/cuda/conv_direct.h"
#include "backends/cuda/conv_width_fold.h"
#include "backends/cuda/grouped_conv.h"
#include "backends/cuda/strided_copy.h"

namespace voxrt::backends::cuda::ops {

// Element types the kernels read or write besides float.
enum class LowType : int { kF32 = 0, kF16 = 1, kBF16 = 2 };

enum class UnaryOp : int {
  kIdentity,
  kRelu,
  kLeakyRelu,  // alpha = slope
  kClip,       // alpha = min, beta = max
  kSigmoid,
  kTanh,
  kExp,
  kLog,
  kSqrt,
  kNeg,
  kAbs,
  kReciprocal,
  kErf,
  kGeluErf,
  kSoftplus,
  kFloor,
  kCeil,
  kHardSigmoid,  // alpha, beta
  kElu,          // alpha
  kSilu,         // x * sigmoid(x)
};

enum class BinaryOp : int { kAdd, kSub, kMul, kDiv, kPow, kMax, kMin };

// y[i] = op(x[i]); in place allowed.
cudaError_t unary(UnaryOp op, float alpha, float beta, const float* x, float* y, std::int64_t n,
                  cudaStream_t stream);

// Output index -> element offsets of a and b (stride 0 on broadcast dims).
struct BroadcastIndex {
  int rank = 0;
  std::int64_t dims[kMaxRank] = {};
  std::int64_t stride_a[kMaxRank] = {};
  std::int64_t stride_b[kMaxRank] = {};
};
cudaError_t binary(BinaryOp op, const float* a, const float* b, float* y, std::int64_t n,
                   const BroadcastIndex& index, cudaStream_t stream);

// Max or average pooling over 1 or 2 spatial axes of NCHW data (1-D as in_h = out_h = 1), one
// thread per output element.
struct Pool2d {
  std::int64_t planes = 0;  // N * C
  std::int64_t in_h = 1, in_w = 1, out_h = 1, out_w = 1;
  std::int64_t kernel_h = 1, kernel_w = 1, stride_h = 1, stride_w = 1;
  std::int64_t dilation_h = 1, dilation_w = 1, pad_h = 0, pad_w = 0;
  // AveragePool with count_include_pad divides by the taps inside [-pad, in + pad_end).
  std::int64_t pad_end_h = 0, pad_end_w = 0;
  bool max = true;
  bool count_include_pad = false;
};
cudaError_t pool2d(const Pool2d& shape, const float* x, float* y, cudaStream_t stream);

// y[o, i] = the reduction over r of x[o, r, i] (x row-major [outer, extent, inner]); Max and Min
// skip NaNs as std::max/std::min over a running value do, an empty extent gives the identity
// (-inf, +inf, 0) and Mean of nothing NaN.
enum class ReduceOp : int { kSum, kMean, kMax, kMin };
cudaError_t reduce(ReduceOp op, const float* x, float* y, std::int64_t outer, std::int64_t extent,
                   std::int64_t inner, cudaStream_t stream);

// One launch of the generic strided copy (StridedCopy: strided_copy.h).
cudaError_t strided_copy(const void* in, void* out, int element_bytes, const StridedCopy& copy,
                         cudaStream_t stream);

// out[o, i, k] = in[o, indices[i] (negative: + axis_size), k]; element_bytes 1, 2, 4 or 8.
cudaError_t gather(const void* in, const std::int64_t* indices, void* out, int element_bytes,
                   std::int64_t outer, std::int64_t axis_size, std::int64_t index_count,
                   std::int64_t inner, cudaStream_t stream);

// Small host<->device transfers as one kernel that reads or writes pinned host memory directly
// (pinned memory is mapped at the same address under unified addressing): in a CUDA graph each
// memcpy node costs microseconds of DMA setup, most of the time of a batch-1 chunk's few
// kilobytes. Up to kMaxCopySpans (src, dst, bytes) runs per launch.
inline constexpr int kMaxCopySpans = 8;
struct CopySpans {
  int count = 0;
  const void* src[kMaxCopySpans] = {};
  void* dst[kMaxCopySpans] = {};
  std::int64_t bytes[kMaxCopySpans] = {};
};
cudaError_t copy_spans(const CopySpans& spans, cudaStream_t stream);

// State slot pool: pool is [capacity, outer, row] (slot-major), a row `row_bytes` bytes (the
// state's inner elements, any element type); a batch tensor is [outer, batch, row]. gather:
// batch[o, b] = pool[slots[b], o]; scatter: the reverse. Rows move in 16-byte words when both
// buffers and row_bytes allow it.
cudaError_t slot_gather(const void* pool, const int* slots, void* batch_tensor, std::int64_t batch,
                        std::int64_t outer, std::int64_t row_bytes, cudaStream_t stream);
cudaError_t slot_scatter(const void* batch_tensor, const int* slots, void* pool, std::int64_t batch,
                         std::int64_t outer, std::int64_t row_bytes, cudaStream_t stream);

// Softmax / LogSoftmax over the middle axis of [outer, axis, inner], reducing in float.
cudaError_t softmax(const float* x, float* y, std::int64_t outer, std::int64_t axis,
                    std::int64_t inner, bool log, cudaStream_t stream);
// LayerNormalization over the last `cols` of [rows, cols]; scale/bias of length cols (bias may be
// null). Mean and variance in float.
cudaError_t layer_norm(const float* x, const float* scale, const float* bias, float* y,
                       std::int64_t rows, std::int64_t cols, float epsilon, cudaStream_t stream);

// hi[i] = in[i] rounded to TF32 (cvt.rna.tf32.f32), lo[i] = in[i] - hi[i]: the operand halves of
// SplitTf32Gemm.
cudaError_t split_tf32(const float* in, float* hi, float* lo, std::int64_t n, cudaStream_t stream);

// float -> LowType (kF32: plain copy).
cudaError_t convert_from_f32(const float* in, void* out, LowType type, std::int64_t n,
                             cudaStream_t stream);

// out[i] = op(y[i] + bias[c]) over [N, channels, positions], c = (i / positions) % channels;
// y in `y_type` (may alias out when float); bias may be null. The epilogue of the cuDNN
// convolution (whose own fused form only takes ReLU).
cudaError_t bias_activation(const void* y, LowType y_type, const float* bias, std::int64_t channels,
                            std::int64_t positions, std::int64_t n, UnaryOp op, float alpha,
                            float beta, float* out, cudaStream_t stream);

// in [N, C, P] float -> out [N, P, C] in `type` (the NHWC input of a cuDNN convolution).
cudaError_t convert_nchw_to_nhwc(const float* in, void* out, LowType type, std::int64_t batch,
                                 std::int64_t channels, std::int64_t positions,
                                 cudaStream_t stream);
// out [N, C, P] float = op(y + bias[c]) for y [N, P, C] in `y_type` (an NHWC cuDNN result);
// bias may be null. y must not alias out.
cudaError_t nhwc_bias_activation(const void* y, LowType y_type, const float* bias,
                                 std::int64_t batch, std::int64_t channels, std::int64_t positions,
                                 UnaryOp op, float alpha, float beta, float* out,
                                 cudaStream_t stream);

// The direct_tc convolution (conv_direct.h): y = op(conv(x, w) + bias) with x and y float NCHW,
// `filter` the [k_padded, OC] matrix in `type` (kF16 or kBF16; anything else is
// cudaErrorInvalidValue), bias [OC] float or null. Tensor cores, float accumulation; no scratch.
cudaError_t direct_conv(const DirectConv& shape, const float* x, const void* filter, LowType type,
                        const float* bias, UnaryOp op, float alpha, float beta, float* y,
                        cudaStream_t stream);

// The width-fold convolution's passes around cuDNN or cuBLASLt (conv_width_fold.h): x float
// NCHW -> the folded NHWC input in `type`; for the GEMM tactics, A from the folded input, both in
// `type` (width_fold_row_chunk_source); and y float NCHW = op(folded output + bias[oc]) from the
// folded NHWC output in `type` (bias may be null).
cudaError_t width_fold_input(const WidthFold& fold, const float* x, void* folded_x, LowType type,
                             cudaStream_t stream);
cudaError_t width_fold_rows(const WidthFold& fold, const void* folded_x, void* a, LowType type,
                            cudaStream_t stream);
cudaError_t width_fold_output(const WidthFold& fold, const void* folded_y, LowType type,
                              const float* bias, UnaryOp op, float alpha, float beta, float* y,
                              cudaStream_t stream);

// Grouped convolution (grouped_conv.h), float NCHW in and out, w [OC, C / groups, KH, KW] float,
// y = op(conv(x, w) + bias) (bias [OC] or null): the naive reference for any groups, and the
// depthwise kernel (groups == channels; cudaErrorInvalidValue when depthwise_launch refuses).
cudaError_t grouped_conv_reference(const GroupedConv& shape, const float* x, const float* w,
                                   const float* bias, UnaryOp op, float alpha, float beta, float* y,
                                   cudaStream_t stream);
cudaError_t depthwise_conv(const GroupedConv& shape, const float* x, const float* w,
                           const float* bias, UnaryOp op, float alpha, float beta, float* y,
                           cudaStream_t stream);

// The skinny GEMM (skinny_gemm.cu): y[m, n] = op(sum_k x[m, k] w[k, n] + bias[n]) for at most
// kSkinnyMaxRows rows, x and y float row-major, w [K, N] row-major in FP16/BF16 (N even), bias
// [N] float or null; FP32 accumulation, one launch. Blocks own 64 columns and k_per_split of k
// (a multiple of 64); with splits > 1, `partials` holds splits x m x n floats (scratch) and
// `tickets` one zeroed counter per 64-column tile, which the kernel leaves zeroed again.
// cudaErrorInvalidValue for a shape it does not take.
inline constexpr std::int64_t kSkinnyMaxRows = 16;
inline constexpr std::int64_t kSkinnyColumns = 64;
inline constexpr std::int64_t kSkinnyChunk = 64;
struct SkinnyGemm {
  std::int64_t m = 0, n = 0, k = 0;
  std::int64_t splits = 1, k_per_split = 0;
};
constexpr bool skinny_gemm_takes(const SkinnyGemm& g) {
  return g.m >= 0 && g.m <= kSkinnyMaxRows && g.n % 2 == 0 && g.k >= 0 && g.splits >= 1 &&
         g.k_per_split % kSkinnyChunk == 0 && g.k_per_split * g.splits >= g.k &&
         (g.k == 0 || g.k_per_split > 0);
}
constexpr std::int64_t skinny_gemm_tiles(const SkinnyGemm& g) {
  return (g.n + kSkinnyColumns - 1) / kSkinnyColumns;
}
// The split of k that spreads the blocks over about two waves of `sm_count` multiprocessors.
constexpr SkinnyGemm skinny_gemm_plan(std::int64_t m, std::int64_t n, std::int64_t k,
                                      int sm_count) {
  SkinnyGemm g{m, n, k, 1, 0};
  const std::int64_t tiles = skinny_gemm_tiles(g) > 0 ? skinny_gemm_tiles(g) : 1;
  const std::int64_t chunks = (k + kSkinnyChunk - 1) / kSkinnyChunk;
  std::int64_t splits = (2 * sm_count + tiles - 1) / tiles;
  if (splits > chunks) splits = chunks;
  if (splits < 1) splits = 1;
  const std::int64_t chunks_per_split = chunks > 0 ? (chunks + splits - 1) / splits : 1;
  g.k_per_split = chunks_per_split * kSkinnyChunk;
  g.splits = chunks > 0 ? (chunks + chunks_per_split - 1) / chunks_per_split : 1;
  return g;
}
cudaError_t skinny_gemm(const SkinnyGemm& g, const float* x, const void* w, LowType w_type,
                        const float* bias, UnaryOp op, float alpha, float beta, float* y,
                        float* partials, unsigned* tickets, cudaStream_t stream);

// Reference GEMM (tactic 0, the oracle): for each batch entry,
// d[m, n] = sum_k opA(a)[m, k] * opB(b)[k, n] + bias[n]; row-major; strides in elements, 0 =
// broadcast over the batch; float everywhere.
struct NaiveGemm {
  std::int64_t m = 0, n = 0, k = 0, batch = 1;
  bool trans_a = false, trans_b = false;
  std::int64_t stride_a = 0, stride_b = 0, stride_d = 0;
};
cudaError_t naive_gemm(const NaiveGemm& shape, const float* a, const float* b, const float* bias,
                       float* d, cudaStream_t stream);

// im2col for 2-D convolution (group 1): x [N, C, H, W] -> col [k_rows, N, OH*OW] in `type` (so
// one GEMM covers every image: [OC, k_rows] x [k_rows, N*OH*OW]), where
// rows 0..C*KH*KW-1 hold the patches, row C*KH*KW holds 1 when `ones_row` (the bias rides in the
// weight matrix) and the remaining rows up to k_rows are 0 (alignment padding).
struct Im2Col {
  std::int64_t batch = 0, channels = 0, height = 0, width = 0;
  std::int64_t kernel_h = 0, kernel_w = 0, out_h = 0, out_w = 0;
  std::int64_t stride_h = 1, stride_w = 1, pad_top = 0, pad_left = 0, dilation_h = 1,
               dilation_w = 1;
  std::int64_t k_rows = 0;
  bool ones_row = false;
  // Elements per row of col (>= batch * OH * OW; padded to 8 so FP16 rows stay 16-byte aligned;
  // the padding is never written).
  std::int64_t row_stride = 0;
};
cudaError_t im2col(const Im2Col& shape, const float* x, void* col, LowType type,
                   cudaStream_t stream);

// One recurrent time step for every direction at once, ONNX semantics (GRU gates z,r,h; LSTM
// i,o,f,c; default activations). Layouts: xw [T, B, D*G*H] (input projection incl. folded biases),
// hr [D, B, G*H] (recurrent projection, GEMM tactic), h_prev/h_next/c [D, B, H],
// y [T, D, B, H] (may be null), rbn [D, H] (GRU linear_before_reset recurrent bias of the h gate,
// else null), h_next_low: h_next converted to low_type for the next step's GEMM (or null).
struct RecurrentStep {
  int gates = 3;  // 3 GRU, 4 LSTM
  int directions = 1;
  bool reverse_only = false;
  bool linear_before_reset = true;
  std::int64_t seq = 0, batch = 0, hidden = 0;
  int step = 0;
  const float* xw = nullptr;
  const float* hr = nullptr;
  const float* h_prev = nullptr;
  float* h_next = nullptr;
  float* c = nullptr;
  float* y = nullptr;
  const float* rbn = nullptr;
  void* h_next_low = nullptr;
  LowType low_type = LowType::kF32;
};
cudaError_t recurrent_gates(const RecurrentStep& step, cudaStream_t stream);
// Fused tactic: the recurrent mat-vec (r: [D, G*H, H] in r_type) and the gates in one launch,
// one warp per hidden unit and batch tile. hr is unused.
cudaError_t recurrent_fused(const RecurrentStep& step, const void* r, LowType r_type,
                            cudaStream_t stream);

// Persistent tactic: every time step of the fused tactic in one cooperative launch, the grid
// meeting at a barrier between steps. Each block keeps its units' rows of r in shared memory for
// as many gates as still let the whole grid be resident (VOXRT_CUDA_RESIDENT_GATES caps it). h0
// holds the initial state, h1 is the other buffer; the final state ends in h0 when seq is even,
// else h1 (as the per-step loop leaves it). `barrier` is device memory of
// grid_barrier_bytes(directions, batch, hidden), 16-byte aligned, that the launcher zeroes first.
// cudaErrorCooperativeLaunchTooLarge when the blocks cannot all be resident.
//
// The blocks of one (direction, batch tile) only read the h rows they write themselves, so each
// such group meets at its own barrier: one arrival counter per group that only grows during a
// launch (step t waits for (t + 1) * blocks-per-group arrivals), so a step needs one atomic and
// no reset, and a group never waits for another direction or batch tile.
//
// By default (VOXRT_CUDA_TAGGED_STATE unset or not 0) the counters are not used between steps:
// h travels in two buffers of 8-byte words [2][directions][batch][hidden] after them, each
// word the value and the number of the step that wrote it, and a block waits for the words it
// reads to carry the step it expects (a step then costs one pass through L2 instead of a fence,
// an atomic and a poll before the read).
struct GridBarrier {
  unsigned arrived = 0;
};
inline std::size_t grid_barrier_counter_bytes(std::int64_t directions, std::int64_t batch) {
  const std::size_t bytes = sizeof(GridBarrier) * static_cast<std::size_t>(directions * batch);
  return (bytes + 15) / 16 * 16;  // the tagged words are read 16 bytes at a time
}
inline std::size_t grid_barrier_bytes(std::int64_t directions, std::int64_t batch,
                                      std::int64_t hidden) {
  return grid_barrier_counter_bytes(directions, batch) +
         2 * sizeof(unsigned long long) * static_cast<std::size_t>(directions * batch * hidden);
}
inline unsigned long long* tagged_state_words(GridBarrier* barrier, std::int64_t directions,
                                              std::int64_t batch) {
  return reinterpret_cast<unsigned long long*>(reinterpret_cast<char*>(barrier) +
                                               grid_barrier_counter_bytes(directions, batch));
}
cudaError_t recurrent_persistent(const RecurrentStep& step, const void* r, LowType r_type,
                                 float* h0, float* h1, GridBarrier* barrier, cudaStream_t stream);

// The persistent tactic's K-split kernel (recurrent_ksplit.cu) for LSTM layers at batch 1: a
// block of kKsplitWarps warps owns 16 units and each warp a slice of H / 16 of k for all their
// rows (FP32 R: half of its rows in registers, half in shared memory, CUDA cores; FP16/BF16 R:
// all of them in registers as tensor-core fragments). Applies when ksplit_applies: 4 gates,
// batch 1, H a multiple of 64 (FP32) or 256 (FP16/BF16) up to kKsplitMaxHidden. Same arguments
// and results as recurrent_persistent (tagged exchange always); cudaErrorNotSupported when it
// does not apply or its grid cannot be resident, before anything is enqueued.
// recurrent_persistent takes it by default at H >= 512 (VOXRT_CUDA_PERSISTENT_KSPLIT=0: never,
// =1: wherever it applies).
constexpr int kKsplitWarps = 16;
constexpr std::int64_t kKsplitMaxHidden = 1024;
bool ksplit_applies(const RecurrentStep& step, LowType r_type);
cudaError_t recurrent_persistent_ksplit(const RecurrentStep& step, const void* r, LowType r_type,
                                        float* h0, float* h1, GridBarrier* barrier,
                                        cudaStream_t stream);

// Tensor-core persistent tactic (recurrent_tc.cu): every step in one cooperative launch, each
// block owning 16 units x a batch tile of 32 or 64 rows, its R rows in shared memory, the product
// on WMMA tensor cores (FP16/BF16 r, float accumulation), h exchanged between blocks in r's type
// through `exchange` ([2][D][B][H], 16-byte aligned) with an arrival barrier per step. Uses
// step.xw, y, rbn, gates, directions, reverse_only, seq, batch, hidden; hr, h_prev, h_next, c
// and h_next_low are not used. h/c initial may be null (zeros), final may be null (not written).
inline constexpr int kRecurrentTcUnits = 16;
struct RecurrentTcLaunch {
  RecurrentStep step;
  const void* r = nullptr;  // [D, G*H, H]
  const float* h_initial = nullptr;
  const float* c_initial = nullptr;
  float* h_final = nullptr;
  float* c_final = nullptr;
  void* exchange = nullptr;
  GridBarrier* barrier = nullptr;  // D * ceil(B / batch_tile) counters, zeroed by the launcher
};
// The batch tile (32 or 64) with which the whole grid is resident on the current device, or 0
// when none is (or the shape or type is not taken: H % 16 != 0, FP32). Also lets the kernel use
// the shared memory it needs; call it before launching, outside any graph capture.
cudaError_t recurrent_tc_plan(int gates, int directions, std::int64_t batch, std::int64_t hidden,
                              LowType type, int* batch_tile);
cudaError_t recurrent_persistent_tc(const RecurrentTcLaunch& launch, LowType type, int batch_tile,
                                    cudaStream_t stream);

}  // namespace voxrt::backends::cuda::ops
