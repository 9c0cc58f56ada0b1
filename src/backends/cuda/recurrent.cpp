// GRU / LSTM on the device (ONNX semantics, layout 0, default activations): one input-projection
// GEMM over all time steps and both directions (biases folded in), then per step either a
// cuBLASLt recurrent GEMM (both directions batched) + a gate kernel (tactic 1), or one fused
// mat-vec + gate kernel (tactic 2, for small batches), or every step in one launch: tactic 3
// (the fused kernel's mat-vecs) and tactic 7 (WMMA tensor cores, for large batches). Tactic 0
// uses the naive GEMM. Tactics 4 to 6 are cuDNN's RNN (cudnn_rnn.h).
#include <algorithm>
#include <cstdlib>

#include "backends/cpu/recurrent/recurrent_spec.h"
#include "backends/cuda/cuda_common.h"
#include "backends/cuda/cudnn_rnn.h"
#include "backends/cuda/split_tf32_gemm.h"

namespace voxrt::backends::cuda {
namespace {

namespace rec = voxrt::backends::cpu::recurrent;

struct RecurrentWeights {
  const void* w = nullptr;        // [D*G*H, I] in operand type
  const void* r = nullptr;        // [D, G*H, H] in operand type
  const float* bias_x = nullptr;  // [D*G*H]
  const float* rbn = nullptr;     // [D, H] or null
  // The 3xTF32 input projection's halves of w (persistent_matvec_in_3xtf32 only).
  const float* w_hi = nullptr;
  const float* w_lo = nullptr;
  ops::LowType operand = ops::LowType::kF32;
};

struct Scratch {
  std::size_t xw = 0, hr = 0, h0 = 0, h1 = 0, c = 0, x_low = 0, h_low = 0, barrier = 0, split = 0,
              total = 0;
};

class RecurrentCall final : public CudaCall {
 public:
  RecurrentCall(const rec::RecurrentSpec& spec, TacticId tactic, RecurrentWeights weights,
                std::int64_t seq, std::int64_t batch, std::unique_ptr<LtGemm> input_gemm,
                std::unique_ptr<LtGemm> step_gemm, int tc_batch_tile,
                std::unique_ptr<SplitTf32Gemm> split_input_gemm)
      : spec_(spec),
        tactic_(tactic),
        weights_(weights),
        seq_(seq),
        batch_(batch),
        tc_batch_tile_(tc_batch_tile),
        input_gemm_(std::move(input_gemm)),
        step_gemm_(std::move(step_gemm)),
        split_input_gemm_(std::move(split_input_gemm)) {
    const std::int64_t D = spec.num_directions, G = spec.gates, H = spec.hidden_size;
    const auto f = [](std::int64_t n) { return align_up(static_cast<std::size_t>(n) * 4); };
    const bool low = weights.operand != ops::LowType::kF32;
    std::size_t at = 0;
    const auto take = [&](std::size_t bytes) {
      const std::size_t offset = at;
      at += bytes;
      return offset;
    };
    scratch_.xw = take(f(seq * batch * D * G * H));
    scratch_.hr = take(f(D * batch * G * H));
    scratch_.h0 = take(f(D * batch * H));
    scratch_.h1 = take(f(D * batch * H));
    scratch_.c = take(f(D * batch * H));
    scratch_.x_low = take(low ? f(seq * batch * spec.input_size) : 0);
    scratch_.h_low = take(low ? f(D * batch * H) : 0);
    scratch_.barrier = take(align_up(ops::grid_barrier_bytes(D, batch, H)));
    scratch_.split = take(split_input_gemm_ ? split_input_gemm_->scratch_bytes() : 0);
    scratch_.total = at;
  }
  std::size_t scratch_bytes() const override { return scratch_.total; }

  Status enqueue(std::span<const DevTensor> in, std::span<const DevTensor> out,
                 const CudaRunContext& context) const override {
    const std::int64_t D = spec_.num_directions, G = spec_.gates, H = spec_.hidden_size;
    const std::int64_t I = spec_.input_size;
    char* base = static_cast<char*>(context.scratch);
    auto* xw = reinterpret_cast<float*>(base + scratch_.xw);
    auto* hr = reinterpret_cast<float*>(base + scratch_.hr);
    float* h[2] = {reinterpret_cast<float*>(base + scratch_.h0),
                   reinterpret_cast<float*>(base + scratch_.h1)};
    auto* c = reinterpret_cast<float*>(base + scratch_.c);
    const bool low = weights_.operand != ops::LowType::kF32;
    void* x_low = base + scratch_.x_low;
    void* h_low = base + scratch_.h_low;
    const std::size_t state_bytes = static_cast<std::size_t>(D * batch_ * H) * 4;
    cudaStream_t stream = context.stream;

    // 1. Input projection for every step and direction: xw[T*B, D*G*H].
    const void* x = in[0].data;
    if (low && input_gemm_) {
      VOXRT_CUDA_TRY(ops::convert_from_f32(in[0].as<const float>(), x_low, weights_.operand,
                                           seq_ * batch_ * I, stream));
      x = x_low;
    }
    if (split_input_gemm_) {
      VOXRT_RETURN_IF_ERROR(split_input_gemm_->run(in[0].as<const float>(), weights_.w_hi,
                                                   weights_.w_lo, xw, weights_.bias_x,
                                                   base + scratch_.split, context));
    } else if (input_gemm_) {
      VOXRT_RETURN_IF_ERROR(input_gemm_->run(x, weights_.w, xw, weights_.bias_x, context));
    } else {
      ops::NaiveGemm g;
      g.m = seq_ * batch_;
      g.n = D * G * H;
      g.k = I;
      g.trans_b = true;
      VOXRT_CUDA_TRY(ops::naive_gemm(g, static_cast<const float*>(x),
                                     static_cast<const float*>(weights_.w), weights_.bias_x, xw,
                                     stream));
    }
    // 2. Initial states.
    const DevTensor* initial_h = in.size() > 5 && in[5].data ? &in[5] : nullptr;
    const DevTensor* initial_c = in.size() > 6 && in[6].data ? &in[6] : nullptr;
    ops::RecurrentStep step;
    step.gates = static_cast<int>(G);
    step.directions = static_cast<int>(D);
    step.reverse_only = spec_.reverse_only;
    step.linear_before_reset = spec_.linear_before_reset;
    step.seq = seq_;
    step.batch = batch_;
    step.hidden = H;
    step.xw = xw;
    step.hr = hr;
    step.c = c;
    step.y = out.size() > 0 ? out[0].as<float>() : nullptr;
    step.rbn = weights_.rbn;
    step.low_type = weights_.operand;
    if (tactic_ == kRecurrentPersistentTensorCore) {
      // Reads the initial states and writes Y, Y_h and Y_c itself; h travels in h_low.
      ops::RecurrentTcLaunch launch;
      launch.step = step;
      launch.r = weights_.r;
      launch.h_initial = initial_h ? initial_h->as<const float>() : nullptr;
      launch.c_initial = initial_c ? initial_c->as<const float>() : nullptr;
      launch.h_final = out.size() > 1 ? out[1].as<float>() : nullptr;
      launch.c_final = out.size() > 2 ? out[2].as<float>() : nullptr;
      launch.exchange = h_low;
      launch.barrier = reinterpret_cast<ops::GridBarrier*>(base + scratch_.barrier);
      VOXRT_CUDA_TRY(
          ops::recurrent_persistent_tc(launch, weights_.operand, tc_batch_tile_, stream));
      return Status::ok();
    }
    if (initial_h) {
      VOXRT_CUDA_TRY(
          cudaMemcpyAsync(h[0], initial_h->data, state_bytes, cudaMemcpyDeviceToDevice, stream));
    } else {
      VOXRT_CUDA_TRY(cudaMemsetAsync(h[0], 0, state_bytes, stream));
    }
    if (G == 4) {
      if (initial_c) {
        VOXRT_CUDA_TRY(
            cudaMemcpyAsync(c, initial_c->data, state_bytes, cudaMemcpyDeviceToDevice, stream));
      } else {
        VOXRT_CUDA_TRY(cudaMemsetAsync(c, 0, state_bytes, stream));
      }
    }
    const bool lt_low = low && tactic_ == kRecurrentLt;
    if (lt_low) {
      VOXRT_CUDA_TRY(ops::convert_from_f32(h[0], h_low, weights_.operand, D * batch_ * H, stream));
    }
    // 3. The time loop.
    step.h_next_low = lt_low ? h_low : nullptr;
    bool step_by_step = tactic_ != kRecurrentPersistent;
    if (tactic_ == kRecurrentPersistent) {
      auto* barrier = reinterpret_cast<ops::GridBarrier*>(base + scratch_.barrier);
      const cudaError_t e = ops::recurrent_persistent(step, weights_.r, weights_.operand, h[0],
                                                      h[1], barrier, stream);
      // The tactic was timed at the profile's opt batch; at a larger batch of the same profile
      // its grid may not fit on the device at once (it refuses before launching anything). The
      // same cells then run one launch per step (the fused tactic) instead of failing the run.
      if (e == cudaErrorCooperativeLaunchTooLarge) {
        (void)cudaGetLastError();
        step_by_step = true;
      } else {
        VOXRT_CUDA_TRY(e);
      }
    }
    for (std::int64_t s = 0; s < seq_ && step_by_step; ++s) {
      step.step = static_cast<int>(s);
      step.h_prev = h[s % 2];
      step.h_next = h[(s + 1) % 2];
      if (tactic_ == kRecurrentFused || tactic_ == kRecurrentPersistent) {
        VOXRT_CUDA_TRY(ops::recurrent_fused(step, weights_.r, weights_.operand, stream));
        continue;
      }
      if (step_gemm_) {
        VOXRT_RETURN_IF_ERROR(
            step_gemm_->run(lt_low ? h_low : step.h_prev, weights_.r, hr, nullptr, context));
      } else {
        ops::NaiveGemm g;
        g.m = batch_;
        g.n = G * H;
        g.k = H;
        g.batch = D;
        g.trans_b = true;
        g.stride_a = batch_ * H;
        g.stride_b = G * H * H;
        g.stride_d = batch_ * G * H;
        VOXRT_CUDA_TRY(ops::naive_gemm(g, step.h_prev, static_cast<const float*>(weights_.r),
                                       nullptr, hr, stream));
      }
      VOXRT_CUDA_TRY(ops::recurrent_gates(step, stream));
    }
    // 4. Final states.
    if (out.size() > 1 && out[1].data) {
      VOXRT_CUDA_TRY(
          cudaMemcpyAsync(out[1].data, h[seq_ % 2], state_bytes, cudaMemcpyDeviceToDevice, stream));
    }
    if (out.size() > 2 && out[2].data) {
      VOXRT_CUDA_TRY(
          cudaMemcpyAsync(out[2].data, c, state_bytes, cudaMemcpyDeviceToDevice, stream));
    }
    return Status::ok();
  }

 private:
  rec::RecurrentSpec spec_;
  TacticId tactic_;
  RecurrentWeights weights_;
  std::int64_t seq_, batch_;
  int tc_batch_tile_;  // persistent_tc only
  std::unique_ptr<LtGemm> input_gemm_, step_gemm_;
  std::unique_ptr<SplitTf32Gemm> split_input_gemm_;
  Scratch scratch_;
};

class RecurrentKernel final : public CudaKernel {
 public:
  RecurrentKernel(rec::RecurrentSpec spec, TacticId tactic, Precision precision,
                  RecurrentWeights weights)
      : spec_(std::move(spec)), tactic_(tactic), precision_(precision), weights_(weights) {
    // The persistent_matvec_in* tactics are persistent_matvec with another input GEMM.
    if (tactic >= kRecurrentPersistentInputFirst &&
        tactic < kRecurrentPersistentInputFirst + kRecurrentPersistentInputVariants) {
      tactic_ = kRecurrentPersistent;
      input_candidate_ = static_cast<int>(tactic - kRecurrentPersistentInputFirst) + 1;
    }
    if (tactic == kRecurrentPersistentInputSplitTf32) {
      tactic_ = kRecurrentPersistent;
      split_tf32_ = true;
    }
  }

  Expected<std::unique_ptr<CudaCall>> prepare(std::span<const DevTensor> in,
                                              std::span<const DevTensor>,
                                              cublasLtHandle_t lt) const override {
    const Dims& x = in[0].dims;
    if (x.size() != 3) return invalid_argument("recurrent X must be [seq, batch, input]");
    const std::int64_t seq = x[0], batch = x[1];
    const std::int64_t D = spec_.num_directions, G = spec_.gates, H = spec_.hidden_size;
    std::unique_ptr<LtGemm> input_gemm, step_gemm;
    std::unique_ptr<SplitTf32Gemm> split_input_gemm;
    if (split_tf32_ && seq * batch > 0) {
      LtGemmShape s;
      s.m = seq * batch;
      s.n = D * G * H;
      s.k = spec_.input_size;
      s.trans_b = true;
      s.bias = true;
      VOXRT_ASSIGN_OR_RETURN(split_input_gemm, SplitTf32Gemm::create(s, lt));
    } else if (tactic_ != kReferenceTactic && seq * batch > 0) {
      LtGemmShape s;
      s.m = seq * batch;
      s.n = D * G * H;
      s.k = spec_.input_size;
      s.trans_b = true;
      s.operand_type = weights_.operand;
      s.tf32 = precision_ == Precision::kTf32;
      s.bias = true;
      VOXRT_ASSIGN_OR_RETURN(input_gemm, LtGemm::create(s, input_candidate_, lt));
      if (tactic_ == kRecurrentLt) {
        LtGemmShape r;
        r.m = batch;
        r.n = G * H;
        r.k = H;
        r.batch = D;
        r.trans_b = true;
        r.stride_a = batch * H;
        r.stride_b = G * H * H;
        r.stride_d = batch * G * H;
        r.operand_type = weights_.operand;
        r.tf32 = precision_ == Precision::kTf32;
        VOXRT_ASSIGN_OR_RETURN(step_gemm, LtGemm::create(r, 0, lt));
      }
    }
    if ((tactic_ == kRecurrentFused || tactic_ == kRecurrentPersistent) &&
        (H % 4 != 0 || H * 4 * 4 > 48 * 1024))
      return unsupported("the fused recurrent tactics need hidden_size % 4 == 0 and <= 3072");
    int tc_batch_tile = 0;
    if (tactic_ == kRecurrentPersistentTensorCore) {
      VOXRT_CUDA_TRY(ops::recurrent_tc_plan(static_cast<int>(G), static_cast<int>(D), batch, H,
                                            weights_.operand, &tc_batch_tile));
      if (tc_batch_tile == 0) {
        return unsupported("persistent_tc: ", (H / ops::kRecurrentTcUnits) * D,
                           " blocks per batch tile of 32 or 64 rows at batch ", batch,
                           " do not fit on the device at once (hidden_size ", H, ")");
      }
    }
    return std::unique_ptr<CudaCall>(new RecurrentCall(spec_, tactic_, weights_, seq, batch,
                                                       std::move(input_gemm), std::move(step_gemm),
                                                       tc_batch_tile, std::move(split_input_gemm)));
  }

 private:
  rec::RecurrentSpec spec_;
  TacticId tactic_;          // the kind of kernel: persistent_matvec_in* are kRecurrentPersistent
  int input_candidate_ = 0;  // LtGemm candidate of the input projection
  bool split_tf32_ = false;  // the input projection as a SplitTf32Gemm
  Precision precision_;
  RecurrentWeights weights_;
};

}  // namespace

std::string recurrent_unsupported(const ir::Node& node) {
  if (node.op == ir::OpKind::kRNN) return "no CUDA kernel for RNN (GRU and LSTM only)";
  auto spec = rec::parse_recurrent_spec(node);
  if (!spec) return spec.status().message();
  if (!spec->has_default_activations()) return "non-default activations";
  if (spec->has_clip) return "the clip attribute";
  if (spec->layout != 0) return "layout 1 (batch-major)";
  if (spec->input_forget) return "input_forget";
  if (spec->cell == rec::CellKind::kGru && !spec->linear_before_reset)
    return "GRU with linear_before_reset = 0 (PyTorch exports 1)";
  if (node.input(4)) return "sequence_lens (all sequences must have the full length)";
  if (node.input(7)) return "LSTM peepholes (input P)";
  for (std::size_t i = 1; i <= 3; ++i) {
    if (node.input(i) && !node.input(i)->is_constant())
      return "W, R and B must be constants on the CUDA backend";
  }
  for (const ir::Value* v : node.inputs) {
    if (v && v->dtype != DType::kF32 && v != node.input(4)) return "f32 tensors only";
  }
  return {};
}

bool persistent_tc_applies_to(const ir::Node& node, Precision precision) {
  // Opt-in until the kernel has run on a device: it was written in a session without one
  // (docs/cuda_backend.md). VOXRT_CUDA_PERSISTENT_TC=1 lists it; the gpu tests set it.
  const char* enabled = std::getenv("VOXRT_CUDA_PERSISTENT_TC");
  if (!enabled || enabled[0] != '1') return false;
  if (precision != Precision::kFp16 && precision != Precision::kBf16) return false;
  if (!recurrent_unsupported(node).empty()) return false;
  auto spec = rec::parse_recurrent_spec(node);
  return spec && spec->hidden_size % ops::kRecurrentTcUnits == 0;
}

Expected<std::unique_ptr<CudaKernel>> make_recurrent_kernel(const ir::Node& node, TacticId tactic,
                                                            KernelBuildContext& build) {
  const std::string why = recurrent_unsupported(node);
  if (!why.empty()) return unsupported(node.describe(), ": ", why);
  VOXRT_ASSIGN_OR_RETURN(rec::RecurrentSpec spec, rec::parse_recurrent_spec(node));
  if (tactic == kRecurrentCudnnStandard || tactic == kRecurrentCudnnPersistStatic ||
      tactic == kRecurrentCudnnPersistStaticF32)
    return make_cudnn_rnn_kernel(node, spec, tactic, build);
  const std::int64_t D = spec.num_directions, G = spec.gates, H = spec.hidden_size;
  const Tensor& w = *node.input(1)->constant;
  const Tensor& r = *node.input(2)->constant;
  RecurrentWeights weights;
  weights.operand = tactic == kReferenceTactic ? ops::LowType::kF32 : build.operand_type();
  VOXRT_ASSIGN_OR_RETURN(void* rd, build.upload_f32(r.span<float>(), weights.operand));
  weights.r = rd;
  if (tactic == kRecurrentPersistentInputSplitTf32) {
    // Only the halves: the input projection never reads w itself.
    std::vector<float> hi, lo;
    split_tf32_host(w.span<float>(), hi, lo);
    VOXRT_ASSIGN_OR_RETURN(void* hi_d, build.upload_f32(hi, ops::LowType::kF32));
    VOXRT_ASSIGN_OR_RETURN(void* lo_d, build.upload_f32(lo, ops::LowType::kF32));
    weights.w_hi = static_cast<const float*>(hi_d);
    weights.w_lo = static_cast<const float*>(lo_d);
  } else {
    VOXRT_ASSIGN_OR_RETURN(void* wd, build.upload_f32(w.span<float>(), weights.operand));
    weights.w = wd;
  }
  std::vector<float> bias_x(static_cast<std::size_t>(D * G * H), 0.0f);
  std::vector<float> rbn(static_cast<std::size_t>(D * H), 0.0f);
  if (node.input(3)) {
    const float* b = node.input(3)->constant->data<float>();
    for (std::int64_t d = 0; d < D; ++d) {
      const float* wb = b + d * 2 * G * H;
      const float* rb = wb + G * H;
      for (std::int64_t g = 0; g < G; ++g) {
        for (std::int64_t j = 0; j < H; ++j) {
          const bool fold = !(G == 3 && g == 2);  // GRU's h-gate recurrent bias stays inside r*()
          bias_x[static_cast<std::size_t>(d * G * H + g * H + j)] =
              wb[g * H + j] + (fold ? rb[g * H + j] : 0.0f);
        }
      }
      if (G == 3) {
        for (std::int64_t j = 0; j < H; ++j)
          rbn[static_cast<std::size_t>(d * H + j)] = rb[2 * H + j];
      }
    }
  }
  VOXRT_ASSIGN_OR_RETURN(void* bx, build.upload_f32(bias_x, ops::LowType::kF32));
  weights.bias_x = static_cast<const float*>(bx);
  if (G == 3) {
    VOXRT_ASSIGN_OR_RETURN(void* bn, build.upload_f32(rbn, ops::LowType::kF32));
    weights.rbn = static_cast<const float*>(bn);
  }
  return std::unique_ptr<CudaKernel>(
      new RecurrentKernel(std::move(spec), tactic, build.precision(), weights));
}

}  // namespace voxrt::backends::cuda
