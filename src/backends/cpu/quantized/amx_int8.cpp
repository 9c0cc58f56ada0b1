// The AMX INT8 GEMM (int8_gemm_amx.h) as an Int8GemmRunner: its own tile-packed copy of the
// layer's weights, column groups of 64 split over the pool ("amx_int8") or all on the calling
// thread ("amx_unsplit_int8"). AMX tiles read whole
// 16-row x 64-byte blocks, so when the activation rows are not already such blocks (depth not a
// multiple of 64, or rows not a multiple of 16) they are first copied into zero-padded rows of
// the calling thread's scratch: a few KiB for a streaming chunk, next to the weights' hundreds.
#include <algorithm>
#include <cstring>

#include "backends/cpu/dense/dense_common.h"
#include "backends/cpu/quantized/int8_gemm_amx.h"
#include "backends/cpu/quantized/int8_gemm_runner.h"
#include "core/thread_pool.h"

namespace voxrt::backends::cpu::quantized {
namespace {

// Scratch slot of the padded copy: the dense INT8 kernels hold slots 0-2 across the GEMM.
constexpr int kPaddedRowsSlot = 3;

class AmxInt8GemmRunner final : public Int8GemmRunner {
 public:
  AmxInt8GemmRunner(const PackedInt8Weights& weights, const Int8Epilogue& epilogue, bool split)
      : weights_(pack_amx_int8_weights(weights)), epilogue_(epilogue), split_(split) {}

  Status run(const std::uint8_t* a, std::int64_t lda, std::int64_t rows, float* c, std::int64_t ldc,
             KernelContext& context) const override {
    if (rows == 0) return Status::ok();
    const std::int64_t depth_bytes = weights_.padded_depth();
    const std::int64_t padded_rows = (rows + kAmxTileRows - 1) / kAmxTileRows * kAmxTileRows;
    if (lda < depth_bytes || padded_rows != rows) {
      auto* padded = static_cast<std::uint8_t*>(dense::thread_scratch_bytes(
          static_cast<std::size_t>(padded_rows * depth_bytes), kPaddedRowsSlot));
      // Zeros past depth meet zero weights; padding rows give sums nobody stores.
      std::memset(padded, 0, static_cast<std::size_t>(padded_rows * depth_bytes));
      const std::int64_t row_bytes = std::min(lda, depth_bytes);
      for (std::int64_t m = 0; m < rows; ++m) {
        std::memcpy(padded + m * depth_bytes, a + m * lda, static_cast<std::size_t>(row_bytes));
      }
      a = padded;
      lda = depth_bytes;
    }
    // Unsplit: on busy cores a split 16 x 256 x 1024 product (some 2 us of tile work) timed
    // slower than oneDNN's FP32 at 2 threads, so the autotuner kept every Conformer MatMul FP32;
    // on idle ones the split can win. The autotuner times both tactics.
    const std::int64_t threads =
        split_ ? std::min<std::int64_t>(context.pool->threads(), weights_.groups) : 1;
    if (threads <= 1) {
      int8_gemm_amx(a, lda, rows, weights_, epilogue_, 0, weights_.groups, c, ldc);
      return Status::ok();
    }
    context.pool->parallel_for(weights_.groups, 1, [&](std::int64_t begin, std::int64_t end) {
      int8_gemm_amx(a, lda, rows, weights_, epilogue_, begin, end, c, ldc);
    });
    return Status::ok();
  }

 private:
  AmxInt8Weights weights_;
  const Int8Epilogue& epilogue_;
  bool split_;
};

}  // namespace

Expected<std::unique_ptr<Int8GemmRunner>> make_amx_int8_gemm_runner(
    const PackedInt8Weights& weights, const Int8Epilogue& epilogue, bool split) {
  if (!amx_int8_available()) {
    return unsupported("the amx_int8 GEMM needs AMX-TILE and AMX-INT8 and the kernel's ",
                       "permission to use the tile data; this CPU or kernel has none");
  }
  return std::unique_ptr<Int8GemmRunner>(new AmxInt8GemmRunner(weights, epilogue, split));
}

}  // namespace voxrt::backends::cpu::quantized
