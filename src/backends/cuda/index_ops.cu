// Index-driven data movement (index_ops.h): one thread per output (or update) element, the other
// element found per axis by the op's rule or from an index tensor; elements moved as unsigned
// integers of their size, combined with atomics when a scatter reduces.
#include <type_traits>

#include "backends/cuda/grid_stride.cuh"
#include "backends/cuda/index_ops.h"

namespace voxrt::backends::cuda::ops {
namespace {

constexpr int kThreads = 256;

// Calls f(T{}) with the unsigned integer type of `element_bytes`.
template <typename F>
cudaError_t with_element_bytes(int element_bytes, F&& f) {
  switch (element_bytes) {
    case 1: return f(std::uint8_t{});
    case 2: return f(std::uint16_t{});
    case 4: return f(std::uint32_t{});
    case 8: return f(std::uint64_t{});
    default: return cudaErrorInvalidValue;
  }
}

// The input coordinate of out coordinate c, or -1 for the constant.
__device__ __forceinline__ std::int64_t pad_source(std::int64_t c, std::int64_t begin,
                                                   std::int64_t size, PadMode mode) {
  std::int64_t i = c - begin;
  if (i >= 0 && i < size) return i;
  switch (mode) {
    case PadMode::kConstant: return -1;
    case PadMode::kEdge: return i < 0 ? 0 : size - 1;
    case PadMode::kReflect:
      if (size == 1) return 0;
      while (i < 0 || i >= size) i = i < 0 ? -i : 2 * (size - 1) - i;
      return i;
  }
  return -1;
}

template <typename T>
__global__ void pad_kernel(const T* in, T* out, std::int64_t n, PadIndex index, PadMode mode,
                           T constant) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    std::int64_t rest = i, offset = 0, stride = 1;
    bool inside = true;
    for (int d = index.rank - 1; d >= 0; --d) {
      const std::int64_t c = rest % index.out_dims[d];
      rest /= index.out_dims[d];
      const std::int64_t source = pad_source(c, index.pad_begin[d], index.in_dims[d], mode);
      inside = inside && source >= 0;
      offset += source * stride;
      stride *= index.in_dims[d];
    }
    out[i] = inside ? in[offset] : constant;
  }
}

template <typename T>
__global__ void tile_kernel(const T* in, T* out, std::int64_t n, TileIndex index) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    std::int64_t rest = i, offset = 0, stride = 1;
    for (int d = index.rank - 1; d >= 0; --d) {
      const std::int64_t c = rest % index.out_dims[d];
      rest /= index.out_dims[d];
      offset += (c % index.in_dims[d]) * stride;
      stride *= index.in_dims[d];
    }
    out[i] = in[offset];
  }
}

template <typename T>
__global__ void trilu_kernel(const T* in, T* out, std::int64_t n, std::int64_t rows,
                             std::int64_t cols, bool upper, const std::int64_t* k_ptr) {
  const std::int64_t k = k_ptr ? *k_ptr : 0;
  for (std::int64_t e = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; e < n;
       e += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t j = e % cols, i = (e / cols) % rows;
    const bool keep = upper ? j - i >= k : j - i <= k;
    out[e] = keep ? in[e] : T(0);
  }
}

// An index (int32 or int64, negatives from the end) resolved against `extent`, or -1.
__device__ __forceinline__ std::int64_t resolved_index(const void* indices, bool i32,
                                                       std::int64_t at, std::int64_t extent) {
  const std::int64_t raw = i32 ? static_cast<const std::int32_t*>(indices)[at]
                               : static_cast<const std::int64_t*>(indices)[at];
  const std::int64_t index = raw < 0 ? raw + extent : raw;
  return index >= 0 && index < extent ? index : -1;
}

// dst (reduce)= value; atomic for the reductions (several updates may meet one element).
template <typename T>
__device__ __forceinline__ void combine(T* dst, T value, ScatterReduce reduce) {
  if (reduce == ScatterReduce::kNone) {
    *dst = value;
    return;
  }
  if constexpr (std::is_same_v<T, float>) {
    if (reduce == ScatterReduce::kAdd) {
      atomicAdd(dst, value);
      return;
    }
    auto* word = reinterpret_cast<unsigned*>(dst);
    unsigned seen = *word, wanted;
    do {
      const float current = __uint_as_float(seen);
      const float next = reduce == ScatterReduce::kMul   ? current * value
                         : reduce == ScatterReduce::kMax ? (value > current ? value : current)
                                                         : (value < current ? value : current);
      wanted = __float_as_uint(next);
      const unsigned before = atomicCAS(word, seen, wanted);
      if (before == seen) break;
      seen = before;
    } while (true);
  } else if constexpr (std::is_same_v<T, std::int32_t>) {
    switch (reduce) {
      case ScatterReduce::kAdd: atomicAdd(dst, value); return;
      case ScatterReduce::kMax: atomicMax(dst, value); return;
      case ScatterReduce::kMin: atomicMin(dst, value); return;
      default: break;
    }
    int seen = *dst;
    while (true) {  // multiply, wrapping like the CPU's two's complement
      const int next = static_cast<int>(static_cast<unsigned>(seen) * static_cast<unsigned>(value));
      const int before = atomicCAS(dst, seen, next);
      if (before == seen) break;
      seen = before;
    }
  } else if constexpr (std::is_same_v<T, std::int64_t>) {
    auto* word = reinterpret_cast<unsigned long long*>(dst);
    switch (reduce) {
      case ScatterReduce::kAdd: atomicAdd(word, static_cast<unsigned long long>(value)); return;
      case ScatterReduce::kMax: atomicMax(reinterpret_cast<long long*>(dst), value); return;
      case ScatterReduce::kMin: atomicMin(reinterpret_cast<long long*>(dst), value); return;
      default: break;
    }
    unsigned long long seen = *word;
    while (true) {
      const unsigned long long next = seen * static_cast<unsigned long long>(value);
      const unsigned long long before = atomicCAS(word, seen, next);
      if (before == seen) break;
      seen = before;
    }
  }
}

template <typename T>
__global__ void scatter_nd_kernel(const T* updates, const void* indices, bool i32, T* out,
                                  ScatterNdIndex index, ScatterReduce reduce) {
  const std::int64_t n = index.tuples * index.slice;
  for (std::int64_t e = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; e < n;
       e += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t t = e / index.slice, within = e % index.slice;
    std::int64_t offset = 0;
    bool inside = true;
    for (int d = 0; d < index.k; ++d) {
      const std::int64_t i = resolved_index(indices, i32, t * index.k + d, index.data_dims[d]);
      inside = inside && i >= 0;
      offset += i * index.data_strides[d];
    }
    if (inside) combine(out + offset + within, updates[e], reduce);
  }
}

// The data offset element p of the indices addresses, or -1 when its index is out of range.
__device__ __forceinline__ std::int64_t elements_offset(const ElementsIndex& index,
                                                        const void* indices, bool i32,
                                                        std::int64_t p) {
  std::int64_t rest = p, offset = 0;
  for (int d = index.rank - 1; d >= 0; --d) {
    std::int64_t c = rest % index.index_dims[d];
    rest /= index.index_dims[d];
    if (d == index.axis) {
      c = resolved_index(indices, i32, p, index.data_dims[d]);
      if (c < 0) return -1;
    }
    offset += c * index.data_strides[d];
  }
  return offset;
}

template <typename T>
__global__ void scatter_elements_kernel(const T* updates, const void* indices, bool i32, T* out,
                                        std::int64_t n, ElementsIndex index, ScatterReduce reduce) {
  for (std::int64_t p = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; p < n;
       p += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t offset = elements_offset(index, indices, i32, p);
    if (offset >= 0) combine(out + offset, updates[p], reduce);
  }
}

template <typename T>
__global__ void gather_elements_kernel(const T* data, const void* indices, bool i32, T* out,
                                       std::int64_t n, ElementsIndex index) {
  for (std::int64_t p = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; p < n;
       p += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t offset = elements_offset(index, indices, i32, p);
    out[p] = offset >= 0 ? data[offset] : T(0);
  }
}

std::int64_t element_count(int rank, const std::int64_t* dims) {
  std::int64_t n = 1;
  for (int d = 0; d < rank; ++d) n *= dims[d];
  return n;
}

}  // namespace

cudaError_t pad(const void* in, void* out, int element_bytes, const PadIndex& index, PadMode mode,
                std::uint64_t constant_bits, cudaStream_t stream) {
  const std::int64_t n = element_count(index.rank, index.out_dims);
  if (n <= 0) return cudaSuccess;
  return with_element_bytes(element_bytes, [&](auto tag) {
    using T = decltype(tag);
    pad_kernel<T><<<grid_stride_blocks(n, kThreads), kThreads, 0, stream>>>(
        static_cast<const T*>(in), static_cast<T*>(out), n, index, mode,
        static_cast<T>(constant_bits));
    return cudaGetLastError();
  });
}

cudaError_t tile(const void* in, void* out, int element_bytes, const TileIndex& index,
                 cudaStream_t stream) {
  const std::int64_t n = element_count(index.rank, index.out_dims);
  if (n <= 0) return cudaSuccess;
  return with_element_bytes(element_bytes, [&](auto tag) {
    using T = decltype(tag);
    tile_kernel<T><<<grid_stride_blocks(n, kThreads), kThreads, 0, stream>>>(
        static_cast<const T*>(in), static_cast<T*>(out), n, index);
    return cudaGetLastError();
  });
}

cudaError_t trilu(const void* in, void* out, int element_bytes, std::int64_t matrices,
                  std::int64_t rows, std::int64_t cols, bool upper, const std::int64_t* k,
                  cudaStream_t stream) {
  const std::int64_t n = matrices * rows * cols;
  if (n <= 0) return cudaSuccess;
  return with_element_bytes(element_bytes, [&](auto tag) {
    using T = decltype(tag);
    trilu_kernel<T><<<grid_stride_blocks(n, kThreads), kThreads, 0, stream>>>(
        static_cast<const T*>(in), static_cast<T*>(out), n, rows, cols, upper, k);
    return cudaGetLastError();
  });
}

// Calls f(T{}) with the element type of a reducing scatter, or the unsigned integer of its size.
template <typename F>
cudaError_t with_scatter_type(ElemType type, ScatterReduce reduce, F&& f) {
  if (!scatter_reduce_takes(reduce, type)) return cudaErrorInvalidValue;
  if (reduce != ScatterReduce::kNone) {
    switch (type) {
      case ElemType::kF32: return f(float{});
      case ElemType::kI32: return f(std::int32_t{});
      case ElemType::kI64: return f(std::int64_t{});
      default: return cudaErrorInvalidValue;
    }
  }
  return with_element_bytes(elem_type_bytes(type), f);
}

cudaError_t scatter_nd(ElemType type, const void* updates, const void* indices,
                       bool indices_are_i32, void* out, const ScatterNdIndex& index,
                       ScatterReduce reduce, cudaStream_t stream) {
  const std::int64_t n = index.tuples * index.slice;
  if (n <= 0) return cudaSuccess;
  return with_scatter_type(type, reduce, [&](auto tag) {
    using T = decltype(tag);
    scatter_nd_kernel<T><<<grid_stride_blocks(n, kThreads), kThreads, 0, stream>>>(
        static_cast<const T*>(updates), indices, indices_are_i32, static_cast<T*>(out), index,
        reduce);
    return cudaGetLastError();
  });
}

cudaError_t scatter_elements(ElemType type, const void* updates, const void* indices,
                             bool indices_are_i32, void* out, const ElementsIndex& index,
                             ScatterReduce reduce, cudaStream_t stream) {
  const std::int64_t n = element_count(index.rank, index.index_dims);
  if (n <= 0) return cudaSuccess;
  return with_scatter_type(type, reduce, [&](auto tag) {
    using T = decltype(tag);
    scatter_elements_kernel<T><<<grid_stride_blocks(n, kThreads), kThreads, 0, stream>>>(
        static_cast<const T*>(updates), indices, indices_are_i32, static_cast<T*>(out), n, index,
        reduce);
    return cudaGetLastError();
  });
}

cudaError_t gather_elements(int element_bytes, const void* data, const void* indices,
                            bool indices_are_i32, void* out, const ElementsIndex& index,
                            cudaStream_t stream) {
  const std::int64_t n = element_count(index.rank, index.index_dims);
  if (n <= 0) return cudaSuccess;
  return with_element_bytes(element_bytes, [&](auto tag) {
    using T = decltype(tag);
    gather_elements_kernel<T><<<grid_stride_blocks(n, kThreads), kThreads, 0, stream>>>(
        static_cast<const T*>(data), indices, indices_are_i32, static_cast<T*>(out), n, index);
    return cudaGetLastError();
  });
}

}  // namespace voxrt::backends::cuda::ops
