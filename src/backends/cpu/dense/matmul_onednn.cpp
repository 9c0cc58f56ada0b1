// Gemm / MatMul / FusedMatMul on the oneDNN matmul primitive. A constant B (the usual weight
// matrix) is reordered once into the primitive's preferred layout, with Gemm's alpha folded in;
// a constant C / bias of shape [N] becomes the primitive's bias (scaled by beta), any other C is
// broadcast into Y and added with a sum post-op; the activation is an eltwise post-op.
// Primitives are cached per operand shape behind a mutex.
// Threads: every primitive runs on one OpenMP thread. oneDNN's OpenMP workers are a second pool
// beside ours; on shared cores they oversubscribe them and each call waits for a descheduled
// worker (a 64x256x1024 matmul took 12 ms on 2 threads against 0.18 ms on 1). The openblas
// tactic splits across our pool instead, and timing at the engine's thread count picks.
#include <map>
#include <mutex>

#include "backends/cpu/dense/dense_kernels.h"
#include "backends/cpu/dense/onednn_common.h"
#include "core/thread_pool.h"

namespace voxrt::backends::cpu::dense {
namespace {

using dnnl::memory;

enum class BatchMode {
  kSingle,   // one 2-D GEMM (batches folded into M, or no batch)
  kBatched,  // one 3-D primitive; each operand's batch is either full or broadcast
  kLoop,     // a 2-D primitive run per batch (broadcast patterns a 3-D primitive can't express)
};

struct MatMulPrimitive {
  MatMulProblem problem;
  BatchMode mode = BatchMode::kSingle;
  dnnl::matmul primitive;
  memory::desc src_md, weights_md, dst_md;
  std::optional<memory> packed_weights;
  bool use_bias = false;
  bool use_sum = false;
  std::size_t scratchpad_bytes = 0;
};

memory::desc matrix_md(std::int64_t batch, std::int64_t rows, std::int64_t cols, bool transposed,
                       std::int64_t ld, bool three_d) {
  // A [rows, cols] view of storage that is [rows, ld] (or [cols, ld] when transposed).
  const memory::dim row_stride = transposed ? 1 : ld;
  const memory::dim col_stride = transposed ? ld : 1;
  if (!three_d)
    return memory::desc({rows, cols}, memory::data_type::f32, memory::dims{row_stride, col_stride});
  return memory::desc({batch, rows, cols}, memory::data_type::f32,
                      memory::dims{rows * cols, row_stride, col_stride});
}

class MatMulOneDnnKernel final : public Kernel {
 public:
  MatMulOneDnnKernel(ir::Node node, MatMulConfig config, std::optional<Tensor> constant_b,
                     std::optional<Tensor> bias_times_beta)
      : node_(std::move(node)),
        config_(config),
        constant_b_(std::move(constant_b)),
        bias_times_beta_(std::move(bias_times_beta)) {}

  Status warm_up(const Dims& a_dims, const Dims& b_dims, const Dims& c_dims) const {
    try {
      return primitive_for(a_dims, b_dims, c_dims, 1).status();
    } catch (const dnnl::error& e) {
      return internal_error(node_.describe(), ": oneDNN matmul failed: ", e.what());
    }
  }

  Status run(std::span<const Tensor* const> inputs, std::span<Tensor* const> outputs,
             KernelContext& context) const override {
    const Tensor& a = *inputs[0];
    const Tensor& b = *inputs[1];
    const Tensor* c = config_.has_c && inputs.size() > 2 ? inputs[2] : nullptr;
    float* yd = outputs[0]->data<float>();
    try {
      VOXRT_ASSIGN_OR_RETURN(std::shared_ptr<const MatMulPrimitive> mm,
                             primitive_for(a.dims(), b.dims(), c ? c->dims() : Dims{}, 1));
      const MatMulProblem& p = mm->problem;
      if (p.batch_count == 0 || p.m == 0 || p.n == 0) return Status::ok();
      if (p.k == 0) {
        fill_empty_k_matmul(config_, p, c, yd);
        return Status::ok();
      }
      if (mm->use_sum) {
        for (std::int64_t batch = 0; batch < p.batch_count; ++batch) {
          broadcast_c_into(*c, p.m, p.n, 0, p.m, 0, p.n, yd + batch * p.m * p.n, p.n);
        }
      }
      const int threads = 1;
      const float* ad = a.data<float>();
      const float* bd = b.data<float>();
      ArgumentMap& args = thread_arguments(mm->primitive);
      if (mm->use_bias && !rebind_argument(args, DNNL_ARG_BIAS, bias_times_beta_->data<float>())) {
        const memory::desc bias_md =
            mm->mode == BatchMode::kBatched
                ? memory::desc({1, 1, p.n}, memory::data_type::f32, memory::format_tag::abc)
                : memory::desc({1, p.n}, memory::data_type::f32, memory::format_tag::ab);
        bind_argument(args, DNNL_ARG_BIAS, bias_md, bias_times_beta_->data<float>());
      }
      const std::int64_t steps = mm->mode == BatchMode::kLoop ? p.batch_count : 1;
      for (std::int64_t batch = 0; batch < steps; ++batch) {
        const auto index = static_cast<std::size_t>(batch);
        bind_argument(args, DNNL_ARG_SRC, mm->src_md, ad + p.a_offsets[index]);
        if (mm->packed_weights) {
          args[DNNL_ARG_WEIGHTS] = *mm->packed_weights;
        } else {
          bind_argument(args, DNNL_ARG_WEIGHTS, mm->weights_md, bd + p.b_offsets[index]);
        }
        bind_argument(args, DNNL_ARG_DST, mm->dst_md, yd + batch * p.m * p.n);
        execute_primitive(mm->primitive, args, mm->scratchpad_bytes, threads);
      }
    } catch (const dnnl::error& e) {
      return internal_error(node_.describe(), ": oneDNN matmul failed for A ",
                            dims_to_string(a.dims()), " B ", dims_to_string(b.dims()), ": ",
                            e.what());
    }
    return Status::ok();
  }

 private:
  Expected<std::shared_ptr<const MatMulPrimitive>> primitive_for(const Dims& a_dims,
                                                                 const Dims& b_dims,
                                                                 const Dims& c_dims,
                                                                 int threads) const {
    // oneDNN fixes a primitive's thread count when it is created, so the key holds it too.
    std::vector<std::int64_t> key{threads};
    key.insert(key.end(), a_dims.begin(), a_dims.end());
    key.push_back(-1);
    key.insert(key.end(), b_dims.begin(), b_dims.end());
    key.push_back(-1);
    key.insert(key.end(), c_dims.begin(), c_dims.end());
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = cache_.find(key);
    if (it != cache_.end()) return it->second;
    set_onednn_threads(threads);
    VOXRT_ASSIGN_OR_RETURN(std::shared_ptr<const MatMulPrimitive> made,
                           create(a_dims, b_dims, c_dims));
    cache_.emplace(std::move(key), made);
    return made;
  }

  Expected<std::shared_ptr<const MatMulPrimitive>> create(const Dims& a_dims, const Dims& b_dims,
                                                          const Dims& c_dims) const {
    auto mm = std::make_shared<MatMulPrimitive>();
    VOXRT_ASSIGN_OR_RETURN(mm->problem, plan_matmul(node_, config_, a_dims, b_dims));
    const MatMulProblem& p = mm->problem;
    if (p.batch_count == 0 || p.m == 0 || p.n == 0 || p.k == 0)
      return std::shared_ptr<const MatMulPrimitive>(mm);
    // Batch strides of the operands when they are uniform (full or broadcast).
    auto uniform_stride = [&](const std::vector<std::int64_t>& offsets,
                              std::int64_t matrix) -> std::int64_t {
      const std::int64_t step = offsets.size() > 1 ? offsets[1] - offsets[0] : 0;
      if (step != 0 && step != matrix) return -1;
      for (std::size_t i = 0; i < offsets.size(); ++i) {
        if (offsets[i] != static_cast<std::int64_t>(i) * step) return -1;
      }
      return step;
    };
    std::int64_t a_stride = 0, b_stride = 0;
    if (p.batch_count > 1) {
      a_stride = uniform_stride(p.a_offsets, p.m * p.k);
      b_stride = uniform_stride(p.b_offsets, p.k * p.n);
      mm->mode = a_stride >= 0 && b_stride >= 0 ? BatchMode::kBatched : BatchMode::kLoop;
    }
    const bool three_d = mm->mode == BatchMode::kBatched;
    const std::int64_t a_batch = three_d && a_stride != 0 ? p.batch_count : 1;
    const std::int64_t b_batch = three_d && b_stride != 0 ? p.batch_count : 1;
    const bool pack_b = constant_b_.has_value() && mm->mode == BatchMode::kSingle;
    mm->src_md = matrix_md(a_batch, p.m, p.k, p.trans_a, p.lda, three_d);
    mm->weights_md = matrix_md(b_batch, p.k, p.n, p.trans_b, p.ldb, three_d);
    mm->dst_md = matrix_md(p.batch_count, p.m, p.n, false, p.n, three_d);
    const bool alpha_folded = pack_b;
    const bool c_is_row = c_dims.size() == 1
                              ? c_dims[0] == p.n && p.n > 1
                              : c_dims.size() == 2 && c_dims[0] == 1 && c_dims[1] == p.n && p.n > 1;
    mm->use_bias = config_.has_c && bias_times_beta_.has_value() && c_is_row &&
                   (alpha_folded || config_.alpha == 1.0f);
    mm->use_sum = config_.has_c && !mm->use_bias;

    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    if (!alpha_folded && config_.alpha != 1.0f) attr.set_output_scales(0, {config_.alpha});
    dnnl::post_ops ops;
    if (mm->use_sum) ops.append_sum(config_.beta);
    append_activation_post_op(config_.activation, ops);
    attr.set_post_ops(ops);
    const memory::desc weights_req =
        pack_b ? memory::desc({p.k, p.n}, memory::data_type::f32, memory::format_tag::any)
               : mm->weights_md;
    memory::desc bias_md;
    if (mm->use_bias) {
      bias_md = three_d ? memory::desc({1, 1, p.n}, memory::data_type::f32, memory::format_tag::abc)
                        : memory::desc({1, p.n}, memory::data_type::f32, memory::format_tag::ab);
    }
    const dnnl::matmul::desc desc(mm->src_md, weights_req, bias_md, mm->dst_md);
    const dnnl::matmul::primitive_desc pd(desc, attr, onednn_engine());
    mm->primitive = dnnl::matmul(pd);
    mm->scratchpad_bytes = pd.scratchpad_desc().get_size();
    if (pack_b) {
      dnnl::primitive_attr scale_b;  // B times alpha
      if (config_.alpha != 1.0f) scale_b.set_output_scales(0, {config_.alpha});
      const memory user(mm->weights_md, onednn_engine(),
                        const_cast<float*>(constant_b_->data<float>()));
      mm->packed_weights = packed_.get(pd.weights_desc(), user, {}, scale_b);
    }
    return std::shared_ptr<const MatMulPrimitive>(mm);
  }

  ir::Node node_;
  MatMulConfig config_;
  std::optional<Tensor> constant_b_;
  std::optional<Tensor> bias_times_beta_;
  mutable std::mutex mutex_;
  mutable std::map<std::vector<std::int64_t>, std::shared_ptr<const MatMulPrimitive>> cache_;
  mutable ReorderedWeights packed_;  // B times alpha, once per layout
};

}  // namespace

Expected<std::unique_ptr<Kernel>> make_matmul_onednn_kernel(const ir::Node& node) {
  VOXRT_ASSIGN_OR_RETURN(MatMulConfig config, read_matmul_config(node));
  std::optional<Tensor> constant_b;
  if (const ir::Value* b = node.input(1); b && b->is_constant()) constant_b = *b->constant;
  std::optional<Tensor> bias_times_beta;
  if (const ir::Value* c = node.input(2); config.has_c && c && c->is_constant()) {
    Tensor scaled = c->constant->clone();
    for (float& v : scaled.span<float>()) v *= config.beta;
    bias_times_beta = std::move(scaled);
  }
  auto kernel = std::make_unique<MatMulOneDnnKernel>(
      detached_node(node), config, std::move(constant_b), std::move(bias_times_beta));
  // Pack B now when the plan's shapes are known (a dynamic batch/time packs on first use).
  const ir::Value* a = node.input(0);
  const ir::Value* b = node.input(1);
  if (a && b && a->rank_known && b->rank_known) {
    auto a_dims = ir::known_dims(a->shape);
    auto b_dims = ir::known_dims(b->shape);
    Dims c_dims;
    bool c_known = true;
    if (const ir::Value* c = node.input(2); config.has_c && c) {
      auto known = ir::known_dims(c->shape);
      c_known = known.has_value() && c->rank_known;
      if (known) c_dims = *known;
    }
    if (a_dims && b_dims && c_known)
      VOXRT_RETURN_IF_ERROR(kernel->warm_up(*a_dims, *b_dims, c_dims));
  }
  return std::unique_ptr<Kernel>(std::move(kernel));
}

}  // namespace voxrt::backends::cpu::dense
