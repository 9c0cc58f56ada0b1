// Row-major GEMMs on cuBLASLt. cuBLASLt is column-major: a row-major [m, n] result is a
// column-major [n, m] one, so D^T = opB(b)^T * opA(a)^T and the bias epilogue (per row of the
// column-major D) is per column n of the row-major result.
#include <algorithm>
#include <iterator>
#include <optional>

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

// `algo` with its K dimension split `splits` ways, when the algorithm allows it, the reduction
// fits the workspace and cuBLASLt accepts the whole configuration for this GEMM.
std::optional<cublasLtMatmulAlgo_t> LtGemm::with_split_k(cublasLtHandle_t lt, const LtGemm& gemm,
                                                         cublasLtMatmulAlgo_t algo, int splits) {
  std::int32_t supported = 0;
  std::size_t written = 0;
  if (cublasLtMatmulAlgoCapGetAttribute(&algo, CUBLASLT_ALGO_CAP_SPLITK_SUPPORT, &supported,
                                        sizeof(supported), &written) != CUBLAS_STATUS_SUCCESS ||
      supported == 0)
    return std::nullopt;
  std::uint32_t schemes = 0;
  if (cublasLtMatmulAlgoCapGetAttribute(&algo, CUBLASLT_ALGO_CAP_REDUCTION_SCHEME_MASK, &schemes,
                                        sizeof(schemes), &written) != CUBLAS_STATUS_SUCCESS)
    return std::nullopt;
  // Partial sums kept in FP32 (the compute type) first: FP16 runs then add in FP32 too.
  for (const std::uint32_t scheme : {std::uint32_t{CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE},
                                     std::uint32_t{CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE},
                                     std::uint32_t{CUBLASLT_REDUCTION_SCHEME_INPLACE}}) {
    if ((schemes & scheme) != scheme) continue;
    cublasLtMatmulAlgo_t candidate = algo;
    const std::int32_t split_count = splits;
    if (cublasLtMatmulAlgoConfigSetAttribute(&candidate, CUBLASLT_ALGO_CONFIG_SPLITK_NUM,
                                             &split_count,
                                             sizeof(split_count)) != CUBLAS_STATUS_SUCCESS ||
        cublasLtMatmulAlgoConfigSetAttribute(&candidate, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME,
                                             &scheme, sizeof(scheme)) != CUBLAS_STATUS_SUCCESS)
      continue;
    cublasLtMatmulHeuristicResult_t checked{};
    if (cublasLtMatmulAlgoCheck(lt, gemm.op_, gemm.x_, gemm.y_, gemm.d_, gemm.d_, &candidate,
                                &checked) != CUBLAS_STATUS_SUCCESS ||
        checked.workspaceSize > kLtWorkspaceBytes)
      continue;
    return candidate;
  }
  return std::nullopt;
}

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
  // Split-K candidates search a longer list: the first heuristic choices on Hopper are often
  // kernels that take no split-K setting.
  const bool split_k = candidate >= kGemmLtCandidates;
  constexpr int kSearched = 16;
  cublasLtMatmulHeuristicResult_t results[kSearched] = {};
  int returned = 0;
  const cublasStatus_t heuristic = cublasLtMatmulAlgoGetHeuristic(
      lt, gemm->op_, gemm->x_, gemm->y_, gemm->d_, gemm->d_, preference,
      split_k ? kSearched : kGemmLtCandidates, results, &returned);
  cublasLtMatmulPreferenceDestroy(preference);
  VOXRT_RETURN_IF_ERROR(cublas_status(heuristic, "cublasLtMatmulAlgoGetHeuristic"));
  if (returned <= 0) {
    return unsupported("cuBLASLt has no algorithm for a ", s.m, "x", s.n, "x", s.k, " GEMM (batch ",
                       s.batch, ")");
  }
  if (!split_k) {
    gemm->algo_ = results[std::clamp(candidate, 0, returned - 1)].algo;
    return gemm;
  }
  const int splits = kGemmLtSplitK[std::clamp(candidate - kGemmLtCandidates, 0,
                                              static_cast<int>(std::size(kGemmLtSplitK)) - 1)];
  if (s.k < 2 * splits) return unsupported("K = ", s.k, " is too short to split ", splits, " ways");
  // With FP16 operands (float D, FP32 compute) cuBLASLt 13.0's split-K results were 4% off the
  // reference on an H200 where every other algorithm passed the 1e-2 test (docs/perf/gpu.md, sixth
  // run), so low-precision GEMMs do not take the split.
  if (s.operand_type != ops::LowType::kF32)
    return unsupported("split-K is used only with FP32/TF32 operands");
  for (int i = 0; i < returned; ++i) {
    if (auto algo = with_split_k(lt, *gemm, results[i].algo, splits)) {
      gemm->algo_ = *algo;
      return gemm;
    }
  }
  return unsupported("none of the ", returned, " cuBLASLt algorithms for a ", s.m, "x", s.n, "x",
                     s.k, " GEMM takes a split-K of ", splits);
}

Status LtGemm::run(const void* a, const void* b, float* d, const float* bias,
                   const CudaRunContext& context, float beta) const {
  if (shape_.bias) {
    VOXRT_CUBLAS_TRY(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                                                    sizeof(bias)));
  }
  const float alpha = 1.0f;
  VOXRT_CUBLAS_TRY(cublasLtMatmul(context.lt, op_, &alpha, b, x_, a, y_, &beta, d, d_, d, d_,
                                  &algo_, context.lt_workspace, context.lt_workspace_bytes,
                                  context.stream));
  return Status::ok();
}

}  // namespace voxrt::backends::cuda
