#include "backends/cuda/conv_width_fold_call.h"

#include <span>

namespace voxrt::backends::cuda {
namespace {

std::size_t bytes_of(std::int64_t elements, ops::LowType type) {
  return align_up(static_cast<std::size_t>(elements) * low_type_bytes(type));
}

// cuDNN: the folded input, cuDNN's NHWC convolution on it, then y from the folded output.
class WidthFoldCudnnCall final : public CudaCall {
 public:
  WidthFoldCudnnCall(ops::WidthFold fold, std::unique_ptr<CudaCall> conv, ops::LowType operand,
                     ConvEpilogue epilogue)
      : fold_(fold), conv_(std::move(conv)), operand_(operand), epilogue_(epilogue) {}
  std::size_t input_bytes() const { return bytes_of(fold_.folded_input_elements(), operand_); }
  std::size_t output_bytes() const { return bytes_of(fold_.folded_output_elements(), operand_); }
  std::size_t scratch_bytes() const override {
    return input_bytes() + output_bytes() + conv_->scratch_bytes();
  }
  Status enqueue(std::span<const DevTensor> in, std::span<const DevTensor> out,
                 const CudaRunContext& context) const override {
    char* scratch = static_cast<char*>(context.scratch);
    const DType type = operand_ == ops::LowType::kBF16 ? DType::kBF16 : DType::kF16;
    const DevTensor folded_x{scratch, type,
                             Dims{fold_.folded_batch(), fold_.height, 1, fold_.folded_channels()}};
    const DevTensor folded_y{
        scratch + input_bytes(), type,
        Dims{fold_.folded_batch(), fold_.out_h, 1, fold_.folded_out_channels()}};
    VOXRT_CUDA_TRY(ops::width_fold_input(fold_, in[0].as<const float>(), folded_x.data, operand_,
                                         context.stream));
    CudaRunContext conv_context = context;
    conv_context.scratch = scratch + input_bytes() + output_bytes();
    VOXRT_RETURN_IF_ERROR(conv_->enqueue(std::span<const DevTensor>(&folded_x, 1),
                                         std::span<const DevTensor>(&folded_y, 1), conv_context));
    VOXRT_CUDA_TRY(ops::width_fold_output(fold_, folded_y.data, operand_, epilogue_.bias,
                                          epilogue_.op, epilogue_.alpha, epilogue_.beta,
                                          out[0].as<float>(), context.stream));
    return Status::ok();
  }

 private:
  ops::WidthFold fold_;
  std::unique_ptr<CudaCall> conv_;
  ops::LowType operand_;
  ConvEpilogue epilogue_;
};

// cuBLASLt: the folded input, A (its height unfold), one GEMM with the folded filter into a
// float D [A's rows, OC * tile_w], then y from D.
class WidthFoldGemmCall final : public CudaCall {
 public:
  WidthFoldGemmCall(ops::WidthFold fold, std::unique_ptr<LtGemm> gemm, const void* filter,
                    ops::LowType operand, ConvEpilogue epilogue)
      : fold_(fold),
        gemm_(std::move(gemm)),
        filter_(filter),
        operand_(operand),
        epilogue_(epilogue) {}
  std::size_t input_bytes() const { return bytes_of(fold_.folded_input_elements(), operand_); }
  std::size_t a_bytes() const {
    return bytes_of(fold_.unfolded_rows() * fold_.unfolded_columns(), operand_);
  }
  std::size_t scratch_bytes() const override {
    return input_bytes() + a_bytes() + bytes_of(fold_.folded_output_elements(), ops::LowType::kF32);
  }
  Status enqueue(std::span<const DevTensor> in, std::span<const DevTensor> out,
                 const CudaRunContext& context) const override {
    char* scratch = static_cast<char*>(context.scratch);
    char* a = scratch + input_bytes();
    float* d = reinterpret_cast<float*>(a + a_bytes());
    VOXRT_CUDA_TRY(
        ops::width_fold_input(fold_, in[0].as<const float>(), scratch, operand_, context.stream));
    VOXRT_CUDA_TRY(ops::width_fold_rows(fold_, scratch, a, operand_, context.stream));
    VOXRT_RETURN_IF_ERROR(gemm_->run(a, filter_, d, nullptr, context));
    VOXRT_CUDA_TRY(ops::width_fold_output(fold_, d, ops::LowType::kF32, epilogue_.bias,
                                          epilogue_.op, epilogue_.alpha, epilogue_.beta,
                                          out[0].as<float>(), context.stream));
    return Status::ok();
  }

 private:
  ops::WidthFold fold_;
  std::unique_ptr<LtGemm> gemm_;
  const void* filter_;
  ops::LowType operand_;
  ConvEpilogue epilogue_;
};

}  // namespace

Expected<std::unique_ptr<CudaCall>> make_width_fold_cudnn_call(const ops::WidthFold& fold,
                                                               ops::LowType operand,
                                                               CudnnConvAlgo algo,
                                                               const void* filter,
                                                               ConvEpilogue epilogue) {
  if (operand != ops::LowType::kF16 && operand != ops::LowType::kBF16)
    return unsupported("the cuDNN width-fold tactics run FP16/BF16 only");
  // The folded convolution: [folded batch, H, 1, C * window] NHWC, a KH x 1 kernel along the
  // height with the original's stride, (symmetric) padding and dilation there.
  CudnnConvShape s;
  s.batch = fold.folded_batch();
  s.channels = fold.folded_channels();
  s.height = fold.height;
  s.width = 1;
  s.out_channels = fold.folded_out_channels();
  s.kernel_h = fold.kernel_h;
  s.kernel_w = 1;
  s.out_h = fold.out_h;
  s.out_w = 1;
  s.stride_h = fold.stride_h;
  s.pad_h = fold.pad_top;
  s.dilation_h = fold.dilation_h;
  s.data_type = operand;
  s.nhwc = true;
  s.raw_io = true;
  VOXRT_ASSIGN_OR_RETURN(std::unique_ptr<CudaCall> conv,
                         make_cudnn_conv_call(s, algo, filter, ConvEpilogue{}));
  return std::unique_ptr<CudaCall>(
      new WidthFoldCudnnCall(fold, std::move(conv), operand, epilogue));
}

Expected<std::unique_ptr<CudaCall>> make_width_fold_gemm_call(const ops::WidthFold& fold,
                                                              ops::LowType operand, bool tf32,
                                                              int candidate, const void* filter,
                                                              ConvEpilogue epilogue,
                                                              cublasLtHandle_t lt) {
  LtGemmShape s;
  s.m = fold.unfolded_rows();
  s.n = fold.folded_out_channels();
  s.k = fold.unfolded_columns();
  s.trans_b = true;  // the folded filter is [OC * tile_w, KH * folded channels]
  s.operand_type = operand;
  s.tf32 = tf32;
  VOXRT_ASSIGN_OR_RETURN(std::unique_ptr<LtGemm> gemm, LtGemm::create(s, candidate, lt));
  return std::unique_ptr<CudaCall>(
      new WidthFoldGemmCall(fold, std::move(gemm), filter, operand, epilogue));
}

}  // namespace voxrt::backends::cuda
