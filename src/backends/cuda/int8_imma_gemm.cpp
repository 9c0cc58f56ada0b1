#include "backends/cuda/int8_imma_gemm.h"

namespace voxrt::backends::cuda {

ImmaGemm::~ImmaGemm() {
  if (d_) cublasLtMatrixLayoutDestroy(d_);
  if (x_) cublasLtMatrixLayoutDestroy(x_);
  if (w_) cublasLtMatrixLayoutDestroy(w_);
  if (op_) cublasLtMatmulDescDestroy(op_);
}

Expected<std::unique_ptr<ImmaGemm>> ImmaGemm::create(std::int64_t padded_columns,
                                                     std::int64_t padded_depth, std::int64_t rows,
                                                     int candidate, cublasLtHandle_t lt) {
  auto gemm = std::make_unique<ImmaGemm>();
  VOXRT_CUBLAS_TRY(cublasLtMatmulDescCreate(&gemm->op_, CUBLAS_COMPUTE_32I, CUDA_R_32I));
  const cublasOperation_t transpose = CUBLAS_OP_T, plain = CUBLAS_OP_N;
  VOXRT_CUBLAS_TRY(cublasLtMatmulDescSetAttribute(gemm->op_, CUBLASLT_MATMUL_DESC_TRANSA,
                                                  &transpose, sizeof(transpose)));
  VOXRT_CUBLAS_TRY(cublasLtMatmulDescSetAttribute(gemm->op_, CUBLASLT_MATMUL_DESC_TRANSB, &plain,
                                                  sizeof(plain)));
  const auto u = [](std::int64_t v) { return static_cast<std::uint64_t>(v); };
  VOXRT_CUBLAS_TRY(cublasLtMatrixLayoutCreate(&gemm->w_, CUDA_R_8I, u(padded_depth),
                                              u(padded_columns), padded_depth));
  VOXRT_CUBLAS_TRY(
      cublasLtMatrixLayoutCreate(&gemm->x_, CUDA_R_8I, u(padded_depth), u(rows), padded_depth));
  VOXRT_CUBLAS_TRY(cublasLtMatrixLayoutCreate(&gemm->d_, CUDA_R_32I, u(padded_columns), u(rows),
                                              padded_columns));
  cublasLtMatmulPreference_t preference = nullptr;
  VOXRT_CUBLAS_TRY(cublasLtMatmulPreferenceCreate(&preference));
  const std::uint64_t workspace = kLtWorkspaceBytes;
  cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                       &workspace, sizeof(workspace));
  cublasLtMatmulHeuristicResult_t results[kInt8GemmCandidates] = {};
  int returned = 0;
  const cublasStatus_t heuristic =
      cublasLtMatmulAlgoGetHeuristic(lt, gemm->op_, gemm->w_, gemm->x_, gemm->d_, gemm->d_,
                                     preference, kInt8GemmCandidates, results, &returned);
  cublasLtMatmulPreferenceDestroy(preference);
  VOXRT_RETURN_IF_ERROR(cublas_status(heuristic, "cublasLtMatmulAlgoGetHeuristic (int8)"));
  if (returned <= candidate) {
    return unsupported("cuBLASLt offers ", returned, " int8 algorithm(s) for a ", rows, "x",
                       padded_columns, "x", padded_depth, " IMMA GEMM, expected at least ",
                       candidate + 1);
  }
  gemm->algo_ = results[candidate].algo;
  return gemm;
}

Status ImmaGemm::run(const std::int8_t* weights, const std::int8_t* x, std::int32_t* acc,
                     const CudaRunContext& context) const {
  const std::int32_t alpha = 1, beta = 0;
  VOXRT_CUBLAS_TRY(cublasLtMatmul(context.lt, op_, &alpha, weights, w_, x, x_, &beta, acc, d_, acc,
                                  d_, &algo_, context.lt_workspace, context.lt_workspace_bytes,
                                  context.stream));
  return Status::ok();
}

}  // namespace voxrt::backends::cuda
