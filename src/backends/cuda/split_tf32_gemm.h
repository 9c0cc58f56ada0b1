// FP32-accurate GEMMs on TF32 tensor cores ("3xTF32"): each FP32 operand x is split into
// hi = x rounded to TF32 and lo = x - hi (exact in FP32), and A * B is taken as
// A_lo * B_hi + A_hi * B_lo + A_hi * B_hi, three cuBLASLt TF32 GEMMs accumulating in FP32 (the
// dropped A_lo * B_lo is ~2^-22 of the product, the size of FP32 rounding). At the FP32 BiLSTM's
// input projection (100 x 8192 x 2048) cuBLASLt's FP32 kernels ran at ~29 TFLOPS, half of the
// SMs idle; the tensor cores do the three products in a fraction of that.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "backends/cuda/cuda_common.h"

namespace voxrt::backends::cuda {

// hi[i] = values[i] rounded to the nearest TF32 (ties away from zero, as cvt.rna.tf32.f32;
// truncated where that would overflow), lo[i] = values[i] - hi[i]. For constant operands, split
// once when the engine is loaded.
void split_tf32_host(std::span<const float> values, std::vector<float>& hi, std::vector<float>& lo);

class SplitTf32Gemm {
 public:
  // shape: the GEMM as LtGemm takes it, FP32 operands (operand_type and tf32 are overridden).
  static Expected<std::unique_ptr<SplitTf32Gemm>> create(const LtGemmShape& shape,
                                                         cublasLtHandle_t lt);
  // Device scratch run() needs: A's hi and lo halves.
  std::size_t scratch_bytes() const;
  // d = a * op(b) (+ bias) with b given as its hi/lo halves; a is split into `scratch`.
  Status run(const float* a, const float* b_hi, const float* b_lo, float* d, const float* bias,
             void* scratch, const CudaRunContext& context) const;

 private:
  SplitTf32Gemm() = default;
  LtGemmShape shape_;
  std::unique_ptr<LtGemm> product_;         // no bias: the two small products
  std::unique_ptr<LtGemm> biased_product_;  // A_hi * B_hi with the bias (and the epilogue)
};

}  // namespace voxrt::backends::cuda
