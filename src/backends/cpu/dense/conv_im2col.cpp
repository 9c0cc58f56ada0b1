// Conv / FusedConv as im2col + OpenBLAS sgemm. The output positions of each (image, group) are
// cut into column blocks small enough for the unfolded block to stay in L2; each block is
// unfolded into per-thread scratch and multiplied by the group's weights [M/g, C/g * kernel]
// (the ONNX weight layout already is that matrix, so nothing is repacked). Bias and activation
// are applied to the block right after its GEMM. 1x1 convolutions with stride 1 and no padding
// skip the unfolding.
#include <cblas.h>

#include <algorithm>
#include <cstring>

#include "backends/cpu/dense/dense_common.h"
#include "backends/cpu/dense/dense_kernels.h"
#include "core/thread_pool.h"
#include "ir/shape_inference/dense.h"

namespace voxrt::backends::cpu::dense {
namespace {

constexpr std::size_t kColumnBlockBytes = 1u << 20;
constexpr std::int64_t kMinColumnBlock = 64;

// Unfolds output columns [col_begin, col_end) of one image-group into col (row stride = width).
void im2col_block(const Geometry3& g, const float* x, std::int64_t channels, std::int64_t col_begin,
                  std::int64_t col_end, float* col) {
  const std::int64_t width = col_end - col_begin;
  const std::int64_t in_plane = g.in[0] * g.in[1] * g.in[2];
  std::int64_t row = 0;
  for (std::int64_t c = 0; c < channels; ++c) {
    const float* xc = x + c * in_plane;
    for (std::int64_t kd = 0; kd < g.kernel[0]; ++kd) {
      for (std::int64_t kh = 0; kh < g.kernel[1]; ++kh) {
        for (std::int64_t kw = 0; kw < g.kernel[2]; ++kw, ++row) {
          float* dst = col + row * width;
          std::int64_t j = col_begin;
          while (j < col_end) {
            // One run of output positions along W that share (od, oh).
            const std::int64_t ow = j % g.out[2];
            const std::int64_t oh = (j / g.out[2]) % g.out[1];
            const std::int64_t od = j / (g.out[2] * g.out[1]);
            const std::int64_t run = std::min(g.out[2] - ow, col_end - j);
            const std::int64_t id = od * g.stride[0] - g.pad[0] + kd * g.dilation[0];
            const std::int64_t ih = oh * g.stride[1] - g.pad[1] + kh * g.dilation[1];
            float* out = dst + (j - col_begin);
            if (id < 0 || id >= g.in[0] || ih < 0 || ih >= g.in[1]) {
              std::fill(out, out + run, 0.0f);
            } else {
              const float* src = xc + (id * g.in[1] + ih) * g.in[2];
              const std::int64_t sw = g.stride[2];
              const std::int64_t iw0 = ow * sw - g.pad[2] + kw * g.dilation[2];
              // Positions t in [0, run) with 0 <= iw0 + t * sw < in_w.
              std::int64_t t_lo = iw0 >= 0 ? 0 : (-iw0 + sw - 1) / sw;
              std::int64_t t_hi = iw0 >= g.in[2] ? 0 : (g.in[2] - iw0 + sw - 1) / sw;
              t_lo = std::min(t_lo, run);
              t_hi = std::clamp(t_hi, t_lo, run);
              std::fill(out, out + t_lo, 0.0f);
              if (sw == 1) {
                std::memcpy(out + t_lo, src + iw0 + t_lo,
                            static_cast<std::size_t>(t_hi - t_lo) * sizeof(float));
              } else {
                for (std::int64_t t = t_lo; t < t_hi; ++t) out[t] = src[iw0 + t * sw];
              }
              std::fill(out + t_hi, out + run, 0.0f);
            }
            j += run;
          }
        }
      }
    }
  }
}

class ConvIm2ColKernel final : public Kernel {
 public:
  ConvIm2ColKernel(ir::Node node, Activation activation)
      : node_(std::move(node)), activation_(activation) {}

  Status run(std::span<const Tensor* const> inputs, std::span<Tensor* const> outputs,
             KernelContext& context) const override {
    const Tensor& x = *inputs[0];
    const Tensor& w = *inputs[1];
    const Tensor* bias = inputs.size() > 2 ? inputs[2] : nullptr;
    VOXRT_ASSIGN_OR_RETURN(ir::ConvGeometry geometry,
                           ir::resolve_conv_geometry(node_, x.dims(), w.dims()));
    if (geometry.input.size() > 3) {
      return unsupported(node_.describe(), ": im2col Conv handles 1 to 3 spatial dims");
    }
    const Geometry3 g = to_3d(geometry);
    const std::int64_t groups = geometry.group;
    const std::int64_t group_in = geometry.in_channels / groups,
                       group_out = geometry.out_channels / groups;
    const std::int64_t kernel_volume = g.kernel[0] * g.kernel[1] * g.kernel[2];
    const std::int64_t col_rows = group_in * kernel_volume;
    const std::int64_t in_plane = g.in[0] * g.in[1] * g.in[2];
    const std::int64_t out_plane = g.out[0] * g.out[1] * g.out[2];
    bool pointwise = kernel_volume == 1;
    for (int axis = 0; axis < 3; ++axis) {
      pointwise = pointwise && g.stride[axis] == 1 && g.pad[axis] == 0 && g.in[axis] == g.out[axis];
    }
    const std::int64_t threads = context.pool->threads();
    const std::int64_t images = geometry.batch * groups;
    // Column block: small enough for L2, and enough blocks that every thread has work.
    std::int64_t block = std::max<std::int64_t>(
        kMinColumnBlock, static_cast<std::int64_t>(kColumnBlockBytes / sizeof(float)) /
                             std::max<std::int64_t>(col_rows, 1));
    if (images < threads) {
      const std::int64_t per_thread = (out_plane * images + threads - 1) / threads;
      block = std::min(block, std::max<std::int64_t>(16, (per_thread + 15) / 16 * 16));
    }
    block = std::min(block, out_plane);
    const std::int64_t blocks_per_image = (out_plane + block - 1) / block;
    const float* xd = x.data<float>();
    const float* wd = w.data<float>();
    const float* bd = bias ? bias->data<float>() : nullptr;
    float* yd = outputs[0]->data<float>();
    context.pool->parallel_for(
        images * blocks_per_image, 1, [&](std::int64_t begin, std::int64_t end) {
          for (std::int64_t unit = begin; unit < end; ++unit) {
            const std::int64_t image = unit / blocks_per_image, blk = unit % blocks_per_image;
            const std::int64_t n = image / groups, grp = image % groups;
            const std::int64_t col_begin = blk * block,
                               col_end = std::min(out_plane, col_begin + block);
            const std::int64_t width = col_end - col_begin;
            const float* x_group = xd + (n * geometry.in_channels + grp * group_in) * in_plane;
            const float* w_group = wd + grp * group_out * col_rows;
            float* y_group = yd + (n * geometry.out_channels + grp * group_out) * out_plane;
            const float* col = nullptr;
            std::int64_t ld_col = width;
            if (pointwise) {
              col = x_group + col_begin;
              ld_col = in_plane;
            } else {
              float* scratch = thread_scratch_floats(static_cast<std::size_t>(col_rows * width), 0);
              im2col_block(g, x_group, group_in, col_begin, col_end, scratch);
              col = scratch;
            }
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(group_out),
                        static_cast<int>(width), static_cast<int>(col_rows), 1.0f, w_group,
                        static_cast<int>(col_rows), col, static_cast<int>(ld_col), 0.0f,
                        y_group + col_begin, static_cast<int>(out_plane));
            for (std::int64_t oc = 0; oc < group_out; ++oc) {
              float* y = y_group + oc * out_plane + col_begin;
              if (bd) {
                const float b = bd[grp * group_out + oc];
                for (std::int64_t i = 0; i < width; ++i) y[i] += b;
              }
              apply_activation(activation_, y, width);
            }
          }
        });
    return Status::ok();
  }

 private:
  ir::Node node_;
  Activation activation_;
};

}  // namespace

Expected<std::unique_ptr<Kernel>> make_conv_im2col_kernel(const ir::Node& node) {
  VOXRT_ASSIGN_OR_RETURN(Activation activation, read_activation(node));
  ensure_openblas_single_threaded();
  return std::unique_ptr<Kernel>(new ConvIm2ColKernel(detached_node(node), activation));
}

}  // namespace voxrt::backends::cpu::dense
