// Gemm / MatMul / FusedMatMul on OpenBLAS sgemm. OpenBLAS runs single-threaded per call (see
// ensure_openblas_single_threaded); the kernel splits each GEMM into column or row tiles and
// runs them on the KernelContext pool, with C / bias and the activation applied per tile while
// the tile is still in cache.
#include <cblas.h>

#include <algorithm>

#include "backends/cpu/dense/dense_common.h"
#include "backends/cpu/dense/dense_kernels.h"
#include "core/thread_pool.h"

namespace voxrt::backends::cpu::dense {
namespace {

// Below this many output columns/rows per tile the split costs more than it gains.
constexpr std::int64_t kMinTileExtent = 32;

class MatMulOpenBlasKernel final : public Kernel {
 public:
  MatMulOpenBlasKernel(ir::Node node, MatMulConfig config)
      : node_(std::move(node)), config_(config) {}

  Status run(std::span<const Tensor* const> inputs, std::span<Tensor* const> outputs,
             KernelContext& context) const override {
    const Tensor& a = *inputs[0];
    const Tensor& b = *inputs[1];
    const Tensor* c = config_.has_c && inputs.size() > 2 ? inputs[2] : nullptr;
    VOXRT_ASSIGN_OR_RETURN(MatMulProblem p, plan_matmul(node_, config_, a.dims(), b.dims()));
    float* yd = outputs[0]->data<float>();
    if (p.batch_count == 0 || p.m == 0 || p.n == 0) return Status::ok();
    if (p.k == 0) {
      fill_empty_k_matmul(config_, p, c, yd);
      return Status::ok();
    }
    // Split the output along N when A is the smaller operand (each tile then reads only its
    // slice of the big B), else along M.
    const bool split_n = p.m * p.k <= p.k * p.n;
    const std::int64_t extent = split_n ? p.n : p.m;
    const std::int64_t threads = context.pool->threads();
    std::int64_t tiles = 1;
    if (p.batch_count < threads) {
      tiles = std::clamp<std::int64_t>((threads + p.batch_count - 1) / p.batch_count, 1,
                                       std::max<std::int64_t>(1, extent / kMinTileExtent));
    }
    const float* ad = a.data<float>();
    const float* bd = b.data<float>();
    const CBLAS_TRANSPOSE ta = p.trans_a ? CblasTrans : CblasNoTrans;
    const CBLAS_TRANSPOSE tb = p.trans_b ? CblasTrans : CblasNoTrans;
    context.pool->parallel_for(p.batch_count * tiles, 1, [&](std::int64_t begin, std::int64_t end) {
      for (std::int64_t unit = begin; unit < end; ++unit) {
        const std::int64_t batch = unit / tiles, tile = unit % tiles;
        // Tile bounds rounded to 16 so every tile but the last stays vector-aligned.
        auto bound = [&](std::int64_t t) {
          if (t == tiles) return extent;
          return std::min(extent, (extent * t / tiles + 15) / 16 * 16);
        };
        const std::int64_t lo = bound(tile), hi = bound(tile + 1);
        if (lo >= hi) continue;
        const std::int64_t m0 = split_n ? 0 : lo, m1 = split_n ? p.m : hi;
        const std::int64_t n0 = split_n ? lo : 0, n1 = split_n ? hi : p.n;
        const float* ab = ad + p.a_offsets[static_cast<std::size_t>(batch)];
        const float* bb = bd + p.b_offsets[static_cast<std::size_t>(batch)];
        float* y = yd + batch * p.m * p.n;
        const float* a_tile = p.trans_a ? ab + m0 : ab + m0 * p.lda;
        const float* b_tile = p.trans_b ? bb + n0 * p.ldb : bb + n0;
        float beta = 0.0f;
        if (c) {
          broadcast_c_into(*c, p.m, p.n, m0, m1, n0, n1, y, p.n);
          beta = config_.beta;
        }
        cblas_sgemm(CblasRowMajor, ta, tb, static_cast<int>(m1 - m0), static_cast<int>(n1 - n0),
                    static_cast<int>(p.k), config_.alpha, a_tile, static_cast<int>(p.lda), b_tile,
                    static_cast<int>(p.ldb), beta, y + m0 * p.n + n0, static_cast<int>(p.n));
        if (config_.activation.kind != ActivationKind::kNone) {
          for (std::int64_t i = m0; i < m1; ++i)
            apply_activation(config_.activation, y + i * p.n + n0, n1 - n0);
        }
      }
    });
    return Status::ok();
  }

 private:
  ir::Node node_;
  MatMulConfig config_;
};

}  // namespace

Expected<std::unique_ptr<Kernel>> make_matmul_openblas_kernel(const ir::Node& node) {
  VOXRT_ASSIGN_OR_RETURN(MatMulConfig config, read_matmul_config(node));
  ensure_openblas_single_threaded();
  return std::unique_ptr<Kernel>(new MatMulOpenBlasKernel(detached_node(node), config));
}

}  // namespace voxrt::backends::cpu::dense
