// Grouped convolution kernels (grouped_conv.h): the naive reference, one thread per output, and
// the depthwise kernel, one block per run of output columns of one (n, oc, oh) row.
#include "backends/cuda/cuda_ops.h"
#include "backends/cuda/grid_stride.cuh"
#include "backends/cuda/unary_apply.cuh"

namespace voxrt::backends::cuda::ops {
namespace {

constexpr int kThreads = 256;

__global__ void grouped_conv_reference_kernel(GroupedConv s, const float* x, const float* w,
                                              const float* bias, UnaryOp op, float alpha,
                                              float beta, float* y) {
  const std::int64_t n_out = s.batch * s.out_channels * s.out_h * s.out_w;
  const std::int64_t cg = s.channels / s.groups, og = s.out_channels / s.groups;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n_out;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t ow = i % s.out_w;
    const std::int64_t oh = (i / s.out_w) % s.out_h;
    const std::int64_t oc = (i / (s.out_w * s.out_h)) % s.out_channels;
    const std::int64_t n = i / (s.out_w * s.out_h * s.out_channels);
    const std::int64_t g = oc / og;
    float sum = bias ? bias[oc] : 0.0f;
    for (std::int64_t c = 0; c < cg; ++c) {
      const std::int64_t ic = g * cg + c;
      for (std::int64_t kh = 0; kh < s.kernel_h; ++kh) {
        const std::int64_t ih = oh * s.stride_h - s.pad_top + kh * s.dilation_h;
        if (ih < 0 || ih >= s.height) continue;
        for (std::int64_t kw = 0; kw < s.kernel_w; ++kw) {
          const std::int64_t iw = ow * s.stride_w - s.pad_left + kw * s.dilation_w;
          if (iw < 0 || iw >= s.width) continue;
          sum += x[((n * s.channels + ic) * s.height + ih) * s.width + iw] *
                 w[((oc * cg + c) * s.kernel_h + kh) * s.kernel_w + kw];
        }
      }
    }
    y[i] = apply_unary(op, sum, alpha, beta);
  }
}

// Block b: output row (n, oc, oh) = b / column_tiles, columns [tile * threads, + threads).
__global__ void depthwise_conv_kernel(GroupedConv s, DepthwiseLaunch launch, const float* x,
                                      const float* w, const float* bias, UnaryOp op, float alpha,
                                      float beta, float* y) {
  extern __shared__ float shared[];
  float* filter = shared;                             // kernel_h * kernel_w
  float* segment = shared + s.kernel_h * s.kernel_w;  // launch.segment
  const std::int64_t row = blockIdx.x / launch.column_tiles;
  const std::int64_t tile = blockIdx.x % launch.column_tiles;
  const std::int64_t oh = row % s.out_h;
  const std::int64_t oc = (row / s.out_h) % s.out_channels;
  const std::int64_t n = row / (s.out_h * s.out_channels);
  const std::int64_t c = oc / (s.out_channels / s.channels);  // the channel of oc's group
  const std::int64_t taps = s.kernel_h * s.kernel_w;
  for (std::int64_t k = threadIdx.x; k < taps; k += blockDim.x) filter[k] = w[oc * taps + k];
  const std::int64_t ow0 = tile * blockDim.x;
  const std::int64_t iw0 = ow0 * s.stride_w - s.pad_left;
  const std::int64_t ow = ow0 + threadIdx.x;
  const float* plane = x + (n * s.channels + c) * s.height * s.width;
  float sum = 0.0f;
  for (std::int64_t kh = 0; kh < s.kernel_h; ++kh) {
    const std::int64_t ih = oh * s.stride_h - s.pad_top + kh * s.dilation_h;
    if (ih < 0 || ih >= s.height) continue;  // the same for the whole block
    __syncthreads();  // the previous row's segment (and the filter) are done with / written
    const float* in_row = plane + ih * s.width;
    for (std::int64_t k = threadIdx.x; k < launch.segment; k += blockDim.x) {
      const std::int64_t iw = iw0 + k;
      segment[k] = iw >= 0 && iw < s.width ? in_row[iw] : 0.0f;
    }
    __syncthreads();
    const float* taps_row = filter + kh * s.kernel_w;
    const float* in = segment + threadIdx.x * s.stride_w;
    for (std::int64_t kw = 0; kw < s.kernel_w; ++kw) sum += in[kw * s.dilation_w] * taps_row[kw];
  }
  if (ow < s.out_w) {
    if (bias) sum += bias[oc];
    y[row * s.out_w + ow] = apply_unary(op, sum, alpha, beta);
  }
}

}  // namespace

cudaError_t grouped_conv_reference(const GroupedConv& shape, const float* x, const float* w,
                                   const float* bias, UnaryOp op, float alpha, float beta, float* y,
                                   cudaStream_t stream) {
  const std::int64_t n = shape.batch * shape.out_channels * shape.out_h * shape.out_w;
  if (n <= 0) return cudaSuccess;
  grouped_conv_reference_kernel<<<grid_stride_blocks(n, kThreads), kThreads, 0, stream>>>(
      shape, x, w, bias, op, alpha, beta, y);
  return cudaGetLastError();
}

cudaError_t depthwise_conv(const GroupedConv& shape, const float* x, const float* w,
                           const float* bias, UnaryOp op, float alpha, float beta, float* y,
                           cudaStream_t stream) {
  const DepthwiseLaunch launch = depthwise_launch(shape);
  if (launch.threads == 0) return cudaErrorInvalidValue;
  depthwise_conv_kernel<<<static_cast<unsigned>(launch.blocks), launch.threads,
                          static_cast<std::size_t>(launch.shared_bytes), stream>>>(
      shape, launch, x, w, bias, op, alpha, beta, y);
  return cudaGetLastError();
}

}  // namespace voxrt::backends::cuda::ops
