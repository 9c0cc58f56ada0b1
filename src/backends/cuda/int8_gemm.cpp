// The CUDA INT8 dense layers (MatMul / FusedMatMul / Gemm / Conv marked int8 by the builder): the
// activation quantized per tensor into int8 rows (one pass; a convolution's input unfolded into
// one row per output position in the same pass), cuBLASLt's IMMA GEMM with int32
// accumulation and output, then one epilogue pass that removes the zero point, dequantizes per
// output column, adds the bias and applies the activation. Weights quantized per output column
// and packed at load (int8_gemm_host.h).
//
// Why int32 out and our own epilogue rather than cuBLASLt's: with CUBLAS_COMPUTE_32I cuBLASLt
// takes a per-row alpha vector (CUBLASLT_POINTER_MODE_ALPHA_DEVICE_VECTOR_BETA_ZERO) only with
// int8 output, i.e. it would requantize the result to 8 bits; float output from int8 operands is
// not among its IMMA type combinations. So the int32 sums go through memory once, and the
// zero-point correction, the bias and any activation ride in the same pass.
#include <iterator>
#include <optional>

#include "backends/cuda/cuda_common.h"
#include "backends/cuda/dense_common.h"
#include "backends/cuda/int8_gemm_host.h"
#include "backends/cuda/int8_gemm_ops.h"
#include "backends/cuda/int8_imma_gemm.h"

namespace voxrt::backends::cuda {
namespace {

// A convolution's unfolding, or none for a MatMul / Gemm.
using ConvUnfold = std::optional<ops::Int8Im2col>;

class Int8DenseCall final : public CudaCall {
 public:
  Int8DenseCall(const DeviceInt8Layer& layer, std::int64_t rows, std::unique_ptr<ImmaGemm> gemm,
                const Activation& act, ConvUnfold unfold)
      : layer_(layer), rows_(rows), gemm_(std::move(gemm)), act_(act), unfold_(unfold) {}
  std::size_t scratch_bytes() const override { return align_up(quantized_bytes()) + acc_bytes(); }
  Status enqueue(std::span<const DevTensor> in, std::span<const DevTensor> out,
                 const CudaRunContext& context) const override {
    auto* quantized = static_cast<std::int8_t*>(context.scratch);
    auto* acc = reinterpret_cast<std::int32_t*>(static_cast<char*>(context.scratch) +
                                                align_up(quantized_bytes()));
    if (unfold_) {
      VOXRT_CUDA_TRY(
          ops::quantize_int8_im2col(in[0].as<const float>(), *unfold_, quantized, context.stream));
    } else {
      VOXRT_CUDA_TRY(ops::quantize_int8_rows(in[0].as<const float>(), rows_, layer_.depth,
                                             layer_.padded_depth, layer_.inverse_input_scale,
                                             layer_.input_zero_point, quantized, context.stream));
    }
    VOXRT_RETURN_IF_ERROR(gemm_->run(layer_.weights, quantized, acc, context));
    ops::Int8Epilogue e;
    e.acc = acc;
    e.rows = rows_;
    e.columns = layer_.columns;
    e.ld_acc = layer_.padded_columns;
    e.scales = layer_.scales;
    e.zero_point_sums = layer_.zero_point_sums;
    e.bias = layer_.bias;
    if (unfold_) e.positions = unfold_->out_h * unfold_->out_w;
    if (act_.present) {
      e.op = act_.op;
      e.alpha = act_.alpha;
      e.beta = act_.beta;
    }
    VOXRT_CUDA_TRY(ops::int8_epilogue(e, out[0].as<float>(), context.stream));
    return Status::ok();
  }

 private:
  std::size_t quantized_bytes() const {
    return static_cast<std::size_t>(rows_ * layer_.padded_depth);
  }
  std::size_t acc_bytes() const {
    return static_cast<std::size_t>(rows_ * layer_.padded_columns) * sizeof(std::int32_t);
  }
  DeviceInt8Layer layer_;
  std::int64_t rows_;
  std::unique_ptr<ImmaGemm> gemm_;
  Activation act_;
  ConvUnfold unfold_;
};

class Int8DenseKernel final : public CudaKernel {
 public:
  Int8DenseKernel(const ir::Node& node, const DeviceInt8Layer& layer, std::int8_t pad_value,
                  int candidate, const Activation& act)
      : node_(node), layer_(layer), pad_value_(pad_value), candidate_(candidate), act_(act) {}
  Expected<std::unique_ptr<CudaCall>> prepare(std::span<const DevTensor> in,
                                              std::span<const DevTensor> out,
                                              cublasLtHandle_t lt) const override {
    if (is_conv(node_)) return prepare_conv(in, out, lt);
    const Dims& x = in[0].dims;
    if (x.empty() || x.back() != layer_.depth) {
      return invalid_argument("int8 GEMM: expected an input whose last dim is the weight's depth ",
                              layer_.depth, ", found ", dims_to_string(x));
    }
    const std::int64_t rows = in[0].count() / layer_.depth;
    if (out[0].count() != rows * layer_.columns) {
      return invalid_argument("int8 GEMM: expected an output of ", rows, " x ", layer_.columns,
                              " elements, found ", dims_to_string(out[0].dims));
    }
    VOXRT_ASSIGN_OR_RETURN(
        std::unique_ptr<ImmaGemm> gemm,
        ImmaGemm::create(layer_.padded_columns, layer_.padded_depth, rows, candidate_, lt));
    return std::unique_ptr<CudaCall>(
        new Int8DenseCall(layer_, rows, std::move(gemm), act_, std::nullopt));
  }

 private:
  Expected<std::unique_ptr<CudaCall>> prepare_conv(std::span<const DevTensor> in,
                                                   std::span<const DevTensor> out,
                                                   cublasLtHandle_t lt) const {
    VOXRT_ASSIGN_OR_RETURN(Int8ConvGeometry g, int8_conv_geometry(node_, in[0].dims, out[0].dims));
    ops::Int8Im2col u;
    u.batch = g.batch;
    u.channels = g.channels;
    u.height = g.height;
    u.width = g.width;
    u.kernel_h = g.kernel_h;
    u.kernel_w = g.kernel_w;
    u.out_h = g.out_h;
    u.out_w = g.out_w;
    u.stride_h = g.stride_h;
    u.stride_w = g.stride_w;
    u.pad_top = g.pad_top;
    u.pad_left = g.pad_left;
    u.dilation_h = g.dilation_h;
    u.dilation_w = g.dilation_w;
    u.depth = layer_.depth;
    u.padded_depth = layer_.padded_depth;
    u.inverse_scale = layer_.inverse_input_scale;
    u.zero_point = layer_.input_zero_point;
    u.pad_value = pad_value_;
    VOXRT_ASSIGN_OR_RETURN(
        std::unique_ptr<ImmaGemm> gemm,
        ImmaGemm::create(layer_.padded_columns, layer_.padded_depth, g.rows(), candidate_, lt));
    return std::unique_ptr<CudaCall>(new Int8DenseCall(layer_, g.rows(), std::move(gemm), act_, u));
  }

  ir::Node node_;  // a convolution's attributes and weight dims
  DeviceInt8Layer layer_;
  std::int8_t pad_value_;
  int candidate_;
  Activation act_;
};

}  // namespace

bool is_int8_gemm_tactic(TacticId tactic) {
  return tactic >= kGemmImmaInt8First && tactic < kGemmImmaInt8First + kInt8GemmCandidates;
}

std::vector<TacticInfo> int8_dense_tactics() {
  std::vector<TacticInfo> tactics;
  for (int i = 0; i < kInt8GemmCandidates; ++i)
    tactics.push_back(
        {kGemmImmaInt8First + static_cast<TacticId>(i), str_cat("imma_", i, "_int8")});
  return tactics;
}

Expected<std::unique_ptr<CudaKernel>> make_int8_dense_kernel(const ir::Node& node, TacticId tactic,
                                                             KernelBuildContext& build) {
  if (!is_int8_gemm_tactic(tactic))
    return unsupported(node.describe(), ": tactic ", tactic, " is not an int8 GEMM tactic");
  VOXRT_ASSIGN_OR_RETURN(Int8GemmLayer host, make_int8_gemm_layer(node));
  VOXRT_ASSIGN_OR_RETURN(Activation act, read_activation(node));
  DeviceInt8Layer layer;
  layer.columns = host.columns;
  layer.depth = host.depth;
  layer.padded_columns = host.padded_columns;
  layer.padded_depth = host.padded_depth;
  layer.inverse_input_scale = 1.0f / host.input.scale;  // as the CPU's quantize_activation
  layer.input_zero_point = static_cast<float>(host.input.zero_point);
  VOXRT_ASSIGN_OR_RETURN(void* weights,
                         build.upload_bytes(host.weights.data(), host.weights.size()));
  VOXRT_ASSIGN_OR_RETURN(
      void* scales, build.upload_bytes(host.scales.data(), host.scales.size() * sizeof(float)));
  VOXRT_ASSIGN_OR_RETURN(void* sums,
                         build.upload_bytes(host.zero_point_sums.data(),
                                            host.zero_point_sums.size() * sizeof(std::int32_t)));
  layer.weights = static_cast<const std::int8_t*>(weights);
  layer.scales = static_cast<const float*>(scales);
  layer.zero_point_sums = static_cast<const std::int32_t*>(sums);
  if (!host.bias.empty()) {
    VOXRT_ASSIGN_OR_RETURN(void* bias,
                           build.upload_bytes(host.bias.data(), host.bias.size() * sizeof(float)));
    layer.bias = static_cast<const float*>(bias);
  }
  // A convolution's padding taps are the value 0.0, quantized.
  const std::int8_t pad_value = quantize_activation_signed(0.0f, host.input);
  return std::unique_ptr<CudaKernel>(new Int8DenseKernel(
      node, layer, pad_value, static_cast<int>(tactic - kGemmImmaInt8First), act));
}

}  // namespace voxrt::backends::cuda
