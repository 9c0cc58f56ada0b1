// Dense ops on the device: MatMul / Gemm / FusedMatMul through cuBLASLt (bias and ReLU in the
// epilogue; other activations as one pointwise pass), and Conv / FusedConv as im2col + one
// cuBLASLt GEMM over all images, the bias riding in the weight matrix (a ones row in the im2col
// matrix), or through cuDNN (cudnn_conv.h). Tactic 0 is a naive float GEMM, the oracle;
// tactics 1..4 are cuBLASLt heuristic candidates, 5..6 split-K ones, 8..19 cuDNN algorithms (Conv
// only), 20 our own tensor-core implicit GEMM for small convs (conv_direct.h), 25..32 the input
// with its columns folded into channels (conv_width_fold.h), then cuDNN (25..28) or a height
// unfold and one cuBLASLt GEMM (29..32). FP16/BF16: weights converted at load, activations
// converted per call (im2col writes the low type directly), float accumulation and float outputs.
#include <algorithm>
#include <iterator>
#include <optional>
#include <span>
#include <vector>

#include "backends/cuda/conv_direct.h"
#include "backends/cuda/conv_width_fold.h"
#include "backends/cuda/conv_width_fold_call.h"
#include "backends/cuda/copy_plan.h"
#include "backends/cuda/cuda_common.h"
#include "backends/cuda/cudnn_conv.h"
#include "backends/cuda/dense_common.h"

namespace voxrt::backends::cuda {
namespace {

// Runs a dense call, then clamps its output in place.
class ClampedCall final : public CudaCall {
 public:
  ClampedCall(std::unique_ptr<CudaCall> inner, float lo, float hi)
      : inner_(std::move(inner)), lo_(lo), hi_(hi) {}
  std::size_t scratch_bytes() const override { return inner_->scratch_bytes(); }
  Status enqueue(std::span<const DevTensor> in, std::span<const DevTensor> out,
                 const CudaRunContext& context) const override {
    VOXRT_RETURN_IF_ERROR(inner_->enqueue(in, out, context));
    VOXRT_CUDA_TRY(ops::unary(ops::UnaryOp::kClip, lo_, hi_, out[0].as<const float>(),
                              out[0].as<float>(), out[0].count(), context.stream));
    return Status::ok();
  }

 private:
  std::unique_ptr<CudaCall> inner_;
  float lo_, hi_;
};

class ClampedKernel final : public CudaKernel {
 public:
  ClampedKernel(std::unique_ptr<CudaKernel> inner, float lo, float hi)
      : inner_(std::move(inner)), lo_(lo), hi_(hi) {}
  Expected<std::unique_ptr<CudaCall>> prepare(std::span<const DevTensor> inputs,
                                              std::span<const DevTensor> outputs,
                                              cublasLtHandle_t lt) const override {
    VOXRT_ASSIGN_OR_RETURN(std::unique_ptr<CudaCall> call, inner_->prepare(inputs, outputs, lt));
    return std::unique_ptr<CudaCall>(new ClampedCall(std::move(call), lo_, hi_));
  }

 private:
  std::unique_ptr<CudaKernel> inner_;
  float lo_, hi_;
};

Status apply_post_activation(const Activation& act, bool fused_relu, const DevTensor& out,
                             const CudaRunContext& context) {
  if (!act.present || (act.relu && fused_relu)) return Status::ok();
  VOXRT_CUDA_TRY(ops::unary(act.op, act.alpha, act.beta, out.as<const float>(), out.as<float>(),
                            out.count(), context.stream));
  return Status::ok();
}

// ---- MatMul / Gemm / FusedMatMul ------------------------------------------------------------

struct MatMulPlan {
  ops::NaiveGemm g;  // shape (also used by the cuBLASLt path)
  bool convert_a = false, convert_b = false;
  std::size_t a_bytes = 0, b_bytes = 0;
  // An operand whose batch dims broadcast against the output's partly (a relative-position
  // [1, H, D, P] against [B, H, T, D]) is first copied out to the output's whole batch, as
  // FP32, so that one strided-batched GEMM covers it.
  std::optional<ops::StridedCopy> expand[2];
  std::int64_t elements[2] = {0, 0};  // each operand's elements as the GEMM reads them
  std::size_t expand_bytes(int i) const {
    return expand[i] ? static_cast<std::size_t>(elements[i]) * sizeof(float) : 0;
  }
};

// The copy that writes operand `x` out to the output's batch dims `batch_dims` (its own last two
// dims kept), where x's batch dims broadcast against them (right-aligned, 1 or equal): Expand's
// copy (copy_plan.h, unit-tested on the CPU).
std::optional<ops::StridedCopy> batch_expansion(const Dims& x, const Dims& batch_dims) {
  const std::size_t rank = batch_dims.size() + 2;
  if (rank > static_cast<std::size_t>(ops::kMaxRank) || x.size() < 2 || x.size() > rank)
    return std::nullopt;
  Dims target = batch_dims;
  target.push_back(x[x.size() - 2]);
  target.push_back(x.back());
  for (std::size_t d = 0; d + 2 < x.size(); ++d) {
    const std::int64_t extent = target[rank - x.size() + d];
    if (x[d] != extent && x[d] != 1) return std::nullopt;
  }
  return expand_copy(x, target);
}

class MatMulCall final : public CudaCall {
 public:
  MatMulCall(MatMulPlan plan, std::unique_ptr<LtGemm> lt, const void* weight, ops::LowType operand,
             bool has_bias, Activation act)
      : plan_(plan),
        lt_(std::move(lt)),
        weight_(weight),
        operand_(operand),
        has_bias_(has_bias),
        act_(act) {}
  std::size_t scratch_bytes() const override {
    return align_up(plan_.expand_bytes(0)) + align_up(plan_.expand_bytes(1)) +
           align_up(plan_.a_bytes) + align_up(plan_.b_bytes);
  }
  Status enqueue(std::span<const DevTensor> in, std::span<const DevTensor> out,
                 const CudaRunContext& context) const override {
    const void* a = in[0].data;
    const void* b = weight_ ? weight_ : in[1].data;
    char* scratch = static_cast<char*>(context.scratch);
    // Scratch: [A expanded][B expanded][A converted][B converted], each present or empty.
    char* expanded[2] = {scratch, scratch + align_up(plan_.expand_bytes(0))};
    char* converted = expanded[1] + align_up(plan_.expand_bytes(1));
    for (int i = 0; i < 2; ++i) {
      if (!plan_.expand[i]) continue;
      VOXRT_CUDA_TRY(ops::strided_copy(in[static_cast<std::size_t>(i)].data, expanded[i],
                                       sizeof(float), ops::merged_axes(*plan_.expand[i]),
                                       context.stream));
      (i == 0 ? a : b) = expanded[i];
    }
    if (plan_.convert_a) {
      VOXRT_CUDA_TRY(ops::convert_from_f32(static_cast<const float*>(a), converted, operand_,
                                           plan_.elements[0], context.stream));
      a = converted;
    }
    if (plan_.convert_b) {
      void* target = converted + align_up(plan_.a_bytes);
      VOXRT_CUDA_TRY(ops::convert_from_f32(static_cast<const float*>(b), target, operand_,
                                           plan_.elements[1], context.stream));
      b = target;
    }
    const float* bias = has_bias_ ? in[2].as<const float>() : nullptr;
    if (lt_) {
      VOXRT_RETURN_IF_ERROR(lt_->run(a, b, out[0].as<float>(), bias, context));
    } else {
      VOXRT_CUDA_TRY(ops::naive_gemm(plan_.g, static_cast<const float*>(a),
                                     static_cast<const float*>(b), bias, out[0].as<float>(),
                                     context.stream));
    }
    return apply_post_activation(act_, lt_ != nullptr, out[0], context);
  }

 private:
  MatMulPlan plan_;
  std::unique_ptr<LtGemm> lt_;
  const void* weight_;
  ops::LowType operand_;
  bool has_bias_;
  Activation act_;
};

class MatMulKernel final : public CudaKernel {
 public:
  MatMulKernel(TacticId tactic, Precision precision, bool trans_a, bool trans_b, const void* weight,
               const void* weight_f32, bool has_bias, Activation act)
      : tactic_(tactic),
        precision_(precision),
        trans_a_(trans_a),
        trans_b_(trans_b),
        weight_(weight),
        weight_f32_(weight_f32),
        has_bias_(has_bias),
        act_(act) {}

  Expected<std::unique_ptr<CudaCall>> prepare(std::span<const DevTensor> in,
                                              std::span<const DevTensor> out,
                                              cublasLtHandle_t lt) const override {
    const Dims& a = in[0].dims;
    const Dims& b = in[1].dims;
    const Dims& d = out[0].dims;
    if (a.size() < 2 || b.size() < 2)
      return unsupported("MatMul with a rank-1 operand is not supported on the CUDA backend");
    MatMulPlan plan;
    ops::NaiveGemm& g = plan.g;
    plan.elements[0] = in[0].count();
    plan.elements[1] = in[1].count();
    g.trans_a = trans_a_;
    g.trans_b = trans_b_;
    g.n = d.back();
    g.k = trans_a_ ? a[a.size() - 2] : a.back();
    if (b.size() == 2 && !trans_a_) {
      // Weight-style: fold every leading dim of A into M.
      g.m = in[0].count() / g.k;
      g.batch = 1;
    } else {
      g.m = d[d.size() - 2];
      const std::int64_t batch_a = in[0].count() / (a[a.size() - 1] * a[a.size() - 2]);
      const std::int64_t batch_b = in[1].count() / (b[b.size() - 1] * b[b.size() - 2]);
      g.batch = 1;
      for (std::size_t i = 0; i + 2 < d.size(); ++i) g.batch *= d[i];
      const Dims batch_dims(d.begin(), d.end() - 2);
      const std::int64_t batches[2] = {batch_a, batch_b};
      for (int i = 0; i < 2; ++i) {
        if (batches[i] == g.batch || batches[i] == 1) continue;
        if (i == 1 && weight_)
          return unsupported("MatMul: a constant B whose batch dims broadcast partly (",
                             dims_to_string(b), " against ", dims_to_string(d), ")");
        plan.expand[i] = batch_expansion(in[static_cast<std::size_t>(i)].dims, batch_dims);
        if (!plan.expand[i])
          return unsupported("MatMul: operand ",
                             dims_to_string(in[static_cast<std::size_t>(i)].dims),
                             " does not broadcast to the output's batch ", dims_to_string(d));
        plan.elements[i] = in[static_cast<std::size_t>(i)].count() / batches[i] * g.batch;
      }
      g.stride_a = batch_a == 1 && !plan.expand[0] ? 0 : g.m * g.k;
      g.stride_b = batch_b == 1 && !plan.expand[1] ? 0 : g.k * g.n;
      g.stride_d = g.m * g.n;
    }
    if (has_bias_ && in[2].count() != g.n)
      return unsupported("bias of ", in[2].count(), " elements, expected ", g.n);
    std::unique_ptr<LtGemm> gemm;
    ops::LowType operand =
        tactic_ == kReferenceTactic ? ops::LowType::kF32 : low_type_for(precision_);
    const void* weight = weight_;
    if (tactic_ != kReferenceTactic) {
      LtGemmShape s;
      s.m = g.m;
      s.n = g.n;
      s.k = g.k;
      s.batch = g.batch;
      s.trans_a = g.trans_a;
      s.trans_b = g.trans_b;
      s.stride_a = g.stride_a;
      s.stride_b = g.stride_b;
      s.stride_d = g.stride_d;
      s.operand_type = operand;
      s.tf32 = precision_ == Precision::kTf32;
      s.bias = has_bias_;
      s.epilogue = act_.relu ? LtGemmShape::Epilogue::kRelu : LtGemmShape::Epilogue::kNone;
      auto made = LtGemm::create(s, static_cast<int>(tactic_ - kGemmLtFirst), lt);
      if (!made && operand != ops::LowType::kF32 && (weight_f32_ || !weight_)) {
        // No low-precision algorithm for this shape (e.g. an unaligned row of 29 halves): the
        // same GEMM in FP32, on the FP32 copy of the weight.
        operand = ops::LowType::kF32;
        weight = weight_f32_;
        s.operand_type = operand;
        made = LtGemm::create(s, static_cast<int>(tactic_ - kGemmLtFirst), lt);
      }
      if (!made) return made.status();
      gemm = std::move(*made);
      if (operand != ops::LowType::kF32) {
        plan.convert_a = true;
        plan.a_bytes = static_cast<std::size_t>(plan.elements[0]) * 2;
        if (!weight_) {
          plan.convert_b = true;
          plan.b_bytes = static_cast<std::size_t>(plan.elements[1]) * 2;
        }
      }
    }
    return std::unique_ptr<CudaCall>(
        new MatMulCall(plan, std::move(gemm), weight, operand, has_bias_, act_));
  }

 private:
  TacticId tactic_;
  Precision precision_;
  bool trans_a_, trans_b_;
  const void* weight_;      // constant B in the tactic's operand type, or null
  const void* weight_f32_;  // FP32 copy of a small constant B in low-precision modes, or null
  bool has_bias_;
  Activation act_;
};

// The skinny GEMM takes at most ops::kSkinnyMaxRows rows, and the autotuner times tactics at
// the profile's opt shape only: an engine tuned at batch 1 can still be run at any batch up to
// the profile's max (found on an H100, 2026-12-07: a batch-1-opt engine run at batch 4 failed
// with "the skinny GEMM does not take 64 rows"). Wider calls take cuBLASLt's first heuristic
// candidate on the same uploaded weight instead of failing.
class SkinnyOrWideKernel final : public CudaKernel {
 public:
  SkinnyOrWideKernel(std::unique_ptr<CudaKernel> skinny, std::unique_ptr<CudaKernel> wide,
                     std::int64_t k)
      : skinny_(std::move(skinny)), wide_(std::move(wide)), k_(k) {}

  Expected<std::unique_ptr<CudaCall>> prepare(std::span<const DevTensor> inputs,
                                              std::span<const DevTensor> outputs,
                                              cublasLtHandle_t lt) const override {
    const std::int64_t rows = k_ > 0 && !inputs.empty() ? inputs[0].count() / k_ : 0;
    return rows <= ops::kSkinnyMaxRows ? skinny_->prepare(inputs, outputs, lt)
                                       : wide_->prepare(inputs, outputs, lt);
  }

 private:
  std::unique_ptr<CudaKernel> skinny_;
  std::unique_ptr<CudaKernel> wide_;
  std::int64_t k_;
};

// ---- Conv / FusedConv -----------------------------------------------------------------------

bool is_cudnn_graph_tactic(TacticId tactic) {
  return tactic >= kConvCudnnGraphFirst &&
         tactic < kConvCudnnGraphFirst + kConvCudnnGraphCandidates;
}
bool is_cudnn_tactic(TacticId tactic) {
  return (tactic >= kConvCudnnHeuristic && tactic <= kConvCudnnNhwcImplicitPrecompGemm) ||
         is_cudnn_graph_tactic(tactic);
}
// The graph tactics run FP16/BF16 data in NHWC (what Hopper's tensor-core kernels want).
bool is_nhwc_tactic(TacticId tactic, Precision precision) {
  if (is_cudnn_graph_tactic(tactic))
    return precision == Precision::kFp16 || precision == Precision::kBf16;
  return tactic >= kConvCudnnNhwcHeuristic && tactic <= kConvCudnnNhwcImplicitPrecompGemm;
}
CudnnConvAlgo cudnn_algo(TacticId tactic) {
  switch (tactic) {
    case kConvCudnnImplicitGemm:
    case kConvCudnnNhwcImplicitGemm: return CudnnConvAlgo::kImplicitGemm;
    case kConvCudnnImplicitPrecompGemm:
    case kConvCudnnNhwcImplicitPrecompGemm: return CudnnConvAlgo::kImplicitPrecompGemm;
    case kConvCudnnGemm: return CudnnConvAlgo::kGemm;
    case kConvCudnnFftTiling: return CudnnConvAlgo::kFftTiling;
    case kConvCudnnWinogradNonfused: return CudnnConvAlgo::kWinogradNonfused;
    default:
      if (is_cudnn_graph_tactic(tactic)) return CudnnConvAlgo::kGraph;
      break;
  }
  return CudnnConvAlgo::kHeuristic;
}

static_assert(std::size(kWidthFoldTileWidths) == kConvWidthFoldCandidates &&
              kConvWidthFoldPrecomp == kConvWidthFoldFirst + kConvWidthFoldCandidates &&
              kConvWidthFoldGemmSecond == kConvWidthFoldGemmFirst + kConvWidthFoldCandidates);
bool is_width_fold_tactic(TacticId tactic) {
  return tactic >= kConvWidthFoldFirst && tactic <= kConvWidthFoldGemmSecond;
}
bool is_width_fold_gemm_tactic(TacticId tactic) {
  return tactic >= kConvWidthFoldGemmFirst && tactic <= kConvWidthFoldGemmSecond;
}
int width_fold_tile_of(TacticId tactic) {
  if (tactic == kConvWidthFoldPrecomp || tactic == kConvWidthFoldGemmSecond)
    return kWidthFoldTileWidths[0];
  return kWidthFoldTileWidths[tactic - (is_width_fold_gemm_tactic(tactic) ? kConvWidthFoldGemmFirst
                                                                          : kConvWidthFoldFirst)];
}

// The 2-D convolution of x [N, C, H, W] with w [OC, C, KH, KW] into y, for the width-fold plan.
WidthFoldConv width_fold_conv(const Dims& x, const Dims& w, const Dims& y, const ConvAttrs& attrs) {
  WidthFoldConv c;
  c.batch = x[0];
  c.channels = x[1];
  c.height = x[2];
  c.width = x[3];
  c.out_channels = w[0];
  c.kernel_h = w[2];
  c.kernel_w = w[3];
  c.out_h = y[2];
  c.out_w = y[3];
  c.stride_h = attrs.strides[0];
  c.stride_w = attrs.strides[1];
  c.pad_top = attrs.pads[0];
  c.pad_left = attrs.pads[1];
  c.pad_bottom = attrs.pads[2];
  c.pad_right = attrs.pads[3];
  c.dilation_h = attrs.dilations[0];
  c.dilation_w = attrs.dilations[1];
  return c;
}

class ConvCall final : public CudaCall {
 public:
  ConvCall(ops::Im2Col im, ops::NaiveGemm g, std::unique_ptr<LtGemm> lt, const void* weight,
           ops::LowType operand, Activation act)
      : im_(im), g_(g), lt_(std::move(lt)), weight_(weight), operand_(operand), act_(act) {}
  std::size_t col_bytes() const {
    return align_up(static_cast<std::size_t>(im_.k_rows * im_.row_stride) *
                    low_type_bytes(operand_));
  }
  bool staged() const { return im_.batch > 1 || im_.row_stride != g_.n; }
  std::size_t scratch_bytes() const override {
    // The GEMM writes [OC, row_stride] (images side by side) to scratch when that is not already
    // the output layout; one copy then makes [N, OC, P].
    const std::size_t staged_bytes =
        staged() ? static_cast<std::size_t>(g_.m * im_.row_stride) * sizeof(float) : 0;
    return col_bytes() + align_up(staged_bytes);
  }
  Status enqueue(std::span<const DevTensor> in, std::span<const DevTensor> out,
                 const CudaRunContext& context) const override {
    char* scratch = static_cast<char*>(context.scratch);
    VOXRT_CUDA_TRY(ops::im2col(im_, in[0].as<const float>(), scratch, operand_, context.stream));
    float* d = staged() ? reinterpret_cast<float*>(scratch + col_bytes()) : out[0].as<float>();
    if (lt_) {
      VOXRT_RETURN_IF_ERROR(lt_->run(weight_, scratch, d, nullptr, context));
    } else {
      VOXRT_CUDA_TRY(ops::naive_gemm(g_, static_cast<const float*>(weight_),
                                     reinterpret_cast<const float*>(scratch), nullptr, d,
                                     context.stream));
    }
    if (staged()) {
      const std::int64_t positions = im_.out_h * im_.out_w;
      ops::StridedCopy copy;  // [OC, row_stride] -> [N, OC, P]
      copy.rank = 3;
      copy.dims[0] = im_.batch;
      copy.dims[1] = g_.m;
      copy.dims[2] = positions;
      copy.in_strides[0] = positions;
      copy.in_strides[1] = im_.row_stride;
      copy.in_strides[2] = 1;
      copy.out_strides[0] = g_.m * positions;
      copy.out_strides[1] = positions;
      copy.out_strides[2] = 1;
      VOXRT_CUDA_TRY(ops::strided_copy(d, out[0].data, 4, copy, context.stream));
    }
    return apply_post_activation(act_, lt_ != nullptr, out[0], context);
  }

 private:
  ops::Im2Col im_;
  ops::NaiveGemm g_;
  std::unique_ptr<LtGemm> lt_;
  const void* weight_;
  ops::LowType operand_;
  Activation act_;
};

// The direct_tc tactic: one kernel, bias and activation in its epilogue, no scratch.
class DirectConvCall final : public CudaCall {
 public:
  DirectConvCall(ops::DirectConv shape, const void* filter, ops::LowType operand, const float* bias,
                 Activation act)
      : shape_(shape), filter_(filter), operand_(operand), bias_(bias), act_(act) {}
  Status enqueue(std::span<const DevTensor> in, std::span<const DevTensor> out,
                 const CudaRunContext& context) const override {
    VOXRT_CUDA_TRY(ops::direct_conv(shape_, in[0].as<const float>(), filter_, operand_, bias_,
                                    act_.op, act_.alpha, act_.beta, out[0].as<float>(),
                                    context.stream));
    return Status::ok();
  }

 private:
  ops::DirectConv shape_;
  const void* filter_;
  ops::LowType operand_;
  const float* bias_;
  Activation act_;
};

class ConvKernel final : public CudaKernel {
 public:
  // weight: the im2col tactics' packed [OC, k_rows] matrix (bias in it), or for cuDNN the plain
  // [OC, C, KH, KW] weights with `bias` ([OC] float, or null) apart.
  // fold: the width-fold tactics' plan at build time (its filter is `weight`).
  ConvKernel(TacticId tactic, Precision precision, ConvAttrs attrs, const void* weight,
             std::int64_t k_rows, bool has_bias, Activation act, const float* bias = nullptr,
             ops::WidthFold fold = {})
      : tactic_(tactic),
        precision_(precision),
        attrs_(std::move(attrs)),
        weight_(weight),
        k_rows_(k_rows),
        has_bias_(has_bias),
        act_(act),
        bias_(bias),
        fold_(fold) {}

  Expected<std::unique_ptr<CudaCall>> prepare(std::span<const DevTensor> in,
                                              std::span<const DevTensor> out,
                                              cublasLtHandle_t lt) const override {
    const Dims& x = in[0].dims;
    const Dims& w = in[1].dims;
    const Dims& y = out[0].dims;
    const bool two_d = x.size() == 4;
    if (is_cudnn_tactic(tactic_)) return prepare_cudnn(x, w, y, two_d);
    if (tactic_ == kConvDirectTensorCore) return prepare_direct(x, w, y);
    if (is_width_fold_tactic(tactic_)) return prepare_width_fold(x, w, y, lt);
    ops::Im2Col im;
    im.batch = x[0];
    im.channels = x[1];
    im.height = two_d ? x[2] : 1;
    im.width = x.back();
    im.kernel_h = two_d ? w[2] : 1;
    im.kernel_w = w.back();
    im.out_h = two_d ? y[2] : 1;
    im.out_w = y.back();
    im.stride_h = two_d ? attrs_.strides[0] : 1;
    im.stride_w = attrs_.strides.back();
    im.dilation_h = two_d ? attrs_.dilations[0] : 1;
    im.dilation_w = attrs_.dilations.back();
    im.pad_top = two_d ? attrs_.pads[0] : 0;
    im.pad_left = two_d ? attrs_.pads[1] : attrs_.pads[0];
    im.k_rows = k_rows_;
    im.ones_row = has_bias_;
    const std::int64_t positions = im.out_h * im.out_w;
    // One GEMM for every image: [OC, k_rows] x [k_rows, N * P]; for cuBLASLt the col rows are
    // padded to 8 elements (the naive reference GEMM takes them packed).
    im.row_stride =
        tactic_ == kReferenceTactic ? im.batch * positions : (im.batch * positions + 7) / 8 * 8;
    ops::NaiveGemm g;
    g.m = w[0];
    g.n = im.batch * positions;
    g.k = k_rows_;
    const ops::LowType operand =
        tactic_ == kReferenceTactic ? ops::LowType::kF32 : low_type_for(precision_);
    std::unique_ptr<LtGemm> gemm;
    if (tactic_ != kReferenceTactic) {
      LtGemmShape s;
      s.m = g.m;
      s.n = g.n;
      s.k = g.k;
      s.ld_b = im.row_stride;
      s.ld_d = im.row_stride;
      s.operand_type = operand;
      s.tf32 = precision_ == Precision::kTf32;
      s.epilogue = act_.relu ? LtGemmShape::Epilogue::kRelu : LtGemmShape::Epilogue::kNone;
      VOXRT_ASSIGN_OR_RETURN(gemm, LtGemm::create(s, static_cast<int>(tactic_ - kGemmLtFirst), lt));
    }
    return std::unique_ptr<CudaCall>(new ConvCall(im, g, std::move(gemm), weight_, operand, act_));
  }

 private:
  Expected<std::unique_ptr<CudaCall>> prepare_direct(const Dims& x, const Dims& w,
                                                     const Dims& y) const {
    if (x.size() != 4 || !direct_conv_fits(element_count(x), element_count(y)))
      return unsupported("the direct_tc convolution takes 2-D inputs and outputs of fewer than ",
                         kDirectConvMaxElements, " elements");
    ops::DirectConv s;
    s.batch = static_cast<int>(x[0]);
    s.channels = static_cast<int>(x[1]);
    s.height = static_cast<int>(x[2]);
    s.width = static_cast<int>(x[3]);
    s.out_channels = static_cast<int>(w[0]);
    s.kernel_h = static_cast<int>(w[2]);
    s.kernel_w = static_cast<int>(w[3]);
    s.out_h = static_cast<int>(y[2]);
    s.out_w = static_cast<int>(y[3]);
    s.stride_h = static_cast<int>(attrs_.strides[0]);
    s.stride_w = static_cast<int>(attrs_.strides[1]);
    s.pad_top = static_cast<int>(attrs_.pads[0]);
    s.pad_left = static_cast<int>(attrs_.pads[1]);
    s.dilation_h = static_cast<int>(attrs_.dilations[0]);
    s.dilation_w = static_cast<int>(attrs_.dilations[1]);
    // The cuDNN tactics' epilogue: bias, then the fused activation (kIdentity when none).
    return std::unique_ptr<CudaCall>(
        new DirectConvCall(s, weight_, low_type_for(precision_), bias_, act_));
  }

  Expected<std::unique_ptr<CudaCall>> prepare_width_fold(const Dims& x, const Dims& w,
                                                         const Dims& y, cublasLtHandle_t lt) const {
    if (x.size() != 4) return unsupported("the width-fold convolution takes 2-D inputs");
    const WidthFoldConv c = width_fold_conv(x, w, y, attrs_);
    const int tile_w = width_fold_tile_of(tactic_);
    const bool gemm = is_width_fold_gemm_tactic(tactic_);
    const ops::LowType operand = low_type_for(precision_);
    if (!width_fold_applies(c, tile_w, gemm ? static_cast<int>(low_type_bytes(operand)) : 0))
      return unsupported("the width-fold convolution does not take x ", dims_to_string(x),
                         " (limits in conv_width_fold.h)");
    const ops::WidthFold f = width_fold_plan(c, tile_w);
    // The filter was folded at build time for the input width of the graph.
    if (f.tile_w != fold_.tile_w || f.tiles != fold_.tiles || f.window != fold_.window ||
        f.window_start != fold_.window_start)
      return unsupported("the width-fold filter was built for input width ", fold_.width,
                         ", found x ", dims_to_string(x));
    if (gemm)
      return make_width_fold_gemm_call(f, operand, precision_ == Precision::kTf32,
                                       tactic_ == kConvWidthFoldGemmSecond ? 1 : 0, weight_,
                                       epilogue(), lt);
    return make_width_fold_cudnn_call(f, operand,
                                      tactic_ == kConvWidthFoldPrecomp
                                          ? CudnnConvAlgo::kImplicitPrecompGemm
                                          : CudnnConvAlgo::kHeuristic,
                                      weight_, epilogue());
  }

  // The cuDNN and width-fold tactics' epilogue: bias, then the fused activation (kIdentity
  // when none).
  ConvEpilogue epilogue() const {
    ConvEpilogue e;
    e.bias = bias_;
    if (act_.present) {
      e.op = act_.op;
      e.alpha = act_.alpha;
      e.beta = act_.beta;
    }
    return e;
  }

  Expected<std::unique_ptr<CudaCall>> prepare_cudnn(const Dims& x, const Dims& w, const Dims& y,
                                                    bool two_d) const {
    const std::size_t spatial = two_d ? 2 : 1;
    for (std::size_t d = 0; d < spatial; ++d) {
      if (attrs_.pads[d] != attrs_.pads[d + spatial])
        return unsupported("cuDNN convolution takes symmetric padding only");
    }
    CudnnConvShape s;
    s.batch = x[0];
    s.channels = x[1];
    s.height = two_d ? x[2] : 1;
    s.width = x.back();
    s.out_channels = w[0];
    s.kernel_h = two_d ? w[2] : 1;
    s.kernel_w = w.back();
    s.out_h = two_d ? y[2] : 1;
    s.out_w = y.back();
    s.stride_h = two_d ? attrs_.strides[0] : 1;
    s.stride_w = attrs_.strides.back();
    s.pad_h = two_d ? attrs_.pads[0] : 0;
    s.pad_w = attrs_.pads[spatial - 1];
    s.dilation_h = two_d ? attrs_.dilations[0] : 1;
    s.dilation_w = attrs_.dilations.back();
    s.data_type = low_type_for(precision_);
    s.tf32 = precision_ == Precision::kTf32;
    s.nhwc = is_nhwc_tactic(tactic_, precision_);
    return make_cudnn_conv_call(
        s, cudnn_algo(tactic_), weight_, epilogue(),
        is_cudnn_graph_tactic(tactic_) ? static_cast<int>(tactic_ - kConvCudnnGraphFirst) : 0);
  }

  TacticId tactic_;
  Precision precision_;
  ConvAttrs attrs_;
  const void* weight_;
  std::int64_t k_rows_;
  bool has_bias_;
  Activation act_;
  const float* bias_;
  ops::WidthFold fold_;
};

}  // namespace

std::string dense_unsupported(const ir::Node& node) {
  if (node.op == ir::OpKind::kEinsum) return einsum_unsupported(node);
  for (const ir::Value* v : node.inputs) {
    if (v && v->dtype != DType::kF32) return "f32 tensors only on the CUDA backend";
  }
  if (!read_activation(node)) return "unknown activation";
  if (is_conv(node)) {
    const ir::Value* w = node.input(1);
    if (!w || !w->is_constant()) return "Conv weights must be constants on the CUDA backend";
    const auto rank = w->constant->rank();
    if (rank != 3 && rank != 4) return "1-D and 2-D convolutions only on the CUDA backend";
    if (node.attrs.get_int("group", 1) != 1) return grouped_conv_unsupported(node);
    const std::string pad = node.attrs.get_string("auto_pad", "NOTSET");
    if (pad != "NOTSET" && pad != "VALID") return str_cat("auto_pad ", pad);
    if (node.input(2) && !node.input(2)->is_constant()) return "Conv bias must be a constant";
    return {};
  }
  if (node.op == ir::OpKind::kGemm) {
    if (node.attrs.get_float("alpha", 1.0f) != 1.0f ||
        (node.input(2) && node.attrs.get_float("beta", 1.0f) != 1.0f))
      return "Gemm with alpha or beta other than 1";
    if (node.input(2)) {
      const ir::Value* c = node.input(2);
      const bool row = c->rank_known &&
                       (c->shape.size() == 1 ||
                        (c->shape.size() == 2 && c->shape[0].is_known() && c->shape[0].value == 1));
      if (!row) return "Gemm C must be a bias row ([N] or [1, N])";
    }
  }
  if (node.op == ir::OpKind::kGemm || node.op == ir::OpKind::kMatMul ||
      node.op == ir::OpKind::kFusedMatMul) {
    for (int i = 0; i < 2; ++i) {
      const ir::Value* v = node.input(static_cast<std::size_t>(i));
      if (!v || (v->rank_known && v->shape.size() < 2))
        return "MatMul operands must have rank >= 2 on the CUDA backend";
    }
    return {};
  }
  return str_cat("no CUDA kernel for ", ir::op_name(node.op));
}

bool direct_conv_applies_to(const ir::Node& node, Precision precision) {
  if (!is_conv(node) || !node.input(1) || !node.input(1)->is_constant()) return false;
  const Tensor& w = *node.input(1)->constant;
  if (w.rank() != 4) return false;
  return direct_conv_applies(w.rank(), node.attrs.get_int("group", 1), w.dim(0), w.dim(1), w.dim(2),
                             w.dim(3),
                             precision == Precision::kFp16 || precision == Precision::kBf16);
}

namespace {

// The convolution as the graph knows it at build time, for the width-fold tactics: nullopt
// unless 2-D with a known input width (the folded filter depends on it). An unknown batch or
// height counts as 1 / the kernel's height here; prepare checks the real shapes.
std::optional<WidthFoldConv> build_time_width_fold_conv(const ir::Node& node) {
  if (!is_conv(node) || !node.input(1) || !node.input(1)->is_constant()) return std::nullopt;
  const Tensor& w = *node.input(1)->constant;
  const ir::Value* x = node.input(0);
  if (w.rank() != 4 || node.attrs.get_int("group", 1) != 1 || !x || !x->rank_known ||
      x->shape.size() != 4 || !x->shape[3].is_known())
    return std::nullopt;
  const ConvAttrs attrs = read_conv_attrs(node, 2);
  if (attrs.strides.size() != 2 || attrs.dilations.size() != 2 || attrs.pads.size() != 4)
    return std::nullopt;
  const std::int64_t reach_h = (w.dim(2) - 1) * attrs.dilations[0] + 1;
  const std::int64_t reach_w = (w.dim(3) - 1) * attrs.dilations[1] + 1;
  const std::int64_t height =
      x->shape[2].is_known() ? x->shape[2].value : std::max<std::int64_t>(reach_h, 1);
  Dims x_dims{x->shape[0].is_known() ? x->shape[0].value : 1, w.dim(1), height, x->shape[3].value};
  const std::int64_t out_h = (height + attrs.pads[0] + attrs.pads[2] - reach_h) /
                                 std::max<std::int64_t>(attrs.strides[0], 1) +
                             1;
  const std::int64_t out_w = (x_dims[3] + attrs.pads[1] + attrs.pads[3] - reach_w) /
                                 std::max<std::int64_t>(attrs.strides[1], 1) +
                             1;
  return width_fold_conv(x_dims, w.dims(), Dims{x_dims[0], w.dim(0), out_h, out_w}, attrs);
}

}  // namespace

bool width_fold_listed_for(const ir::Node& node, Precision precision, TacticId tactic) {
  if (!is_width_fold_tactic(tactic) || precision == Precision::kInt8) return false;
  // The GEMM tactics run at every precision (FP32 with FMA only, as every FP32 GEMM here); the
  // cuDNN ones use its NHWC tensor-core kernels, FP16/BF16 only.
  const bool gemm = is_width_fold_gemm_tactic(tactic);
  const bool half = precision == Precision::kFp16 || precision == Precision::kBf16;
  if (!gemm && !half) return false;
  const std::optional<WidthFoldConv> c = build_time_width_fold_conv(node);
  if (!c) return false;
  const int tile_w = width_fold_tile_of(tactic);
  const bool second_variant = tactic == kConvWidthFoldPrecomp || tactic == kConvWidthFoldGemmSecond;
  const int gemm_element_bytes = gemm ? (half ? 2 : 4) : 0;
  return width_fold_applies(*c, tile_w, gemm_element_bytes) &&
         (second_variant || width_fold_tile_is_new(*c, tile_w));
}

namespace {

Expected<std::unique_ptr<CudaKernel>> make_unclamped_dense_kernel(const ir::Node& node,
                                                                  TacticId tactic,
                                                                  KernelBuildContext& build) {
  const std::string why = dense_unsupported(node);
  if (!why.empty()) return unsupported(node.describe(), ": ", why);
  if (is_int8_gemm_tactic(tactic)) return make_int8_dense_kernel(node, tactic, build);
  if (node.op == ir::OpKind::kEinsum) return make_einsum_kernel(node);
  VOXRT_ASSIGN_OR_RETURN(Activation act, read_activation(node));
  const ops::LowType operand =
      tactic == kReferenceTactic ? ops::LowType::kF32 : build.operand_type();
  if (is_grouped_conv(node)) return make_grouped_conv_kernel(node, tactic, act, build);
  if (is_conv(node)) {
    const Tensor& w = *node.input(1)->constant;
    ConvAttrs attrs = read_conv_attrs(node, w.rank() - 2);
    const std::int64_t out_channels = w.dim(0);
    const std::int64_t patch = w.element_count() / out_channels;
    const bool has_bias = node.input(2) != nullptr;
    if (tactic == kConvDirectTensorCore) {
      if (!direct_conv_applies_to(node, build.precision()))
        return unsupported(node.describe(),
                           ": the direct_tc tactic takes FP16/BF16 2-D convolutions with "
                           "C * KH * KW <= ",
                           kDirectConvMaxK, " and a multiple of 16 output channels up to ",
                           kDirectConvMaxOutChannels);
      const std::vector<float> filter =
          direct_conv_filter(w.data<float>(), out_channels, w.dim(1), w.dim(2), w.dim(3));
      VOXRT_ASSIGN_OR_RETURN(void* weight,
                             build.upload_f32(filter, low_type_for(build.precision())));
      VOXRT_ASSIGN_OR_RETURN(const float* bias, upload_bias(node, out_channels, build));
      return std::unique_ptr<CudaKernel>(new ConvKernel(tactic, build.precision(), std::move(attrs),
                                                        weight, 0, has_bias, act, bias));
    }
    if (is_width_fold_tactic(tactic)) {
      if (!width_fold_listed_for(node, build.precision(), tactic))
        return unsupported(node.describe(),
                           ": the width-fold tactics take FP16/BF16 2-D convolutions whose input "
                           "width is known, within the limits of conv_width_fold.h");
      const ops::WidthFold fold =
          width_fold_plan(*build_time_width_fold_conv(node), width_fold_tile_of(tactic));
      const std::vector<float> filter = width_fold_filter(fold, w.data<float>());
      VOXRT_ASSIGN_OR_RETURN(void* weight,
                             build.upload_f32(filter, low_type_for(build.precision())));
      VOXRT_ASSIGN_OR_RETURN(const float* bias, upload_bias(node, out_channels, build));
      return std::unique_ptr<CudaKernel>(new ConvKernel(tactic, build.precision(), std::move(attrs),
                                                        weight, 0, has_bias, act, bias, fold));
    }
    if (is_cudnn_tactic(tactic)) {
      const std::vector<float> channels_last =
          is_nhwc_tactic(tactic, build.precision())
              ? filter_to_channels_last(w.span<float>(), out_channels, w.dim(1))
              : std::vector<float>();
      VOXRT_ASSIGN_OR_RETURN(
          void* weight,
          build.upload_f32(channels_last.empty() ? std::span<const float>(w.span<float>())
                                                 : std::span<const float>(channels_last),
                           low_type_for(build.precision())));
      VOXRT_ASSIGN_OR_RETURN(const float* bias, upload_bias(node, out_channels, build));
      return std::unique_ptr<CudaKernel>(new ConvKernel(tactic, build.precision(), std::move(attrs),
                                                        weight, 0, has_bias, act, bias));
    }
    const std::int64_t k_rows = (patch + (has_bias ? 1 : 0) + 7) / 8 * 8;
    std::vector<float> packed(static_cast<std::size_t>(out_channels * k_rows), 0.0f);
    const float* wd = w.data<float>();
    for (std::int64_t oc = 0; oc < out_channels; ++oc) {
      std::copy(wd + oc * patch, wd + (oc + 1) * patch, packed.begin() + oc * k_rows);
      if (has_bias) {
        packed[static_cast<std::size_t>(oc * k_rows + patch)] =
            static_cast<float>(node.input(2)->constant->element_as_double(oc));
      }
    }
    VOXRT_ASSIGN_OR_RETURN(void* weight, build.upload_f32(packed, operand));
    return std::unique_ptr<CudaKernel>(
        new ConvKernel(tactic, build.precision(), std::move(attrs), weight, k_rows, has_bias, act));
  }
  bool trans_a = false, trans_b = false;
  if (node.op == ir::OpKind::kGemm) {
    trans_a = node.attrs.get_int("transA", 0) != 0;
    trans_b = node.attrs.get_int("transB", 0) != 0;
  } else if (node.op == ir::OpKind::kFusedMatMul) {
    trans_a = node.attrs.get_int("trans_a", 0) != 0;
    trans_b = node.attrs.get_int("trans_b", 0) != 0;
  }
  const void* weight = nullptr;
  const void* weight_f32 = nullptr;
  const ir::Value* b = node.input(1);
  if (b->is_constant() && b->constant->rank() == 2) {
    VOXRT_ASSIGN_OR_RETURN(void* uploaded, build.upload_f32(b->constant->span<float>(), operand));
    weight = uploaded;
    if (operand != ops::LowType::kF32 && b->constant->size_bytes() <= (16u << 20)) {
      VOXRT_ASSIGN_OR_RETURN(void* f32,
                             build.upload_f32(b->constant->span<float>(), ops::LowType::kF32));
      weight_f32 = f32;
    }
  }
  if (tactic == kGemmSkinny) {
    VOXRT_ASSIGN_OR_RETURN(std::unique_ptr<CudaKernel> skinny,
                           make_skinny_gemm_kernel(node, weight, operand, act));
    std::unique_ptr<CudaKernel> wide(new MatMulKernel(kGemmLtFirst, build.precision(), false, false,
                                                      weight, weight_f32, node.input(2) != nullptr,
                                                      act));
    return std::unique_ptr<CudaKernel>(
        new SkinnyOrWideKernel(std::move(skinny), std::move(wide), b->constant->dim(0)));
  }
  return std::unique_ptr<CudaKernel>(new MatMulKernel(tactic, build.precision(), trans_a, trans_b,
                                                      weight, weight_f32, node.input(2) != nullptr,
                                                      act));
}

}  // namespace

Expected<std::unique_ptr<CudaKernel>> make_dense_kernel(const ir::Node& node, TacticId tactic,
                                                        KernelBuildContext& build) {
  VOXRT_ASSIGN_OR_RETURN(std::unique_ptr<CudaKernel> kernel,
                         make_unclamped_dense_kernel(node, tactic, build));
  VOXRT_ASSIGN_OR_RETURN(Activation act, read_activation(node));
  if (!act.has_clamp) return kernel;
  return std::unique_ptr<CudaKernel>(
      new ClampedKernel(std::move(kernel), act.clamp_min, act.clamp_max));
}

}  // namespace voxrt::backends::cuda
