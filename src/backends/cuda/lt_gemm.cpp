// Row-major GEMMs on cuBLASLt. cuBLASLt is column-major: a row-major [m, n] result is a
// column-major [n, m] one, so D^T = opB(b)^T * opA(a)^T and the bias epilogue (per row of the
// column-major D) is per column n of the row-major result.
#include <algorithm>

#include "backends/cuda/cuda_common.h"

namespace voxrt::backends::cuda {
namespace {

cudaDataType_t cuda_type(ops::LowType type) {
  switch (type) {
    case ops::LowType::kF16: return CUDA_R_16F;
    case ops::LowType::kBF16: return CUDA_R_16BF;
    default: return CUDA_R_32F;
  }
}

Status set_batch(cublasLtMatrixLayout_t layout, std::int64_t batch, std::int64_t stride) {
  if (batch <= 1) return Status::ok();
  const int count = static_cast<int>(batch);
  VOXRT_CUBLAS_TRY(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
                                                    &count, sizeof(count)));
  VOXRT_CUBLAS_TRY(cublasLtMatrixLayoutSetAttribute(
      layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof(stride)));
  return Status::ok();
}

}  // namespace

LtGemm::~LtGemm() {
  if (d_) cublasLtMatrixLayoutDestroy(d_);
  if (y_) cublasLtMatrixLayoutDestroy(y_);
  if (x_) cublasLtMatrixLayoutDestroy(x_);
  if (op_) cublasLtMatmulDescDestroy(op_);
}

Expected<std::unique_ptr<LtGemm>> LtGemm::create(const LtGemmShape& s, int candidate,
                                                 cublasLtHandle_t lt) {
  auto gemm = std::unique_ptr<LtGemm>(new LtGemm());
  gemm->shape_ = s;
  const cublasComputeType_t compute = s.operand_type == ops::LowType::kF32 && s.tf32
                                          ? CUBLAS_COMPUTE_32F_FAST_TF32
                                          : CUBLAS_COMPUTE_32F;
  VOXRT_CUBLAS_TRY(cublasLtMatmulDescCreate(&gemm->op_, compute, CUDA_R_32F));
  // cuBLAS "A" is our b, cuBLAS "B" is our a.
  const cublasOperation_t op_x = s.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_y = s.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  VOXRT_CUBLAS_TRY(
      cublasLtMatmulDescSetAttribute(gemm->op_, CUBLASLT_MATMUL_DESC_TRANSA, &op_x, sizeof(op_x)));
  VOXRT_CUBLAS_TRY(
      cublasLtMatmulDescSetAttribute(gemm->op_, CUBLASLT_MATMUL_DESC_TRANSB, &op_y, sizeof(op_y)));
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  switch (s.epilogue) {
    case LtGemmShape::Epilogue::kNone:
      epilogue = s.bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
      break;
    case LtGemmShape::Epilogue::kRelu:
      epilogue = s.bias ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_RELU;
      break;
    case LtGemmShape::Epilogue::kGelu:
      epilogue = s.bias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU;
      break;
  }
  VOXRT_CUBLAS_TRY(cublasLtMatmulDescSetAttribute(gemm->op_, CUBLASLT_MATMUL_DESC_EPILOGUE,
                                                  &epilogue, sizeof(epilogue)));
  if (s.bias) {
    const cudaDataType_t bias_type = CUDA_R_32F;
    VOXRT_CUBLAS_TRY(cublasLtMatmulDescSetAttribute(gemm->op_, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE,
                                                    &bias_type, sizeof(bias_type)));
  }
  const cudaDataType_t ab = cuda_type(s.operand_type);
  const auto u = [](std::int64_t v) { return static_cast<std::uint64_t>(v); };
  // Stored shapes, column-major view of the row-major buffers.
  if (s.trans_b) {
    VOXRT_CUBLAS_TRY(cublasLtMatrixLayoutCreate(&gemm->x_, ab, u(s.k), u(s.n), s.k));
  } else {
    VOXRT_CUBLAS_TRY(
        cublasLtMatrixLayoutCreate(&gemm->x_, ab, u(s.n), u(s.k), s.ld_b > 0 ? s.ld_b : s.n));
  }
  if (s.trans_a) {
    VOXRT_CUBLAS_TRY(cublasLtMatrixLayoutCreate(&gemm->y_, ab, u(s.m), u(s.k), s.m));
  } else {
    VOXRT_CUBLAS_TRY(cublasLtMatrixLayoutCreate(&gemm->y_, ab, u(s.k), u(s.m), s.k));
  }
  VOXRT_CUBLAS_TRY(
      cublasLtMatrixLayoutCreate(&gemm->d_, CUDA_R_32F, u(s.n), u(s.m), s.ld_d > 0 ? s.ld_d : s.n));
  VOXRT_RETURN_IF_ERROR(set_batch(gemm->x_, s.batch, s.stride_b));
  VOXRT_RETURN_IF_ERROR(set_batch(gemm->y_, s.batch, s.stride_a));
  VOXRT_RETURN_IF_ERROR(set_batch(gemm->d_, s.batch, s.stride_d));

  cublasLtMatmulPreference_t preference = nullptr;
  VOXRT_CUBLAS_TRY(cublasLtMatmulPreferenceCreate(&preference));
  const std::uint64_t workspace = kLtWorkspaceBytes;
  cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                       &workspace, sizeof(workspace));
  cublasLtMatmulHeuristicResult_t results[kGemmLtCandidates] = {};
  int returned = 0;
  const cublasStatus_t heuristic =
      cublasLtMatmulAlgoGetHeuristic(lt, gemm->op_, gemm->x_, gemm->y_, gemm->d_, gemm->d_,
                                     preference, kGemmLtCandidates, results, &returned);
  cublasLtMatmulPreferenceDestroy(preference);
  VOXRT_RETURN_IF_ERROR(cublas_status(heuristic, "cublasLtMatmulAlgoGetHeuristic"));
  if (returned <= 0) {
    return unsupported("cuBLASLt has no algorithm for a ", s.m, "x", s.n, "x", s.k, " GEMM (batch ",
                       s.batch, ")");
  }
  gemm->algo_ = results[std::clamp(candidate, 0, returned - 1)].algo;
  return gemm;
}

Status LtGemm::run(const void* a, const void* b, float* d, const float* bias,
                   const CudaRunContext& context) const {
  if (shape_.bias) {
    VOXRT_CUBLAS_TRY(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                                                    sizeof(bias)));
  }
  const float alpha = 1.0f, beta = 0.0f;
  VOXRT_CUBLAS_TRY(cublasLtMatmul(context.lt, op_, &alpha, b, x_, a, y_, &beta, d, d_, d, d_,
                                  &algo_, context.lt_workspace, context.lt_workspace_bytes,
                                  context.stream));
  return Status::ok();
}

}  // namespace voxrt::backends::cuda
