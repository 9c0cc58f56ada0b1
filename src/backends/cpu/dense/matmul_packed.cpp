// Gemm / MatMul / FusedMatMul with a constant 2-D B on our own AVX-512 kernel ("avx512_packed"),
// for the few-row products of streaming and decoding (a decoder step multiplies one row by every
// weight matrix; a streaming chunk 16): there the weights come from memory once per call, so
// the time is the time to stream them. B is packed once (packed_panels.h) and its panels are
// split over the context's pool, every thread streaming its own.
#include <algorithm>
#include <cstring>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/dense/dense_common.h"
#include "backends/cpu/dense/dense_kernels.h"
#include "backends/cpu/dense/packed_panels.h"
#include "core/thread_pool.h"

namespace voxrt::backends::cpu::dense {
namespace {

class MatMulPackedKernel final : public Kernel {
 public:
  MatMulPackedKernel(std::string where, MatMulConfig config, PackedPanels b)
      : where_(std::move(where)), config_(config), b_(std::move(b)) {}

  Status run(std::span<const Tensor* const> inputs, std::span<Tensor* const> outputs,
             KernelContext& context) const override {
    const Tensor& a = *inputs[0];
    const std::int64_t k = b_.k, n = b_.n;
    if (a.rank() == 0 || a.dims().back() != k) {
      return invalid_argument(where_, ": A ", dims_to_string(a.dims()), " must end in K = ", k);
    }
    Tensor& y = *outputs[0];
    const std::int64_t rows =
        k == 0 ? y.element_count() / std::max<std::int64_t>(n, 1) : a.element_count() / k;
    if (y.element_count() != rows * n) {
      return internal_error(where_, ": output ", dims_to_string(y.dims()), " is not ", rows, " x ",
                            n);
    }
    if (rows == 0 || n == 0) return Status::ok();
    const PanelProblem problem{a.data<float>(), k, 1, rows, y.data<float>(), n, 1};
    context.pool->parallel_for(b_.panels(), 1, [&](std::int64_t begin, std::int64_t end) {
      run_panels(problem, b_, config_.activation, begin, end);
    });
    return Status::ok();
  }

 private:
  std::string where_;
  MatMulConfig config_;
  PackedPanels b_;  // alpha * B, and beta * C over N when there is a C
};

// C as one value per output column, when it is a constant of shape [N], [1, N] or a scalar.
std::optional<std::vector<float>> row_of_c(const ir::Value* c, std::int64_t n) {
  if (!c || !c->is_constant() || c->constant->dtype() != DType::kF32) return std::nullopt;
  const Tensor& t = *c->constant;
  const bool row = t.element_count() == 1 || (t.rank() == 1 && t.dim(0) == n) ||
                   (t.rank() == 2 && t.dim(0) == 1 && t.dim(1) == n);
  if (!row) return std::nullopt;
  std::vector<float> values(static_cast<std::size_t>(n));
  for (std::int64_t j = 0; j < n; ++j)
    values[static_cast<std::size_t>(j)] = t.data<float>()[t.element_count() == 1 ? 0 : j];
  return values;
}

}  // namespace

bool matmul_packed_applies(const ir::Node& node) {
  if (!cpu_has_avx512f()) return false;
  auto config = read_matmul_config(node);
  if (!config || config->trans_a) return false;
  const ir::Value* b = node.input(1);
  if (!b || !b->is_constant() || b->constant->rank() != 2 || b->constant->dtype() != DType::kF32)
    return false;
  const std::int64_t n = b->constant->dim(config->trans_b ? 0 : 1);
  if (config->has_c && !row_of_c(node.input(2), n)) return false;
  const ir::Value* a = node.input(0);
  return a && a->rank_known && !a->shape.empty();
}

Expected<std::unique_ptr<Kernel>> make_matmul_packed_kernel(const ir::Node& node) {
  if (!matmul_packed_applies(node)) {
    return unsupported(node.describe(),
                       ": avx512_packed needs AVX-512, A not transposed, a constant 2-D f32 B and "
                       "C absent or one value per column");
  }
  VOXRT_ASSIGN_OR_RETURN(MatMulConfig config, read_matmul_config(node));
  const Tensor& b = *node.input(1)->constant;
  const std::int64_t k = b.dim(config.trans_b ? 1 : 0);
  const std::int64_t n = b.dim(config.trans_b ? 0 : 1);
  std::vector<float> bias;
  if (config.has_c) {
    bias = *row_of_c(node.input(2), n);
    for (float& v : bias) v *= config.beta;
  }
  return std::unique_ptr<Kernel>(
      new MatMulPackedKernel(node.describe(), config,
                             pack_panels(b.data<float>(), k, n, config.trans_b, config.alpha,
                                         config.has_c ? bias.data() : nullptr)));
}

}  // namespace voxrt::backends::cpu::dense
