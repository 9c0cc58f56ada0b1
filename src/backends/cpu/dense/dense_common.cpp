#include "backends/cpu/dense/dense_common.h"

#include <cblas.h>
#include <dlfcn.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <mutex>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/dense/activation_avx512.h"
#include "ir/shape_inference/dense.h"

namespace voxrt::backends::cpu::dense {

Expected<Activation> read_activation(const ir::Node& node) {
  Activation activation;
  if (node.op != ir::OpKind::kFusedConv && node.op != ir::OpKind::kFusedMatMul) return activation;
  const std::string name = node.attrs.get_string("activation", "none");
  if (name == "none") {
    activation.kind = ActivationKind::kNone;
  } else if (name == "relu") {
    activation.kind = ActivationKind::kRelu;
  } else if (name == "clip") {
    activation.kind = ActivationKind::kClip;
    activation.alpha = node.attrs.get_float("activation_alpha", -FLT_MAX);
    activation.beta = node.attrs.get_float("activation_beta", FLT_MAX);
  } else if (name == "leaky_relu") {
    activation.kind = ActivationKind::kLeakyRelu;
    activation.alpha = node.attrs.get_float("activation_alpha", 0.01f);
  } else if (name == "sigmoid") {
    activation.kind = ActivationKind::kSigmoid;
  } else if (name == "tanh") {
    activation.kind = ActivationKind::kTanh;
  } else if (name == "gelu_erf") {
    activation.kind = ActivationKind::kGeluErf;
  } else if (name == "silu") {
    activation.kind = ActivationKind::kSilu;
  } else {
    return invalid_argument(node.describe(),
                            ": activation must be none, relu, clip, leaky_relu, sigmoid, tanh, "
                            "gelu_erf or silu, found '",
                            name, "'");
  }
  if (node.attrs.has("activation_clamp_min") || node.attrs.has("activation_clamp_max")) {
    if (activation.kind == ActivationKind::kNone) {
      return invalid_argument(node.describe(), ": activation_clamp_min/max need an activation");
    }
    activation.has_clamp = true;
    activation.clamp_min = node.attrs.get_float("activation_clamp_min", -FLT_MAX);
    activation.clamp_max = node.attrs.get_float("activation_clamp_max", FLT_MAX);
  }
  return activation;
}

namespace {

float base_activation_value(const Activation& activation, float x) {
  switch (activation.kind) {
    case ActivationKind::kNone: return x;
    case ActivationKind::kRelu: return x > 0.0f ? x : 0.0f;
    case ActivationKind::kClip: return std::min(std::max(x, activation.alpha), activation.beta);
    case ActivationKind::kLeakyRelu: return x >= 0.0f ? x : x * activation.alpha;
    case ActivationKind::kSigmoid: return 1.0f / (1.0f + std::exp(-x));
    case ActivationKind::kTanh: return std::tanh(x);
    case ActivationKind::kGeluErf: return 0.5f * x * (1.0f + std::erf(x * 0.70710678118654752f));
    case ActivationKind::kSilu: return x / (1.0f + std::exp(-x));
  }
  return x;
}

}  // namespace

float activation_value(const Activation& activation, float x) {
  const float y = base_activation_value(activation, x);
  return activation.has_clamp ? std::min(std::max(y, activation.clamp_min), activation.clamp_max)
                              : y;
}

namespace {

// The transcendental activations 16 lanes at a time: applied after an OpenBLAS product (im2col
// Conv, MatMul), the scalar std::erf of GELU took 60 of the 71 ms of Whisper-base's first
// convolution (bench/dense/dense_tactics, whisper_conv1). Same approximations as the AVX-512
// dense kernels' epilogues (avx512_math.h: erf within 1e-6).
VOXRT_AVX512 void apply_activation_avx512(const Activation& activation, float* data,
                                          std::int64_t count) {
  std::int64_t i = 0;
  for (; i + 16 <= count; i += 16)
    _mm512_storeu_ps(data + i, activate(activation, _mm512_loadu_ps(data + i)));
  if (i < count) {
    const __mmask16 tail = static_cast<__mmask16>((1u << (count - i)) - 1u);
    _mm512_mask_storeu_ps(data + i, tail,
                          activate(activation, _mm512_maskz_loadu_ps(tail, data + i)));
  }
}

}  // namespace

void apply_activation(const Activation& activation, float* data, std::int64_t count) {
  const bool transcendental =
      activation.kind == ActivationKind::kSigmoid || activation.kind == ActivationKind::kTanh ||
      activation.kind == ActivationKind::kGeluErf || activation.kind == ActivationKind::kSilu;
  if (transcendental && cpu_has_avx512f()) {
    apply_activation_avx512(activation, data, count);  // the clamp too
    return;
  }
  switch (activation.kind) {
    case ActivationKind::kNone: break;
    case ActivationKind::kRelu:
      for (std::int64_t i = 0; i < count; ++i) data[i] = data[i] > 0.0f ? data[i] : 0.0f;
      break;
    case ActivationKind::kClip: {
      const float lo = activation.alpha, hi = activation.beta;
      for (std::int64_t i = 0; i < count; ++i) data[i] = std::min(std::max(data[i], lo), hi);
      break;
    }
    default:
      for (std::int64_t i = 0; i < count; ++i) data[i] = base_activation_value(activation, data[i]);
      break;
  }
  if (activation.has_clamp) {
    const float lo = activation.clamp_min, hi = activation.clamp_max;
    for (std::int64_t i = 0; i < count; ++i) data[i] = std::min(std::max(data[i], lo), hi);
  }
}

Expected<MatMulConfig> read_matmul_config(const ir::Node& node) {
  MatMulConfig config;
  VOXRT_ASSIGN_OR_RETURN(config.activation, read_activation(node));
  if (node.op == ir::OpKind::kGemm) {
    config.trans_a = node.attrs.get_int("transA", 0) != 0;
    config.trans_b = node.attrs.get_int("transB", 0) != 0;
    config.alpha = node.attrs.get_float("alpha", 1.0f);
    config.beta = node.attrs.get_float("beta", 1.0f);
  } else if (node.op == ir::OpKind::kFusedMatMul) {
    config.trans_a = node.attrs.get_int("trans_a", 0) != 0;
    config.trans_b = node.attrs.get_int("trans_b", 0) != 0;
  }
  config.has_c = node.op != ir::OpKind::kMatMul && node.input(2) != nullptr;
  return config;
}

Expected<MatMulProblem> plan_matmul(const ir::Node& node, const MatMulConfig& config,
                                    const Dims& a_dims, const Dims& b_dims) {
  if (a_dims.empty() || b_dims.empty()) {
    return invalid_argument(node.describe(), ": MatMul operands must have rank >= 1, found ",
                            dims_to_string(a_dims), " and ", dims_to_string(b_dims));
  }
  MatMulProblem problem;
  const std::size_t ra = a_dims.size(), rb = b_dims.size();
  std::int64_t k_b = 0;
  if (ra == 1) {
    problem.m = 1;
    problem.k = a_dims[0];
    problem.lda = problem.k;
  } else {
    problem.trans_a = config.trans_a;
    problem.lda = a_dims[ra - 1];
    problem.m = config.trans_a ? a_dims[ra - 1] : a_dims[ra - 2];
    problem.k = config.trans_a ? a_dims[ra - 2] : a_dims[ra - 1];
  }
  if (rb == 1) {
    problem.n = 1;
    k_b = b_dims[0];
    problem.ldb = 1;
  } else {
    problem.trans_b = config.trans_b;
    problem.ldb = b_dims[rb - 1];
    problem.n = config.trans_b ? b_dims[rb - 2] : b_dims[rb - 1];
    k_b = config.trans_b ? b_dims[rb - 1] : b_dims[rb - 2];
  }
  if (k_b != problem.k) {
    return invalid_argument(node.describe(), ": inner dims differ: A ", dims_to_string(a_dims),
                            " and B ", dims_to_string(b_dims));
  }
  const Dims batch_a(a_dims.begin(), a_dims.end() - std::min<std::size_t>(ra, 2));
  const Dims batch_b(b_dims.begin(), b_dims.end() - std::min<std::size_t>(rb, 2));
  const std::size_t batch_rank = std::max(batch_a.size(), batch_b.size());
  Dims batch(batch_rank), stride_a(batch_rank, 0), stride_b(batch_rank, 0);
  const std::int64_t a_matrix = problem.m * problem.k, b_matrix = problem.k * problem.n;
  std::int64_t running_a = a_matrix, running_b = b_matrix;
  for (std::size_t i = batch_rank; i-- > 0;) {
    const std::size_t ia = i + batch_a.size(), ib = i + batch_b.size();  // index + size - rank
    const std::int64_t da = ia >= batch_rank ? batch_a[ia - batch_rank] : 1;
    const std::int64_t db = ib >= batch_rank ? batch_b[ib - batch_rank] : 1;
    if (da != db && da != 1 && db != 1) {
      return invalid_argument(node.describe(), ": batch dims of A ", dims_to_string(a_dims),
                              " and B ", dims_to_string(b_dims), " do not broadcast");
    }
    batch[i] = std::max(da, db);
    if (da == 0 || db == 0) batch[i] = 0;
    stride_a[i] = da == 1 ? 0 : running_a;
    stride_b[i] = db == 1 ? 0 : running_b;
    running_a *= da;
    running_b *= db;
  }
  problem.batch_count = element_count(batch);
  problem.a_offsets.assign(static_cast<std::size_t>(problem.batch_count), 0);
  problem.b_offsets.assign(static_cast<std::size_t>(problem.batch_count), 0);
  for (std::int64_t flat = 0; flat < problem.batch_count; ++flat) {
    std::int64_t rest = flat, off_a = 0, off_b = 0;
    for (std::size_t i = batch_rank; i-- > 0;) {
      const std::int64_t index = rest % batch[i];
      rest /= batch[i];
      off_a += index * stride_a[i];
      off_b += index * stride_b[i];
    }
    problem.a_offsets[static_cast<std::size_t>(flat)] = off_a;
    problem.b_offsets[static_cast<std::size_t>(flat)] = off_b;
    if (off_b != 0) problem.b_shared = false;
  }
  bool a_contiguous = true;
  for (std::int64_t flat = 0; flat < problem.batch_count; ++flat) {
    if (problem.a_offsets[static_cast<std::size_t>(flat)] != flat * a_matrix) a_contiguous = false;
  }
  if (problem.batch_count > 1 && problem.b_shared && !problem.trans_a && a_contiguous) {
    problem.m *= problem.batch_count;
    problem.batch_count = 1;
    problem.a_offsets.assign(1, 0);
    problem.b_offsets.assign(1, 0);
  }
  return problem;
}

void broadcast_c_into(const Tensor& c, std::int64_t m, std::int64_t n, std::int64_t m_begin,
                      std::int64_t m_end, std::int64_t n_begin, std::int64_t n_end, float* y,
                      std::int64_t ldy) {
  const float* src = c.data<float>();
  std::int64_t c_rows = 1, c_cols = 1;
  if (c.rank() == 1) c_cols = c.dim(0);
  if (c.rank() == 2) {
    c_rows = c.dim(0);
    c_cols = c.dim(1);
  }
  for (std::int64_t i = m_begin; i < m_end; ++i) {
    const float* row = src + (c_rows == 1 ? 0 : i % m) * c_cols;
    float* out = y + i * ldy;
    if (c_cols == 1) {
      std::fill(out + n_begin, out + n_end, row[0]);
    } else {
      std::copy(row + n_begin, row + n_end, out + n_begin);
    }
  }
  (void)n;
}

void fill_empty_k_matmul(const MatMulConfig& config, const MatMulProblem& p, const Tensor* c,
                         float* y) {
  for (std::int64_t batch = 0; batch < p.batch_count; ++batch) {
    float* out = y + batch * p.m * p.n;
    if (c) {
      broadcast_c_into(*c, p.m, p.n, 0, p.m, 0, p.n, out, p.n);
      for (std::int64_t i = 0; i < p.m * p.n; ++i) out[i] *= config.beta;
    } else {
      std::fill(out, out + p.m * p.n, 0.0f);
    }
    apply_activation(config.activation, out, p.m * p.n);
  }
}

namespace {
struct ScratchSlots {
  std::vector<std::unique_ptr<std::byte[]>> buffers;
  std::vector<std::size_t> sizes;
};
thread_local ScratchSlots scratch_slots;
}  // namespace

void* thread_scratch_bytes(std::size_t bytes, int slot) {
  auto index = static_cast<std::size_t>(slot);
  if (scratch_slots.buffers.size() <= index) {
    scratch_slots.buffers.resize(index + 1);
    scratch_slots.sizes.resize(index + 1, 0);
  }
  if (scratch_slots.sizes[index] < bytes) {
    // Over-allocated by 64 bytes so the pointer handed out can be 64-byte aligned.
    const std::size_t padded = bytes + 64;
    scratch_slots.buffers[index] = std::make_unique<std::byte[]>(padded);
    scratch_slots.sizes[index] = bytes;
  }
  auto address = reinterpret_cast<std::uintptr_t>(scratch_slots.buffers[index].get());
  return reinterpret_cast<void*>((address + 63) & ~static_cast<std::uintptr_t>(63));
}

float* thread_scratch_floats(std::size_t count, int slot) {
  return static_cast<float*>(thread_scratch_bytes(count * sizeof(float), slot));
}

void ensure_openblas_single_threaded() {
  static std::once_flag once;
  std::call_once(once, [] { openblas_set_num_threads(1); });
}

void set_onednn_threads(int threads) {
  // libgomp is loaded with libdnnl; looked up at run time so the backend needs no OpenMP flags.
  using SetThreads = void (*)(int);
  static const SetThreads set_threads =
      reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "omp_set_num_threads"));
  if (set_threads) set_threads(std::max(threads, 1));
}

bool all_inputs_f32(const ir::Node& node) {
  for (const ir::Value* in : node.inputs) {
    if (in && in->dtype != DType::kF32) return false;
  }
  for (const ir::Value* out : node.outputs) {
    if (out && out->dtype != DType::kF32) return false;
  }
  return true;
}

bool is_conv1d_with_constant_weights(const ir::Node& node) {
  const ir::Value* x = node.input(0);
  const ir::Value* w = node.input(1);
  const ir::Value* b = node.input(2);
  if (!x || !w || !w->is_constant() || w->constant->rank() != 3) return false;
  if (b && (!b->is_constant() || b->constant->element_count() != w->constant->dim(0))) return false;
  return !x->rank_known || x->shape.size() == 3;
}

Geometry3 to_3d(const ir::ConvGeometry& g) {
  Geometry3 r{};
  const std::size_t missing = 3 - g.input.size();
  for (std::size_t axis = 0; axis < 3; ++axis) {
    const bool real = axis >= missing;
    const std::size_t src = axis - missing;
    r.in[axis] = real ? g.input[src] : 1;
    r.kernel[axis] = real ? g.kernel[src] : 1;
    r.out[axis] = real ? g.output[src] : 1;
    r.stride[axis] = real ? g.strides[src] : 1;
    r.dilation[axis] = real ? g.dilations[src] : 1;
    r.pad[axis] = real ? g.pads_begin[src] : 0;
  }
  return r;
}

std::optional<std::vector<float>> constant_column_bias(const ir::Node& node,
                                                       const MatMulConfig& config,
                                                       std::int64_t columns) {
  std::vector<float> bias;
  if (!config.has_c) return bias;
  const ir::Value* value = node.input(2);
  if (!value || !value->is_constant() || value->dtype != DType::kF32) return std::nullopt;
  const Tensor& t = *value->constant;
  const bool row =
      t.element_count() == columns && (t.rank() == 1 || (t.rank() == 2 && t.dim(0) == 1));
  if (!row && t.element_count() != 1) return std::nullopt;
  for (std::int64_t i = 0; i < columns; ++i)
    bias.push_back(config.beta * t.data<float>()[row ? i : 0]);
  return bias;
}

}  // namespace voxrt::backends::cpu::dense
