#include "backends/cuda/split_tf32_gemm.h"

#include <cstring>

namespace voxrt::backends::cuda {

void split_tf32_host(std::span<const float> values, std::vector<float>& hi,
                     std::vector<float>& lo) {
  hi.resize(values.size());
  lo.resize(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    std::uint32_t bits = 0;
    std::memcpy(&bits, &values[i], 4);
    // TF32 keeps 10 of FP32's 23 mantissa bits: add half of the dropped range, then drop it.
    // Infinities and NaNs (exponent all ones) are kept as they are; a value that would round
    // up to infinity is truncated instead.
    if ((bits & 0x7f800000u) != 0x7f800000u) {
      const std::uint32_t rounded = (bits + 0x1000u) & 0xffffe000u;
      bits = (rounded & 0x7f800000u) == 0x7f800000u ? bits & 0xffffe000u : rounded;
    }
    std::memcpy(&hi[i], &bits, 4);
    lo[i] = values[i] - hi[i];
  }
}

Expected<std::unique_ptr<SplitTf32Gemm>> SplitTf32Gemm::create(const LtGemmShape& shape,
                                                               cublasLtHandle_t lt) {
  std::unique_ptr<SplitTf32Gemm> gemm(new SplitTf32Gemm());
  gemm->shape_ = shape;
  gemm->shape_.operand_type = ops::LowType::kF32;
  gemm->shape_.tf32 = true;
  if (gemm->shape_.batch != 1) return unsupported("3xTF32: batched GEMMs are not split");
  LtGemmShape plain = gemm->shape_;
  plain.bias = false;
  plain.epilogue = LtGemmShape::Epilogue::kNone;
  VOXRT_ASSIGN_OR_RETURN(gemm->product_, LtGemm::create(plain, 0, lt));
  VOXRT_ASSIGN_OR_RETURN(gemm->biased_product_, LtGemm::create(gemm->shape_, 0, lt));
  return gemm;
}

std::size_t SplitTf32Gemm::scratch_bytes() const {
  return 2 * align_up(static_cast<std::size_t>(shape_.m * shape_.k) * sizeof(float));
}

Status SplitTf32Gemm::run(const float* a, const float* b_hi, const float* b_lo, float* d,
                          const float* bias, void* scratch, const CudaRunContext& context) const {
  const std::int64_t n = shape_.m * shape_.k;
  auto* a_hi = static_cast<float*>(scratch);
  auto* a_lo = reinterpret_cast<float*>(static_cast<char*>(scratch) +
                                        align_up(static_cast<std::size_t>(n) * sizeof(float)));
  VOXRT_CUDA_TRY(ops::split_tf32(a, a_hi, a_lo, n, context.stream));
  // The small products first, so the largest term is added last. The epilogue (bias, activation)
  // applies to the accumulated sum: D = act(A_hi * B_hi + D + bias).
  VOXRT_RETURN_IF_ERROR(product_->run(a_lo, b_hi, d, nullptr, context));
  VOXRT_RETURN_IF_ERROR(product_->run(a_hi, b_lo, d, nullptr, context, 1.0f));
  return biased_product_->run(a_hi, b_hi, d, bias, context, 1.0f);
}

}  // namespace voxrt::backends::cuda
