// The Attention op on the device (semantics: ir/op_kind.h; kernels: attention_launch.h). Tactics:
//   0 reference     the naive kernel, the oracle (FP32)
//   1 simt_tiled    FP32 flash kernel on CUDA cores, 16 query rows a block
//   2 split_keys    decoder steps: the keys split over blocks, partial softmaxes combined (FP32)
//   3 mma_rows16    FP16/BF16 tensor cores, 1 warp a block, 32-key tiles (streaming chunks)
//   4 mma_rows32    the same with 2 warps and 64-key tiles
//   5 mma_rows64    4 warps and 64-key tiles (long sequences: the Whisper encoder)
//   6 mma_pipelined_rows64   K and V rounded to 16 bits once into scratch, tiles streamed with
//                            cp.async two stages deep, 4 warps
//   7 mma_pipelined_rows128  the same with 8 warps (128 query rows share each tile)
// 3-7 are listed at FP16/BF16 precision only (Q, K, V rounded to the precision's type, FP32
// accumulation and softmax statistics) and take Dk == Dv in {32, 64, 128}; a shape a kernel does
// not take fails to prepare, so the autotuner passes over it. No kernel materializes the score
// matrix; split_keys has scratch for its partial results (rows x splits x (Dv + 2) floats), the
// pipelined kernels for K and V rounded to 16 bits.
#include "backends/cuda/attention_host.h"
#include "backends/cuda/attention_ops.h"
#include "backends/cuda/cuda_common.h"
#include "backends/cuda/launch_call.h"
#include "ir/attention_params.h"

namespace voxrt::backends::cuda {
namespace {

AttentionKernel kernel_of(TacticId tactic) {
  switch (tactic) {
    case kAttentionSimtTiled: return AttentionKernel::kSimtTiled;
    case kAttentionSplitKeys: return AttentionKernel::kSplitKeys;
    case kAttentionMmaRows16: return AttentionKernel::kMmaRows16;
    case kAttentionMmaRows32: return AttentionKernel::kMmaRows32;
    case kAttentionMmaRows64: return AttentionKernel::kMmaRows64;
    case kAttentionMmaPipelinedRows64: return AttentionKernel::kMmaPipelinedRows64;
    case kAttentionMmaPipelinedRows128: return AttentionKernel::kMmaPipelinedRows128;
    default: return AttentionKernel::kReference;
  }
}
bool is_mma(AttentionKernel k) {
  return k == AttentionKernel::kMmaRows16 || k == AttentionKernel::kMmaRows32 ||
         k == AttentionKernel::kMmaRows64 || k == AttentionKernel::kMmaPipelinedRows64 ||
         k == AttentionKernel::kMmaPipelinedRows128;
}

void set_head_strides(std::int64_t (&stride)[3], ir::AttentionLayout layout, std::int64_t heads,
                      std::int64_t length, std::int64_t depth) {
  stride[0] = heads * length * depth;
  if (layout == ir::AttentionLayout::kHeadsMajor) {
    stride[1] = length * depth;
    stride[2] = depth;
  } else {
    stride[1] = depth;
    stride[2] = heads * depth;
  }
}

// Element strides of a mask or bias right-aligned to the [B, H, Sq, Sk] scores (0 where it
// broadcasts).
void set_score_strides(std::int64_t (&stride)[4], const Dims& dims) {
  std::int64_t running = 1;
  for (std::size_t i = dims.size(); i-- > 0;) {
    const std::size_t axis = 4 - dims.size() + i;
    stride[axis] = dims[i] == 1 ? 0 : running;
    running *= dims[i];
  }
}

int sm_count() {
  int device = 0, count = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device) != cudaSuccess) {
    cudaGetLastError();
    return 132;
  }
  return count;
}

}  // namespace

Expected<AttentionShape> attention_shape(const std::string& where,
                                         const ir::AttentionParams& params,
                                         std::span<const DevTensor> in, bool has_mask,
                                         bool has_bias) {
  if (in.size() < 3) return invalid_argument(where, ": Q, K and V are required");
  VOXRT_ASSIGN_OR_RETURN(
      const ir::AttentionDims d,
      ir::attention_dims(where, params.layout, in[0].dims, in[1].dims, in[2].dims));
  AttentionShape s;
  s.batch = d.batch;
  s.heads = d.heads;
  s.kv_heads = d.kv_heads;
  s.q_len = d.q_len;
  s.kv_len = d.kv_len;
  s.key_dim = d.key_dim;
  s.value_dim = d.value_dim;
  s.scale = ir::attention_scale(params, d);
  s.causal = params.causal;
  s.mask_fill = params.mask_fill;
  set_head_strides(s.q_stride, params.layout, d.heads, d.q_len, d.key_dim);
  set_head_strides(s.k_stride, params.layout, d.kv_heads, d.kv_len, d.key_dim);
  set_head_strides(s.v_stride, params.layout, d.kv_heads, d.kv_len, d.value_dim);
  set_head_strides(s.out_stride, params.layout, d.heads, d.q_len, d.value_dim);
  const auto scores = [&](std::size_t i, const char* what, std::int64_t(&stride)[4]) -> Status {
    if (in.size() <= i || !ir::broadcasts_to_scores(in[i].dims, d))
      return invalid_argument(where, ": the ", what, " ",
                              in.size() > i ? dims_to_string(in[i].dims) : std::string("(none)"),
                              " does not broadcast to the scores [", d.batch, ", ", d.heads, ", ",
                              d.q_len, ", ", d.kv_len, "]");
    set_score_strides(stride, in[i].dims);
    return Status::ok();
  };
  if (has_mask) {
    VOXRT_RETURN_IF_ERROR(scores(3, "mask", s.mask_stride));
    if (in[3].dtype != DType::kBool && in[3].dtype != DType::kF32)
      return unsupported(where, ": the mask must be bool or f32, found ", dtype_name(in[3].dtype));
    s.mask = in[3].dtype == DType::kBool ? AttentionMask::kBool : AttentionMask::kFloat;
  }
  if (has_bias) {
    VOXRT_RETURN_IF_ERROR(scores(4, "bias", s.bias_stride));
    s.has_bias = true;
  }
  return s;
}

std::string attention_unsupported(const ir::Node& node) {
  if (node.inputs.size() < 3 || node.inputs.size() > 5) return "Attention takes 3 to 5 inputs";
  for (std::size_t i = 0; i < 3; ++i) {
    if (!node.input(i)) return "Attention needs Q, K and V";
    if (node.input(i)->dtype != DType::kF32)
      return str_cat("the CUDA attention kernels take f32 Q, K and V, found ",
                     dtype_name(node.input(i)->dtype));
  }
  const ir::Value* mask = node.inputs.size() > 3 ? node.input(3) : nullptr;
  const ir::Value* bias = node.inputs.size() > 4 ? node.input(4) : nullptr;
  if (mask && mask->dtype != DType::kBool && mask->dtype != DType::kF32)
    return str_cat("the mask must be bool or f32, found ", dtype_name(mask->dtype));
  if (bias && bias->dtype != DType::kF32)
    return str_cat("the bias must be f32, found ", dtype_name(bias->dtype));
  if (!node.output(0)) return "Attention needs its output";
  auto params = ir::attention_params(node);
  if (!params) return params.status().message();
  return {};
}

std::vector<TacticInfo> attention_tactics(const ir::Node& node, Precision precision) {
  std::vector<TacticInfo> tactics{{kReferenceTactic, "reference"},
                                  {kAttentionSimtTiled, "simt_tiled"},
                                  {kAttentionSplitKeys, "split_keys"}};
  if (precision != Precision::kFp16 && precision != Precision::kBf16) return tactics;
  // The tensor-core kernels when the head dims (if known here) are ones they take.
  const ir::Value* q = node.input(0);
  const ir::Value* v = node.input(2);
  const auto last_dim = [](const ir::Value* x) -> std::int64_t {
    if (!x || !x->rank_known || x->shape.empty() || !x->shape.back().is_known()) return -1;
    return x->shape.back().value;
  };
  const std::int64_t dk = last_dim(q), dv = last_dim(v);
  if ((dk < 0 || mma_head_dim(dk)) && (dv < 0 || dv == dk)) {
    tactics.push_back({kAttentionMmaRows16, "mma_rows16"});
    tactics.push_back({kAttentionMmaRows32, "mma_rows32"});
    tactics.push_back({kAttentionMmaRows64, "mma_rows64"});
    tactics.push_back({kAttentionMmaPipelinedRows64, "mma_pipelined_rows64"});
    tactics.push_back({kAttentionMmaPipelinedRows128, "mma_pipelined_rows128"});
  }
  return tactics;
}

Expected<std::unique_ptr<CudaKernel>> make_attention_kernel(const ir::Node& node, TacticId tactic,
                                                            KernelBuildContext& build) {
  const std::string why = attention_unsupported(node);
  if (!why.empty()) return unsupported(node.describe(), ": ", why);
  VOXRT_ASSIGN_OR_RETURN(const ir::AttentionParams params, ir::attention_params(node));
  const AttentionKernel kernel = kernel_of(tactic);
  if (kernel == AttentionKernel::kReference && tactic != kReferenceTactic)
    return unsupported(node.describe(), ": no attention tactic ", tactic);
  const Precision precision = build.precision();
  if (is_mma(kernel) && precision != Precision::kFp16 && precision != Precision::kBf16)
    return unsupported(node.describe(), ": the tensor-core attention kernels run at FP16/BF16");
  const ops::LowType operand = low_type_for(precision);
  const std::string where = node.describe();
  const bool has_mask = node.inputs.size() > 3 && node.input(3);
  const bool has_bias = node.inputs.size() > 4 && node.input(4);
  return make_function_kernel([=](std::span<const DevTensor> inputs, std::span<const DevTensor>)
                                  -> Expected<std::unique_ptr<CudaCall>> {
    VOXRT_ASSIGN_OR_RETURN(const AttentionShape shape,
                           attention_shape(where, params, inputs, has_mask, has_bias));
    const AttentionPlan plan = attention_plan(kernel, shape, sm_count());
    if (!plan.takes)
      return unsupported(where, ": this attention kernel does not take the shape: ", plan.why_not);
    VOXRT_CUDA_TRY(ops::attention_configure(kernel, shape, plan));
    return launch_call(
        "Attention",
        [=](std::span<const DevTensor> in, std::span<const DevTensor> out,
            const CudaRunContext& context) {
          ops::AttentionOperands o;
          o.q = in[0].as<const float>();
          o.k = in[1].as<const float>();
          o.v = in[2].as<const float>();
          o.mask = has_mask ? in[3].data : nullptr;
          o.bias = has_bias ? in[4].as<const float>() : nullptr;
          o.out = out[0].as<float>();
          o.scratch = context.scratch;
          return ops::attention(kernel, shape, plan, operand, o, context.stream);
        },
        static_cast<std::size_t>(plan.scratch_bytes));
  });
}

}  // namespace voxrt::backends::cuda
