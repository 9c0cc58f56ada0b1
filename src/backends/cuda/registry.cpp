// The CUDA backend's one registration table: op family -> tactics and kernel factory.
#include <cstdlib>
#include <iterator>

#include "backends/cpu/quantized/quantized_kernels.h"
#include "backends/cuda/conv_width_fold.h"
#include "backends/cuda/cuda_common.h"
#include "backends/cuda/cudnn_api.h"
#include "backends/cuda/cudnn_rnn.h"
#include "backends/cuda/dense_common.h"
#include "backends/cuda/int8_gemm_host.h"

namespace voxrt::backends::cuda {

bool runs_int8(const ir::Node& node) {
  return cpu::quantized::marked_int8(node) && cuda_int8_applies(node);
}

std::string unsupported_reason(const ir::Node& node, Precision precision) {
  // At int8 a layer the INT8 kernels take runs there; every other one at fp16.
  if (precision == Precision::kInt8) {
    if (runs_int8(node)) return "";
    precision = Precision::kFp16;
  }
  switch (ir::op_family(node.op)) {
    case ir::OpFamily::kElementwise: return elementwise_unsupported(node);
    case ir::OpFamily::kReduction: return reduction_unsupported(node);
    case ir::OpFamily::kDataMovement: return data_movement_unsupported(node);
    case ir::OpFamily::kDense: return dense_unsupported(node);
    case ir::OpFamily::kRecurrent: return recurrent_unsupported(node);
    case ir::OpFamily::kPooling: return pooling_unsupported(node);
    case ir::OpFamily::kControlFlow: return "control flow (If) is not run on the CUDA backend";
    case ir::OpFamily::kAttention: return attention_unsupported(node);
  }
  return "unknown op family";
}

std::vector<TacticInfo> tactics_for(const ir::Node& node, Precision precision) {
  if (precision == Precision::kInt8) {
    if (runs_int8(node)) {
      // The IMMA tactics right after the reference (index 0 stays the oracle, which the
      // autotuner times last and a build without autotuning passes over), then the layer's fp16
      // ones (ids apart from the IMMA ones), so that timing can keep a layer where INT8 is no
      // faster in fp16 (the builder then records it fp16), as the CPU keeps such layers fp32.
      // (With VOXRT_CUDA_INT8_FP16_FALLBACK=0 the autotuner leaves the fp16 ones out:
      // select_tactics in backend.cpp.)
      const std::vector<TacticInfo> fp16 = tactics_for(node, Precision::kFp16);
      std::vector<TacticInfo> tactics;
      if (!fp16.empty()) tactics.push_back(fp16.front());
      for (const TacticInfo& t : int8_dense_tactics()) tactics.push_back(t);
      if (!fp16.empty()) tactics.insert(tactics.end(), fp16.begin() + 1, fp16.end());
      return tactics;
    }
    precision = Precision::kFp16;
  }
  if (!unsupported_reason(node, precision).empty()) return {};
  switch (ir::op_family(node.op)) {
    case ir::OpFamily::kDense: {
      if (is_grouped_conv(node)) return grouped_conv_tactics(node, precision);
      if (node.op == ir::OpKind::kEinsum) return {{kReferenceTactic, "naive"}};
      std::vector<TacticInfo> tactics{{kReferenceTactic, "reference"}};
      for (int i = 0; i < kGemmLtCandidates; ++i)
        tactics.push_back({kGemmLtFirst + static_cast<TacticId>(i), str_cat("cublaslt_", i)});
      for (std::size_t i = 0; i < std::size(kGemmLtSplitK); ++i)
        tactics.push_back({kGemmLtFirst + static_cast<TacticId>(kGemmLtCandidates + i),
                           str_cat("cublaslt_splitk", kGemmLtSplitK[i])});
      if (skinny_gemm_listed(node, precision)) tactics.push_back({kGemmSkinny, "skinny"});
      const bool conv = node.op == ir::OpKind::kConv || node.op == ir::OpKind::kFusedConv;
      if (conv && cudnn_api()) {
        tactics.push_back({kConvCudnnHeuristic, "cudnn_heuristic"});
        tactics.push_back({kConvCudnnImplicitGemm, "cudnn_implicit_gemm"});
        tactics.push_back({kConvCudnnImplicitPrecompGemm, "cudnn_implicit_precomp_gemm"});
        tactics.push_back({kConvCudnnGemm, "cudnn_gemm"});
        if (precision != Precision::kFp32) {
          tactics.push_back({kConvCudnnFftTiling, "cudnn_fft_tiling"});
          tactics.push_back({kConvCudnnWinogradNonfused, "cudnn_winograd_nonfused"});
        }
        if (precision == Precision::kFp16 || precision == Precision::kBf16) {
          tactics.push_back({kConvCudnnNhwcHeuristic, "cudnn_nhwc_heuristic"});
          tactics.push_back({kConvCudnnNhwcImplicitGemm, "cudnn_nhwc_implicit_gemm"});
          tactics.push_back(
              {kConvCudnnNhwcImplicitPrecompGemm, "cudnn_nhwc_implicit_precomp_gemm"});
        }
        // Opt-in until they have run on a device: written in a session without one
        // (docs/cuda_backend.md). VOXRT_CUDA_CUDNN_GRAPH=1 lists them; the gpu tests set it.
        const char* graph_opt_in = std::getenv("VOXRT_CUDA_CUDNN_GRAPH");
        if (graph_opt_in && graph_opt_in[0] == '1' && cudnn_graph_api()) {
          for (int i = 0; i < kConvCudnnGraphCandidates; ++i)
            tactics.push_back(
                {kConvCudnnGraphFirst + static_cast<TacticId>(i), str_cat("cudnn_graph_", i)});
        }
      }
      if (conv && direct_conv_applies_to(node, precision))
        tactics.push_back({kConvDirectTensorCore, "direct_tc"});
      if (conv && cudnn_api()) {
        for (int i = 0; i < kConvWidthFoldCandidates; ++i) {
          const TacticId id = kConvWidthFoldFirst + static_cast<TacticId>(i);
          if (width_fold_listed_for(node, precision, id))
            tactics.push_back({id, str_cat("fold_w", kWidthFoldTileWidths[i])});
        }
        if (width_fold_listed_for(node, precision, kConvWidthFoldPrecomp))
          tactics.push_back(
              {kConvWidthFoldPrecomp, str_cat("fold_w", kWidthFoldTileWidths[0], "_precomp")});
      }
      if (conv) {
        for (int i = 0; i < kConvWidthFoldCandidates; ++i) {
          const TacticId id = kConvWidthFoldGemmFirst + static_cast<TacticId>(i);
          if (width_fold_listed_for(node, precision, id))
            tactics.push_back({id, str_cat("fold_gemm_w", kWidthFoldTileWidths[i])});
        }
        if (width_fold_listed_for(node, precision, kConvWidthFoldGemmSecond))
          tactics.push_back(
              {kConvWidthFoldGemmSecond, str_cat("fold_gemm_w", kWidthFoldTileWidths[0], "_1")});
      }
      return tactics;
    }
    case ir::OpFamily::kRecurrent: {
      std::vector<TacticInfo> tactics{{kReferenceTactic, "reference"},
                                      {kRecurrentLt, "cublaslt_gates"},
                                      {kRecurrentFused, "fused_matvec"},
                                      {kRecurrentPersistent, "persistent_matvec"}};
      // Split-K takes FP32/TF32 operands only (LtGemm::create).
      const bool split_k = precision == Precision::kFp32 || precision == Precision::kTf32;
      for (int i = 0; i < kRecurrentPersistentInputVariants; ++i) {
        const int candidate = i + 1;
        if (candidate >= kGemmLtCandidates && !split_k) break;
        tactics.push_back({kRecurrentPersistentInputFirst + static_cast<TacticId>(i),
                           candidate < kGemmLtCandidates
                               ? str_cat("persistent_matvec_in", candidate)
                               : str_cat("persistent_matvec_in_splitk",
                                         kGemmLtSplitK[candidate - kGemmLtCandidates])});
      }
      if (precision == Precision::kFp32)
        tactics.push_back({kRecurrentPersistentInputSplitTf32, "persistent_matvec_in_3xtf32"});
      if (cudnn_rnn_takes(node) && cudnn_rnn_api()) {
        tactics.push_back({kRecurrentCudnnStandard, "cudnn_rnn"});
        tactics.push_back({kRecurrentCudnnPersistStatic, "cudnn_rnn_persist_static"});
        if (precision != Precision::kFp32)
          tactics.push_back({kRecurrentCudnnPersistStaticF32, "cudnn_rnn_persist_static_f32"});
      }
      if (persistent_tc_applies_to(node, precision))
        tactics.push_back({kRecurrentPersistentTensorCore, "persistent_tc"});
      return tactics;
    }
    case ir::OpFamily::kAttention: return attention_tactics(node, precision);
    default:
      // A FusedPointwise node runs the kernel NVRTC compiled for its program (fused_pointwise.cpp).
      if (node.op == ir::OpKind::kFusedPointwise) return {{kReferenceTactic, "nvrtc"}};
      return {{kReferenceTactic, "cuda"}};
  }
}

Expected<std::unique_ptr<CudaKernel>> create_kernel(const ir::Node& node, TacticId tactic,
                                                    KernelBuildContext& build) {
  if (build.precision() == Precision::kInt8 && !(runs_int8(node) && is_int8_gemm_tactic(tactic))) {
    // An fp16 tactic at int8 (a layer without INT8 kernels, or one timed against its IMMA ones).
    build.set_precision(Precision::kFp16);
    auto kernel = create_kernel(node, tactic, build);
    build.set_precision(Precision::kInt8);
    return kernel;
  }
  const std::string why = unsupported_reason(node, build.precision());
  if (!why.empty()) return unsupported(node.describe(), ": ", why);
  switch (ir::op_family(node.op)) {
    case ir::OpFamily::kElementwise: return make_elementwise_kernel(node);
    case ir::OpFamily::kReduction: return make_reduction_kernel(node, build);
    case ir::OpFamily::kDataMovement: return make_data_movement_kernel(node, build);
    case ir::OpFamily::kDense: return make_dense_kernel(node, tactic, build);
    case ir::OpFamily::kRecurrent: return make_recurrent_kernel(node, tactic, build);
    case ir::OpFamily::kPooling: return make_pooling_kernel(node);
    case ir::OpFamily::kAttention: return make_attention_kernel(node, tactic, build);
    default: break;
  }
  return unsupported(node.describe(), ": no CUDA kernel");
}

}  // namespace voxrt::backends::cuda
