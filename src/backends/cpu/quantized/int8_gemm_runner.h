// Who multiplies a quantized layer's activation rows by its packed INT8 weights: our AVX-512
// VNNI GEMM split over the pool, the reference loops, our AMX GEMM (int8_gemm_amx.h) or oneDNN's
// u8 x s8 matmul. The dense
// kernels (dense_int8.cpp) are written once over this interface; each tactic is one runner.
#pragma once

#include <memory>

#include "backends/cpu/quantized/int8_gemm.h"
#include "backends/kernel.h"

namespace voxrt::backends::cpu::quantized {

class Int8GemmRunner {
 public:
  virtual ~Int8GemmRunner() = default;
  // c[m * ldc + col] = epilogue(a_row_m . w_col) for rows [0, rows) and every column; a's rows
  // are lda bytes apart with weights.padded_depth() bytes each.
  virtual Status run(const std::uint8_t* a, std::int64_t lda, std::int64_t rows, float* c,
                     std::int64_t ldc, KernelContext& context) const = 0;
};

// kAmx splits a product's column groups over the pool; kAmxUnsplit runs it on the calling thread.
enum class Int8GemmKind { kReference, kVnni, kAmx, kAmxUnsplit, kOneDnn };

// The weights and epilogue must outlive the runner.
Expected<std::unique_ptr<Int8GemmRunner>> make_int8_gemm_runner(
    Int8GemmKind kind, const PackedInt8Weights& weights, const Int8Epilogue& epilogue,
    const ActivationQuantization& input);
// Ours on AMX tiles (amx_int8.cpp), split over the pool or not; unsupported where
// amx_int8_available() is false.
Expected<std::unique_ptr<Int8GemmRunner>> make_amx_int8_gemm_runner(
    const PackedInt8Weights& weights, const Int8Epilogue& epilogue, bool split);
// oneDNN's (onednn_int8.cpp).
Expected<std::unique_ptr<Int8GemmRunner>> make_onednn_int8_gemm_runner(
    const PackedInt8Weights& weights, const Int8Epilogue& epilogue,
    const ActivationQuantization& input);

}  // namespace voxrt::backends::cpu::quantized
