// Host-side pieces shared by the CUDA backend's kernels and executor: error checks, device
// tensors, the run context, the kernel interface and the per-family factories.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "backends/cuda/cuda_ops.h"
#include "backends/cuda/element_ops.h"
#include "backends/kernel.h"
#include "ir/graph.h"
#include "voxrt/builder.h"
#include "voxrt/status.h"
#include "voxrt/tensor.h"

namespace voxrt::backends::cuda {

Status cuda_status(cudaError_t error, const char* what);
Status cublas_status(cublasStatus_t status, const char* what);

#define VOXRT_CUDA_TRY(expr) \
  VOXRT_RETURN_IF_ERROR(::voxrt::backends::cuda::cuda_status((expr), #expr))
#define VOXRT_CUBLAS_TRY(expr) \
  VOXRT_RETURN_IF_ERROR(::voxrt::backends::cuda::cublas_status((expr), #expr))

// A tensor in device memory (or a device constant). data is null for an omitted input.
struct DevTensor {
  void* data = nullptr;
  DType dtype = DType::kF32;
  Dims dims;
  // The contents, when they were known on the host as the plan was made (constants, and values
  // computed from dims such as Shape arithmetic), else null. Kernels read operands that shape
  // their launch (Slice starts, Pad pads, Tile repeats) here; the device copy is at data.
  const Tensor* host = nullptr;
  std::int64_t count() const { return element_count(dims); }
  std::size_t bytes() const { return static_cast<std::size_t>(count()) * dtype_size_bytes(dtype); }
  template <typename T>
  T* as() const {
    return static_cast<T*>(data);
  }
};

// What a call may use while enqueuing: everything goes on `stream` (and may be captured into a
// CUDA graph, so no allocation, no synchronization, no host reads of device data).
struct CudaRunContext {
  cudaStream_t stream = nullptr;
  cublasLtHandle_t lt = nullptr;
  void* lt_workspace = nullptr;
  std::size_t lt_workspace_bytes = 0;
  void* scratch = nullptr;  // scratch_bytes() of the call, 256-byte aligned
};

inline constexpr std::size_t kLtWorkspaceBytes = 32u << 20;

// A kernel prepared for one set of shapes: descriptors and algorithms chosen, scratch known.
class CudaCall {
 public:
  virtual ~CudaCall() = default;
  virtual std::size_t scratch_bytes() const { return 0; }
  virtual Status enqueue(std::span<const DevTensor> inputs, std::span<const DevTensor> outputs,
                         const CudaRunContext& context) const = 0;
};

// Device memory owned by an executable (weights in their run precision).
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer();
  static Expected<std::shared_ptr<DeviceBuffer>> allocate(std::size_t bytes);
  void* data() const { return data_; }
  std::size_t bytes() const { return bytes_; }

 private:
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
};

// What kernels see at creation (load time): the precision, and a way to put weights on the
// device once. Uploads are synchronous (load time only).
class KernelBuildContext {
 public:
  explicit KernelBuildContext(Precision precision) : precision_(precision) {}
  Precision precision() const { return precision_; }
  // The precision of the node being created next (its layer precision, or the engine's).
  void set_precision(Precision precision) { precision_ = precision; }
  // Low-precision operand type for GEMMs (kF32 for fp32/tf32; kF16 for int8, whose layers that do
  // not run INT8 run at fp16).
  ops::LowType operand_type() const;
  // Uploads float data converted to `type`.
  Expected<void*> upload_f32(std::span<const float> values, ops::LowType type);
  Expected<void*> upload_bytes(const void* data, std::size_t bytes);
  std::vector<std::shared_ptr<DeviceBuffer>>& buffers() { return buffers_; }

 private:
  Precision precision_;
  std::vector<std::shared_ptr<DeviceBuffer>> buffers_;
};

// Prepared for one node; const and shared by every session. prepare() is called once per set of
// input shapes (outside any graph capture) and may call cuBLASLt heuristics.
class CudaKernel {
 public:
  virtual ~CudaKernel() = default;
  virtual Expected<std::unique_ptr<CudaCall>> prepare(std::span<const DevTensor> inputs,
                                                      std::span<const DevTensor> outputs,
                                                      cublasLtHandle_t lt) const = 0;
  // For these inputs (dims, and contents where known on the host; no device pointers yet), is
  // the output a contiguous run of input 0? Then the element where the run starts: the executor
  // makes the output a view at that offset and runs nothing (a Slice of whole rows, such as one
  // layer's state out of a stacked h0).
  virtual std::optional<std::int64_t> aliases_input(std::span<const DevTensor> /*in*/,
                                                    const Dims& /*out*/) const {
    return std::nullopt;
  }
  // For these shapes, can every input be written straight into the output? Then each input's
  // first element in the output: the executor places the inputs there and runs nothing (a
  // Concat of per-layer states along the outermost axis).
  virtual std::optional<std::vector<std::int64_t>> places_inputs_in_output(
      std::span<const Dims> /*in*/, const Dims& /*out*/) const {
    return std::nullopt;
  }
};

// Tactic ids per family (append only; 0 = the reference kernel of that family).
std::vector<TacticInfo> tactics_for(const ir::Node& node, Precision precision);
// Why `node` cannot run on the CUDA backend, or empty when it can.
std::string unsupported_reason(const ir::Node& node, Precision precision);
Expected<std::unique_ptr<CudaKernel>> create_kernel(const ir::Node& node, TacticId tactic,
                                                    KernelBuildContext& build);

// Per family (one translation unit each).
std::string elementwise_unsupported(const ir::Node& node);
Expected<std::unique_ptr<CudaKernel>> make_elementwise_kernel(const ir::Node& node);
// Element strides of `dims` right-aligned to `out` (0 on broadcast dims); out.size() entries.
void broadcast_strides(const Dims& dims, const Dims& out, std::int64_t* strides);
// Every element type on every elementwise op the float kernels above do not take
// (typed_elementwise.cpp): comparisons, logic, Where, Cast, integer and f16/bf16 arithmetic.
std::string typed_elementwise_unsupported(const ir::Node& node);
Expected<std::unique_ptr<CudaKernel>> make_typed_elementwise_kernel(const ir::Node& node);
// The kernels' element type for a voxrt dtype (every dtype has one today).
std::optional<ops::ElemType> elem_type_of(DType dtype);
// FusedPointwise (fused_pointwise.cpp): NVRTC-compiled code per node.
std::string fused_pointwise_unsupported(const ir::Node& node);
Expected<std::unique_ptr<CudaKernel>> make_fused_pointwise_kernel(const ir::Node& node);
// Build time: compiles the node's program for the current device and stores the code in its
// attributes (kept in the engine file); a no-op when code for this SM is there already.
Status attach_fused_pointwise_code(ir::Node& node);
std::string data_movement_unsupported(const ir::Node& node);
Expected<std::unique_ptr<CudaKernel>> make_data_movement_kernel(const ir::Node& node,
                                                                KernelBuildContext& build);
// The values of integer input i as known on the host when the plan was made (DevTensor::host),
// or an unsupported status naming `what` when they are computed on the device.
Expected<std::vector<std::int64_t>> host_ints(std::span<const DevTensor> in, std::size_t i,
                                              const char* what);
// Shape, Size, ConstantOfShape, Range (shape_ops.cpp).
std::string shape_op_unsupported(const ir::Node& node);
Expected<std::unique_ptr<CudaKernel>> make_shape_op_kernel(const ir::Node& node);
// Pad, Tile and the index-driven ops (index_movement.cpp).
std::string index_movement_unsupported(const ir::Node& node);
Expected<std::unique_ptr<CudaKernel>> make_index_movement_kernel(const ir::Node& node);
std::string pooling_unsupported(const ir::Node& node);
Expected<std::unique_ptr<CudaKernel>> make_pooling_kernel(const ir::Node& node);
std::string reduction_unsupported(const ir::Node& node);
// CumSum, TopK, InstanceNormalization (scan_norm.cpp).
std::string scan_norm_unsupported(const ir::Node& node);
Expected<std::unique_ptr<CudaKernel>> make_scan_norm_kernel(const ir::Node& node);
// Einsum (einsum.cpp): one naive tactic (f32, up to three operands).
std::string einsum_unsupported(const ir::Node& node);
Expected<std::unique_ptr<CudaKernel>> make_einsum_kernel(const ir::Node& node);
Expected<std::unique_ptr<CudaKernel>> make_reduction_kernel(const ir::Node& node,
                                                            KernelBuildContext& build);
std::string dense_unsupported(const ir::Node& node);
// Whether the direct_tc conv tactic takes this (supported) Conv / FusedConv at `precision`.
bool direct_conv_applies_to(const ir::Node& node, Precision precision);
// Whether width-fold tactic `tactic` is listed for this (supported) Conv / FusedConv at
// `precision`: it applies, and no earlier width-fold tactic plans the same fold.
bool width_fold_listed_for(const ir::Node& node, Precision precision, TacticId tactic);
Expected<std::unique_ptr<CudaKernel>> make_dense_kernel(const ir::Node& node, TacticId tactic,
                                                        KernelBuildContext& build);
// Grouped convolutions, group > 1 (grouped_conv.cpp): tactics and kernels of their own.
bool is_grouped_conv(const ir::Node& node);
std::string grouped_conv_unsupported(const ir::Node& node);
std::vector<TacticInfo> grouped_conv_tactics(const ir::Node& node, Precision precision);
// The Attention op (attention.cpp).
std::string attention_unsupported(const ir::Node& node);
std::vector<TacticInfo> attention_tactics(const ir::Node& node, Precision precision);
Expected<std::unique_ptr<CudaKernel>> make_attention_kernel(const ir::Node& node, TacticId tactic,
                                                            KernelBuildContext& build);
std::string recurrent_unsupported(const ir::Node& node);
// Whether the persistent_tc recurrent tactic is listed for this (supported) GRU / LSTM node.
bool persistent_tc_applies_to(const ir::Node& node, Precision precision);
Expected<std::unique_ptr<CudaKernel>> make_recurrent_kernel(const ir::Node& node, TacticId tactic,
                                                            KernelBuildContext& build);

// Dense tactics: 0 reference, 1..4 the k-th cuBLASLt heuristic candidate, 5..6 the first
// heuristic candidate that takes a split-K of 4 / 16 (for a few output tiles over a long K, as
// in a batch-1 convolution whose GEMM is 32 x 4100 x 7393: few tiles leave most SMs idle).
inline constexpr TacticId kGemmLtFirst = 1;
inline constexpr int kGemmLtCandidates = 4;
inline constexpr int kGemmLtSplitK[] = {4, 16};
// Conv only: cuDNN (backends/cuda/cudnn_conv.h), listed when the cuDNN library loads.
inline constexpr TacticId kConvCudnnHeuristic = 8;
inline constexpr TacticId kConvCudnnImplicitGemm = 9;
inline constexpr TacticId kConvCudnnImplicitPrecompGemm = 10;
inline constexpr TacticId kConvCudnnGemm = 11;
inline constexpr TacticId kConvCudnnFftTiling = 12;         // not for strict FP32
inline constexpr TacticId kConvCudnnWinogradNonfused = 13;  // not for strict FP32
// The same in NHWC (FP16/BF16 only): x transposed on its conversion, w stored KRSC.
inline constexpr TacticId kConvCudnnNhwcHeuristic = 14;
inline constexpr TacticId kConvCudnnNhwcImplicitGemm = 15;
inline constexpr TacticId kConvCudnnNhwcImplicitPrecompGemm = 16;
// 17-19: retired (cuDNN on the input with its kernel width unfolded into channels; 3-10x slower
// than the other tactics for every DS2 convolution on the H200, docs/perf/gpu.md).
// Our own implicit-GEMM convolution on WMMA tensor cores (conv_direct.h; 2-D, group 1,
// C * KH * KW <= 1024, OC a multiple of 16 up to 64; FP16/BF16 only). Needs no cuDNN.
inline constexpr TacticId kConvDirectTensorCore = 20;
// cuDNN's graph API (backends/cuda/cudnn_graph_conv.h): the k-th engine configuration its
// heuristic ranks, NHWC for FP16/BF16 and NCHW for FP32/TF32; listed when the API loads.
inline constexpr TacticId kConvCudnnGraphFirst = 21;
inline constexpr int kConvCudnnGraphCandidates = 4;
// The width-fold tactics (conv_width_fold.h): a narrow input's columns folded into channels, then
// cuDNN's NHWC convolution over the height (FP16/BF16, the input width known at build time).
// kConvWidthFoldFirst + i: tile width kWidthFoldTileWidths[i] with cuDNN's heuristic algorithm;
// kConvWidthFoldPrecomp: the first tile width with its precomputed implicit GEMM.
inline constexpr TacticId kConvWidthFoldFirst = 25;
inline constexpr int kConvWidthFoldCandidates = 3;
inline constexpr TacticId kConvWidthFoldPrecomp = 28;
// The same folds with the folded input unfolded along the height into a matrix A
// (width_fold_row_chunk_source) and one cuBLASLt GEMM with the folded filter: need no cuDNN.
// kConvWidthFoldGemmFirst + i: tile width kWidthFoldTileWidths[i], cuBLASLt's first heuristic
// candidate; kConvWidthFoldGemmSecond: the first tile width with its second candidate.
inline constexpr TacticId kConvWidthFoldGemmFirst = 29;
inline constexpr TacticId kConvWidthFoldGemmSecond = 32;
// Grouped convolutions (group > 1) take 0 (the naive grouped kernel), the cuDNN tactics 8-10 and
// 14-16 with cuDNN's group count, and this: our depthwise kernel for group == channels
// (grouped_conv.h), FP32 arithmetic at every precision.
inline constexpr TacticId kConvDepthwise = 33;
// MatMul / FusedMatMul / Gemm with a constant untransposed [K, N] weight (N even) at FP16/BF16:
// our one-launch kernel for at most 16 rows of activations (skinny_gemm.cpp).
inline constexpr TacticId kGemmSkinny = 34;
// MatMul / FusedMatMul / Gemm / Conv marked int8 by the builder (int8_gemm.cpp): cuBLASLt's IMMA
// GEMM, kGemmImmaInt8First + i its heuristic's i-th candidate; the only tactics such a layer lists.
inline constexpr TacticId kGemmImmaInt8First = 35;
inline constexpr int kInt8GemmCandidates = 2;
bool is_int8_gemm_tactic(TacticId tactic);
std::vector<TacticInfo> int8_dense_tactics();
Expected<std::unique_ptr<CudaKernel>> make_int8_dense_kernel(const ir::Node& node, TacticId tactic,
                                                             KernelBuildContext& build);
// Whether `node` runs as a CUDA INT8 layer: marked int8 with its calibrated input quantization
// (the builder's step, builder/calibration/int8_calibration.h) and taken by the INT8 kernels
// (int8_gemm_host.h). Other layers of an int8 engine run at fp16.
bool runs_int8(const ir::Node& node);
// Attention tactics (attention.cpp; 0 is the reference).
inline constexpr TacticId kAttentionSimtTiled = 1;
inline constexpr TacticId kAttentionSplitKeys = 2;
inline constexpr TacticId kAttentionMmaRows16 = 3;
inline constexpr TacticId kAttentionMmaRows32 = 4;
inline constexpr TacticId kAttentionMmaRows64 = 5;
inline constexpr TacticId kAttentionMmaPipelinedRows64 = 6;
inline constexpr TacticId kAttentionMmaPipelinedRows128 = 7;
// Recurrent tactics.
inline constexpr TacticId kRecurrentLt = 1;          // cuBLASLt recurrent GEMM + gate kernel
inline constexpr TacticId kRecurrentFused = 2;       // fused mat-vec + gates, one launch per step
inline constexpr TacticId kRecurrentPersistent = 3;  // the same, every step in one launch
// cuDNN's RNN (backends/cuda/cudnn_rnn.h), listed when the cuDNN library loads.
inline constexpr TacticId kRecurrentCudnnStandard = 4;       // CUDNN_RNN_ALGO_STANDARD
inline constexpr TacticId kRecurrentCudnnPersistStatic = 5;  // CUDNN_RNN_ALGO_PERSIST_STATIC
// The same with float data and weights and FMA math (the FP32 engine's layer), offered at the
// lower precisions too: at batch 1 on the H200 cuDNN's float persistent kernel was faster than
// its FP16 one plus the conversions.
inline constexpr TacticId kRecurrentCudnnPersistStaticF32 = 6;
// Every step in one cooperative launch with the recurrent product on WMMA tensor cores, each
// block owning 16 units of a 32- or 64-row batch tile (ops::recurrent_persistent_tc; FP16/BF16,
// hidden_size % 16 == 0). For large batches.
inline constexpr TacticId kRecurrentPersistentTensorCore = 7;
// persistent_matvec with its input projection (one [seq * batch, D * G * H] GEMM before the time
// loop) on another cuBLASLt candidate: kRecurrentPersistentInputFirst + i takes LtGemm candidate
// i + 1, so the split-K variants come last. In the FP32 BiLSTM at batch 1 the first candidate
// ran that GEMM in 116 us of a ~500 us layer (ncu, H100) on 64 blocks, half the SMs idle.
inline constexpr TacticId kRecurrentPersistentInputFirst = 8;
inline constexpr int kRecurrentPersistentInputVariants =
    kGemmLtCandidates - 1 + static_cast<int>(sizeof(kGemmLtSplitK) / sizeof(kGemmLtSplitK[0]));
// persistent_matvec with the FP32 input projection as three TF32 tensor-core GEMMs on split
// operands (SplitTf32Gemm: FP32-accurate), FP32 engines only.
inline constexpr TacticId kRecurrentPersistentInputSplitTf32 =
    kRecurrentPersistentInputFirst + kRecurrentPersistentInputVariants;

// Whole-graph ways, timed by DeviceBackend::tune_graph (timing-cache ids, not node tactics).
inline constexpr TacticId kGraphLayerByLayer = 1000;
inline constexpr TacticId kGraphRnnStack = 1001;

// Row-major GEMM through cuBLASLt: d[m, n] = opA(a)[m, k] * opB(b)[k, n] (+ bias[n]) (+ act),
// batched with element strides (0 = broadcast). a/b in `operand_type`, d and bias float.
struct LtGemmShape {
  std::int64_t m = 0, n = 0, k = 0, batch = 1;
  bool trans_a = false, trans_b = false;
  std::int64_t stride_a = 0, stride_b = 0, stride_d = 0;
  // Row strides (elements) of b (not transposed) and d; 0 = n (packed).
  std::int64_t ld_b = 0, ld_d = 0;
  ops::LowType operand_type = ops::LowType::kF32;
  bool tf32 = false;
  bool bias = false;
  enum class Epilogue { kNone, kRelu, kGelu } epilogue = Epilogue::kNone;
};
class LtGemm {
 public:
  // candidate: index into the heuristic's list (clamped to the last one returned); from
  // kGemmLtCandidates on, the split-K variants of kGemmLtSplitK (unsupported when no
  // algorithm takes that split for this shape).
  static Expected<std::unique_ptr<LtGemm>> create(const LtGemmShape& shape, int candidate,
                                                  cublasLtHandle_t lt);
  ~LtGemm();
  // beta = 1 adds the product to what d holds (before the epilogue's activation, so only the
  // last of several accumulating calls may have one).
  Status run(const void* a, const void* b, float* d, const float* bias,
             const CudaRunContext& context, float beta = 0.0f) const;

 private:
  LtGemm() = default;
  static std::optional<cublasLtMatmulAlgo_t> with_split_k(cublasLtHandle_t lt, const LtGemm& gemm,
                                                          cublasLtMatmulAlgo_t algo, int splits);
  LtGemmShape shape_;
  cublasLtMatmulDesc_t op_ = nullptr;
  cublasLtMatrixLayout_t x_ = nullptr, y_ = nullptr, d_ = nullptr;
  cublasLtMatmulAlgo_t algo_{};
};

ops::LowType low_type_for(Precision precision);
inline std::size_t align_up(std::size_t bytes, std::size_t alignment = 256) {
  return (bytes + alignment - 1) / alignment * alignment;
}
inline std::size_t low_type_bytes(ops::LowType type) {
  return type == ops::LowType::kF32 ? 4 : 2;
}

}  // namespace voxrt::backends::cuda
