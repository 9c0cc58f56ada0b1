// oneDNN's INT8 matmul as an Int8GemmRunner: u8 activations (with our zero point as the
// primitive's source zero point) x s8 weights (reordered once per row count into the layout the
// primitive picks), per-column output scales, f32 result; the bias is added afterwards (oneDNN
// 2.6 applies an f32 bias before the output scales). Debian 12's oneDNN is 2.6: its
// avx512_core_vnni kernels ran on the Zen 4 this was written on (no AMX; on CPUs with AMX-INT8
// our amx_int8, int8_gemm_amx.h, is a tactic too). As the FP32 oneDNN tactics
// do, every primitive runs on one OpenMP thread (onednn_common.h says why); the rows of a call
// are split across our pool, one primitive per part size.
#include <array>
#include <map>
#include <mutex>

#include "backends/cpu/dense/onednn_common.h"
#include "backends/cpu/quantized/int8_gemm_runner.h"
#include "core/thread_pool.h"

namespace voxrt::backends::cpu::quantized {
namespace {

using dnnl::memory;

struct Int8MatMulPrimitive {
  dnnl::matmul primitive;
  memory::desc src_md, dst_md;
  memory weights;
  std::size_t scratchpad_bytes = 0;
};

class OneDnnInt8GemmRunner final : public Int8GemmRunner {
 public:
  OneDnnInt8GemmRunner(const PackedInt8Weights& weights, const Int8Epilogue& epilogue,
                       const ActivationQuantization& input)
      : weights_(weights), epilogue_(epilogue), input_(input) {}

  Status run(const std::uint8_t* a, std::int64_t lda, std::int64_t rows, float* c, std::int64_t ldc,
             KernelContext& context) const override {
    if (rows == 0) return Status::ok();
    const std::int64_t threads = std::min<std::int64_t>(context.pool->threads(), rows);
    Status status = Status::ok();
    std::mutex status_mutex;
    context.pool->parallel_for(threads, 1, [&](std::int64_t begin, std::int64_t end) {
      for (std::int64_t part = begin; part < end; ++part) {
        const std::int64_t r0 = rows * part / threads, r1 = rows * (part + 1) / threads;
        Status s = run_rows(a + r0 * lda, lda, r1 - r0, c + r0 * ldc, ldc);
        if (!s.ok()) {
          std::lock_guard<std::mutex> lock(status_mutex);
          status = s;
        }
      }
    });
    return status;
  }

 private:
  // On the calling thread (oneDNN's exceptions must not leave a pool worker).
  Status run_rows(const std::uint8_t* a, std::int64_t lda, std::int64_t rows, float* c,
                  std::int64_t ldc) const {
    if (rows == 0) return Status::ok();
    std::shared_ptr<const Int8MatMulPrimitive> mm;
    try {
      mm = primitive_for(rows, lda, ldc);
    } catch (const dnnl::error& e) {
      return internal_error("oneDNN int8 matmul (", rows, " x ", weights_.depth, " x ",
                            weights_.columns, ") failed: ", e.what());
    }
    dense::ArgumentMap& args = dense::thread_arguments(mm->primitive);
    dense::bind_argument(args, DNNL_ARG_SRC, mm->src_md, a);
    args[DNNL_ARG_WEIGHTS] = mm->weights;
    dense::bind_argument(args, DNNL_ARG_DST, mm->dst_md, c);
    try {
      dense::execute_primitive(mm->primitive, args, mm->scratchpad_bytes, 1);
    } catch (const dnnl::error& e) {
      return internal_error("oneDNN int8 matmul failed: ", e.what());
    }
    if (!epilogue_.bias.empty()) {
      for (std::int64_t m = 0; m < rows; ++m) {
        float* row = c + m * ldc;
        for (std::int64_t col = 0; col < weights_.columns; ++col)
          row[col] += epilogue_.bias[static_cast<std::size_t>(col)];
      }
    }
    return Status::ok();
  }

  std::shared_ptr<const Int8MatMulPrimitive> primitive_for(std::int64_t rows, std::int64_t lda,
                                                           std::int64_t ldc) const {
    const std::array<std::int64_t, 3> key{rows, lda, ldc};
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = cache_.find(key); it != cache_.end()) return it->second;
    const dnnl::engine& engine = dense::onednn_engine();
    const std::int64_t depth = weights_.depth, columns = weights_.columns;
    auto made = std::make_shared<Int8MatMulPrimitive>();
    made->src_md = memory::desc({rows, depth}, memory::data_type::u8, memory::dims{lda, 1});
    made->dst_md = memory::desc({rows, columns}, memory::data_type::f32, memory::dims{ldc, 1});
    const memory::desc weights_any({depth, columns}, memory::data_type::s8,
                                   memory::format_tag::any);
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    attr.set_output_scales(
        1 << 1, std::vector<float>(epilogue_.scales.begin(), epilogue_.scales.begin() + columns));
    attr.set_zero_points(DNNL_ARG_SRC, 0, {input_.zero_point});
    dense::set_onednn_threads(1);
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(made->src_md, weights_any, made->dst_md),
                                    attr, engine);
    made->primitive = dnnl::matmul(pd);
    made->scratchpad_bytes = pd.scratchpad_desc().get_size();
    // The weights as [depth, columns] s8 (the quantized rows are [columns, depth]).
    std::vector<std::int8_t> by_depth(static_cast<std::size_t>(depth * columns));
    for (std::int64_t col = 0; col < columns; ++col) {
      for (std::int64_t k = 0; k < depth; ++k)
        by_depth[static_cast<std::size_t>(k * columns + col)] =
            weights_.rows.values[static_cast<std::size_t>(col * depth + k)];
    }
    memory user({{depth, columns}, memory::data_type::s8, memory::format_tag::ab}, engine,
                by_depth.data());
    made->weights = weights_by_layout_.get(pd.weights_desc(), user);
    cache_.emplace(key, made);
    return made;
  }

  const PackedInt8Weights& weights_;
  const Int8Epilogue& epilogue_;
  ActivationQuantization input_;
  mutable std::mutex mutex_;
  mutable std::map<std::array<std::int64_t, 3>, std::shared_ptr<const Int8MatMulPrimitive>> cache_;
  // The s8 weights once per layout, not per row count (docs/perf/server.md).
  mutable dense::ReorderedWeights weights_by_layout_;
};

}  // namespace

Expected<std::unique_ptr<Int8GemmRunner>> make_onednn_int8_gemm_runner(
    const PackedInt8Weights& weights, const Int8Epilogue& epilogue,
    const ActivationQuantization& input) {
  return std::unique_ptr<Int8GemmRunner>(new OneDnnInt8GemmRunner(weights, epilogue, input));
}

}  // namespace voxrt::backends::cpu::quantized
