// cuBLASLt's IMMA (int8 x int8 -> int32) GEMM of the CUDA INT8 dense layers (int8_gemm.cpp), on
// the layout of int8_gemm_host.h: acc^T [padded_columns, rows] (column-major, i.e. acc as
// [rows][padded_columns] row-major) = W^T x X^T, W stored [padded_columns][padded_depth] (op T),
// X [rows][padded_depth] (op N): the "TN" form, the one cuBLASLt's IMMA kernels take with the
// plain column order. Compute CUBLAS_COMPUTE_32I, alpha 1 and beta 0 as int32.
#pragma once

#include <cublasLt.h>

#include <cstdint>
#include <memory>

#include "backends/cuda/cuda_common.h"

namespace voxrt::backends::cuda {

// A layer's constants on the device (int8_gemm_host.h's Int8GemmLayer, uploaded).
struct DeviceInt8Layer {
  std::int64_t columns = 0, depth = 0, padded_columns = 0, padded_depth = 0;
  float inverse_input_scale = 1.0f, input_zero_point = 0.0f;
  const std::int8_t* weights = nullptr;
  const float* scales = nullptr;
  const std::int32_t* zero_point_sums = nullptr;
  const float* bias = nullptr;  // null: none
};

class ImmaGemm {
 public:
  ImmaGemm() = default;
  ImmaGemm(const ImmaGemm&) = delete;
  ImmaGemm& operator=(const ImmaGemm&) = delete;
  ~ImmaGemm();
  // candidate: index into cuBLASLt's heuristic list (unsupported when it offers fewer).
  static Expected<std::unique_ptr<ImmaGemm>> create(std::int64_t padded_columns,
                                                    std::int64_t padded_depth, std::int64_t rows,
                                                    int candidate, cublasLtHandle_t lt);
  // acc = W x^T as above; every pointer 16-byte aligned.
  Status run(const std::int8_t* weights, const std::int8_t* x, std::int32_t* acc,
             const CudaRunContext& context) const;

 private:
  cublasLtMatmulDesc_t op_ = nullptr;
  cublasLtMatrixLayout_t w_ = nullptr, x_ = nullptr, d_ = nullptr;
  cublasLtMatmulAlgo_t algo_{};
};

}  // namespace voxrt::backends::cuda
