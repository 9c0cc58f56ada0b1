// The skinny GEMM tactic (skinny_gemm.cu) of MatMul / FusedMatMul / Gemm with a constant [K, N]
// weight at FP16/BF16: a few rows of FP32 activations against the weight in the precision's type,
// bias and activation in the same launch. Listed beside cuBLASLt; the autotuner times both (a
// cuBLASLt step there includes the activations' conversion and the activation pass, so the
// comparison is of whole steps). Rows above kSkinnyMaxRows fail to prepare here, so it is not
// chosen where the opt shape has more; a call above it at run time (a profile with a small opt and
// a larger max) goes to cuBLASLt (SkinnyOrWideKernel in dense.cpp).
#include "backends/cuda/cuda_common.h"
#include "backends/cuda/dense_common.h"
#include "backends/cuda/launch_call.h"

namespace voxrt::backends::cuda {
namespace {

int device_sm_count() {
  int device = 0, count = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device) != cudaSuccess) {
    cudaGetLastError();
    return 132;
  }
  return count;
}

// One prepared run: the split plan and, with several splits, the tiles' tickets (zeroed here,
// left zeroed by every run).
class SkinnyGemmCall final : public CudaCall {
 public:
  SkinnyGemmCall(ops::SkinnyGemm g, const void* weight, ops::LowType type, bool has_bias,
                 const Activation& act, std::shared_ptr<DeviceBuffer> tickets)
      : g_(g),
        weight_(weight),
        type_(type),
        has_bias_(has_bias),
        act_(act),
        tickets_(std::move(tickets)) {}
  std::size_t scratch_bytes() const override {
    return g_.splits > 1 ? align_up(static_cast<std::size_t>(g_.splits * g_.m * g_.n) * 4) : 0;
  }
  Status enqueue(std::span<const DevTensor> in, std::span<const DevTensor> out,
                 const CudaRunContext& context) const override {
    const ops::UnaryOp op = act_.present ? act_.op : ops::UnaryOp::kIdentity;
    VOXRT_CUDA_TRY(ops::skinny_gemm(
        g_, in[0].as<const float>(), weight_, type_, has_bias_ ? in[2].as<const float>() : nullptr,
        op, act_.alpha, act_.beta, out[0].as<float>(), static_cast<float*>(context.scratch),
        tickets_ ? static_cast<unsigned*>(tickets_->data()) : nullptr, context.stream));
    return Status::ok();
  }

 private:
  ops::SkinnyGemm g_;
  const void* weight_;
  ops::LowType type_;
  bool has_bias_;
  Activation act_;
  std::shared_ptr<DeviceBuffer> tickets_;
};

bool transposed(const ir::Node& node, const char* gemm_attr, const char* fused_attr) {
  if (node.op == ir::OpKind::kGemm) return node.attrs.get_int(gemm_attr, 0) != 0;
  if (node.op == ir::OpKind::kFusedMatMul) return node.attrs.get_int(fused_attr, 0) != 0;
  return false;
}

}  // namespace

bool skinny_gemm_listed(const ir::Node& node, Precision precision) {
  if (precision != Precision::kFp16 && precision != Precision::kBf16) return false;
  if (node.op != ir::OpKind::kMatMul && node.op != ir::OpKind::kFusedMatMul &&
      node.op != ir::OpKind::kGemm)
    return false;
  const ir::Value* b = node.input(1);
  if (!b || !b->is_constant() || b->constant->rank() != 2) return false;
  if (transposed(node, "transA", "trans_a") || transposed(node, "transB", "trans_b")) return false;
  return b->constant->dim(1) % 2 == 0;
}

Expected<std::unique_ptr<CudaKernel>> make_skinny_gemm_kernel(const ir::Node& node,
                                                              const void* weight, ops::LowType type,
                                                              const Activation& act) {
  if (!skinny_gemm_listed(node, type == ops::LowType::kBF16 ? Precision::kBf16 : Precision::kFp16))
    return unsupported(node.describe(),
                       ": the skinny GEMM takes an untransposed constant [K, N] weight, N even, "
                       "at FP16/BF16");
  const std::int64_t k = node.input(1)->constant->dim(0), n = node.input(1)->constant->dim(1);
  const bool has_bias = node.inputs.size() > 2 && node.input(2);
  return make_function_kernel([=](std::span<const DevTensor> inputs, std::span<const DevTensor>)
                                  -> Expected<std::unique_ptr<CudaCall>> {
    const std::int64_t rows = k > 0 ? inputs[0].count() / k : 0;
    if (inputs[0].dims.empty() || inputs[0].dims.back() != k)
      return invalid_argument("skinny GEMM: A's last dim is not ", k);
    if (rows > ops::kSkinnyMaxRows)
      return unsupported("the skinny GEMM does not take ", rows, " rows (at most ",
                         ops::kSkinnyMaxRows, ")");
    if (has_bias && inputs[2].count() != n)
      return unsupported("bias of ", inputs[2].count(), " elements, expected ", n);
    const ops::SkinnyGemm g = ops::skinny_gemm_plan(rows, n, k, device_sm_count());
    std::shared_ptr<DeviceBuffer> tickets;
    if (g.splits > 1) {
      const std::size_t bytes = static_cast<std::size_t>(ops::skinny_gemm_tiles(g)) * 4;
      VOXRT_ASSIGN_OR_RETURN(tickets, DeviceBuffer::allocate(bytes));
      VOXRT_CUDA_TRY(cudaMemset(tickets->data(), 0, bytes));
    }
    return std::unique_ptr<CudaCall>(new SkinnyGemmCall(g, weight, type, has_bias, act, tickets));
  });
}

}  // namespace voxrt::backends::cuda
