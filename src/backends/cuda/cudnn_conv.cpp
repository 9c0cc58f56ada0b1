#include "backends/cuda/cudnn_conv.h"

#include "backends/cuda/cudnn_api.h"
#include "backends/cuda/cudnn_graph_conv.h"

namespace voxrt::backends::cuda {

#if VOXRT_HAVE_CUDNN

namespace {

// More workspace than this and an algorithm is passed over (the scratch is per plan).
constexpr std::size_t kMaxWorkspaceBytes = 512u << 20;

cudnnConvolutionFwdAlgo_t fixed_algorithm(CudnnConvAlgo algo) {
  switch (algo) {
    case CudnnConvAlgo::kImplicitGemm: return CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
    case CudnnConvAlgo::kGemm: return CUDNN_CONVOLUTION_FWD_ALGO_GEMM;
    case CudnnConvAlgo::kFftTiling: return CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING;
    case CudnnConvAlgo::kWinogradNonfused: return CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED;
    case CudnnConvAlgo::kHeuristic:
    case CudnnConvAlgo::kGraph:
    case CudnnConvAlgo::kImplicitPrecompGemm: break;
  }
  return CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM;
}

class CudnnConvCall final : public CudaCall {
 public:
  CudnnConvCall(const CudnnApi& api, const CudnnConvShape& shape, const void* weight,
                ConvEpilogue epilogue)
      : api_(api), shape_(shape), weight_(weight), epilogue_(epilogue) {}
  ~CudnnConvCall() override {
    if (conv_) api_.destroy_convolution(conv_);
    if (w_) api_.destroy_filter(w_);
    if (y_) api_.destroy_tensor(y_);
    if (x_) api_.destroy_tensor(x_);
    if (handle_) api_.destroy(handle_);
  }

  Status init(CudnnConvAlgo algo, int graph_rank) {
    const CudnnConvShape& s = shape_;
    auto check = [&](cudnnStatus_t status, const char* what) {
      return cudnn_status(api_, status, what);
    };
    // One handle per prepared call: a session's calls run on its one stream, so nothing is
    // shared between threads.
    VOXRT_RETURN_IF_ERROR(check(api_.create(&handle_), "cudnnCreate"));
    if (algo == CudnnConvAlgo::kGraph) {
      if (s.groups != 1) return unsupported("the cuDNN graph tactics take ungrouped convolutions");
      VOXRT_ASSIGN_OR_RETURN(graph_,
                             make_cudnn_graph_conv(handle_, s, graph_rank, kMaxWorkspaceBytes));
      workspace_bytes_ = graph_->workspace_bytes();
      return Status::ok();
    }
    const cudnnDataType_t type = cudnn_data_type(s.data_type);
    if (s.nhwc && s.data_type == ops::LowType::kF32)
      return unsupported("cuDNN NHWC tactics are for FP16/BF16 data only");
    const cudnnTensorFormat_t format = s.nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
    auto i = [](std::int64_t v) { return static_cast<int>(v); };
    VOXRT_RETURN_IF_ERROR(check(api_.create_tensor(&x_), "cudnnCreateTensorDescriptor"));
    VOXRT_RETURN_IF_ERROR(check(
        api_.set_tensor_4d(x_, format, type, i(s.batch), i(s.channels), i(s.height), i(s.width)),
        "cudnnSetTensor4dDescriptor(x)"));
    VOXRT_RETURN_IF_ERROR(check(api_.create_tensor(&y_), "cudnnCreateTensorDescriptor"));
    VOXRT_RETURN_IF_ERROR(check(
        api_.set_tensor_4d(y_, format, type, i(s.batch), i(s.out_channels), i(s.out_h), i(s.out_w)),
        "cudnnSetTensor4dDescriptor(y)"));
    VOXRT_RETURN_IF_ERROR(check(api_.create_filter(&w_), "cudnnCreateFilterDescriptor"));
    VOXRT_RETURN_IF_ERROR(
        check(api_.set_filter_4d(w_, type, format, i(s.out_channels), i(s.channels / s.groups),
                                 i(s.kernel_h), i(s.kernel_w)),
              "cudnnSetFilter4dDescriptor"));
    VOXRT_RETURN_IF_ERROR(
        check(api_.create_convolution(&conv_), "cudnnCreateConvolutionDescriptor"));
    // Cross-correlation (what ONNX Conv computes), accumulating in float in every mode.
    VOXRT_RETURN_IF_ERROR(
        check(api_.set_convolution_2d(conv_, i(s.pad_h), i(s.pad_w), i(s.stride_h), i(s.stride_w),
                                      i(s.dilation_h), i(s.dilation_w), CUDNN_CROSS_CORRELATION,
                                      CUDNN_DATA_FLOAT),
              "cudnnSetConvolution2dDescriptor"));
    // FP32 stays FP32 (FMA only); TF32 and the 16-bit types may use tensor cores.
    const bool strict_f32 = s.data_type == ops::LowType::kF32 && !s.tf32;
    const cudnnMathType_t math = strict_f32                          ? CUDNN_FMA_MATH
                                 : s.data_type == ops::LowType::kF32 ? CUDNN_DEFAULT_MATH
                                                                     : CUDNN_TENSOR_OP_MATH;
    VOXRT_RETURN_IF_ERROR(check(api_.set_math_type(conv_, math), "cudnnSetConvolutionMathType"));
    if (s.groups != 1)
      VOXRT_RETURN_IF_ERROR(
          check(api_.set_group_count(conv_, i(s.groups)), "cudnnSetConvolutionGroupCount"));
    if (algo == CudnnConvAlgo::kHeuristic) {
      cudnnConvolutionFwdAlgoPerf_t perf[8];
      int returned = 0;
      VOXRT_RETURN_IF_ERROR(
          check(api_.get_forward_algorithm_v7(handle_, x_, w_, conv_, y_, 8, &returned, perf),
                "cudnnGetConvolutionForwardAlgorithm_v7"));
      bool found = false;
      for (int k = 0; k < returned && !found; ++k) {
        if (perf[k].status != CUDNN_STATUS_SUCCESS || perf[k].memory > kMaxWorkspaceBytes) continue;
        if (strict_f32 && perf[k].mathType != CUDNN_FMA_MATH) continue;
        algo_ = perf[k].algo;
        VOXRT_RETURN_IF_ERROR(
            check(api_.set_math_type(conv_, perf[k].mathType), "cudnnSetConvolutionMathType"));
        found = true;
      }
      if (!found) return unsupported("cuDNN's heuristic has no algorithm for this convolution");
    } else {
      const bool transform =
          algo == CudnnConvAlgo::kFftTiling || algo == CudnnConvAlgo::kWinogradNonfused;
      // FFT and Winograd change the arithmetic (transform-domain products), so their error is
      // not that of an FP32 convolution.
      if (transform && strict_f32)
        return unsupported("cuDNN FFT/Winograd algorithms are not offered for strict FP32");
      algo_ = fixed_algorithm(algo);
    }
    VOXRT_RETURN_IF_ERROR(
        check(api_.get_forward_workspace_size(handle_, x_, w_, conv_, y_, algo_, &workspace_bytes_),
              "cudnnGetConvolutionForwardWorkspaceSize"));
    if (workspace_bytes_ > kMaxWorkspaceBytes)
      return unsupported("cuDNN algorithm ", static_cast<int>(algo_), " wants ", workspace_bytes_,
                         " bytes of workspace");
    return Status::ok();
  }

  std::size_t low_bytes(std::int64_t elements) const {
    return shape_.data_type == ops::LowType::kF32
               ? 0
               : align_up(static_cast<std::size_t>(elements) * low_type_bytes(shape_.data_type));
  }
  std::int64_t in_elements() const {
    return shape_.batch * shape_.channels * shape_.height * shape_.width;
  }
  std::int64_t out_elements() const {
    return shape_.batch * shape_.out_channels * shape_.out_h * shape_.out_w;
  }
  std::size_t scratch_bytes() const override {
    if (shape_.raw_io) return align_up(workspace_bytes_);
    return low_bytes(in_elements()) + low_bytes(out_elements()) + align_up(workspace_bytes_);
  }

  Status enqueue(std::span<const DevTensor> in, std::span<const DevTensor> out,
                 const CudaRunContext& context) const override {
    VOXRT_RETURN_IF_ERROR(
        cudnn_status(api_, api_.set_stream(handle_, context.stream), "cudnnSetStream"));
    char* scratch = static_cast<char*>(context.scratch);
    const bool low = shape_.data_type != ops::LowType::kF32;
    if (shape_.raw_io) return forward(in[0].data, out[0].data, scratch);
    const void* x = in[0].data;
    if (shape_.nhwc) {
      VOXRT_CUDA_TRY(ops::convert_nchw_to_nhwc(in[0].as<const float>(), scratch, shape_.data_type,
                                               shape_.batch, shape_.channels,
                                               shape_.height * shape_.width, context.stream));
      x = scratch;
    } else if (low) {
      VOXRT_CUDA_TRY(ops::convert_from_f32(in[0].as<const float>(), scratch, shape_.data_type,
                                           in_elements(), context.stream));
      x = scratch;
    }
    void* y = low ? static_cast<void*>(scratch + low_bytes(in_elements())) : out[0].data;
    void* workspace = scratch + low_bytes(in_elements()) + low_bytes(out_elements());
    VOXRT_RETURN_IF_ERROR(forward(x, y, workspace));
    if (shape_.nhwc) {
      VOXRT_CUDA_TRY(ops::nhwc_bias_activation(y, shape_.data_type, epilogue_.bias, shape_.batch,
                                               shape_.out_channels, shape_.out_h * shape_.out_w,
                                               epilogue_.op, epilogue_.alpha, epilogue_.beta,
                                               out[0].as<float>(), context.stream));
    } else if (low || epilogue_.bias || epilogue_.op != ops::UnaryOp::kIdentity) {
      VOXRT_CUDA_TRY(ops::bias_activation(y, shape_.data_type, epilogue_.bias, shape_.out_channels,
                                          shape_.out_h * shape_.out_w, out_elements(), epilogue_.op,
                                          epilogue_.alpha, epilogue_.beta, out[0].as<float>(),
                                          context.stream));
    }
    return Status::ok();
  }

 private:
  // y = conv(x) in cuDNN's layout and type (the handle is on the call's stream already).
  Status forward(const void* x, void* y, void* workspace) const {
    if (graph_)
      return graph_->execute(handle_, x, weight_, y, workspace_bytes_ ? workspace : nullptr);
    const float one = 1.0f, zero = 0.0f;
    return cudnn_status(api_,
                        api_.convolution_forward(handle_, &one, x_, x, w_, weight_, conv_, algo_,
                                                 workspace_bytes_ ? workspace : nullptr,
                                                 workspace_bytes_, &zero, y_, y),
                        "cudnnConvolutionForward");
  }

  const CudnnApi& api_;
  CudnnConvShape shape_;
  const void* weight_;
  ConvEpilogue epilogue_;
  cudnnHandle_t handle_ = nullptr;
  cudnnTensorDescriptor_t x_ = nullptr, y_ = nullptr;
  cudnnFilterDescriptor_t w_ = nullptr;
  cudnnConvolutionDescriptor_t conv_ = nullptr;
  cudnnConvolutionFwdAlgo_t algo_ = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  std::unique_ptr<CudnnGraphConv> graph_;  // kGraph: the plan instead of the descriptors above
  std::size_t workspace_bytes_ = 0;
};

}  // namespace

Expected<std::unique_ptr<CudaCall>> make_cudnn_conv_call(const CudnnConvShape& shape,
                                                         CudnnConvAlgo algo, const void* weight,
                                                         ConvEpilogue epilogue, int graph_rank) {
  VOXRT_ASSIGN_OR_RETURN(const CudnnApi* api, cudnn_api());
  auto call = std::make_unique<CudnnConvCall>(*api, shape, weight, epilogue);
  VOXRT_RETURN_IF_ERROR(call->init(algo, graph_rank));
  return std::unique_ptr<CudaCall>(std::move(call));
}

#else

Expected<std::unique_ptr<CudaCall>> make_cudnn_conv_call(const CudnnConvShape&, CudnnConvAlgo,
                                                         const void*, ConvEpilogue, int) {
  VOXRT_ASSIGN_OR_RETURN(const CudnnApi* api, cudnn_api());
  (void)api;
  return unsupported("no cuDNN");
}

#endif

}  // namespace voxrt::backends::cuda
