// Launchers of the index-driven data-movement kernels (index_ops.cu): Pad and Tile, whose
// output index maps to an input index per axis by a rule (border modes, modulo); Trilu; and the
// scatter/gather family, whose indices come from a tensor (int32 or int64, negatives counted
// from the end). Plain types only, as cuda_ops.h; any element size of 1, 2, 4 or 8 bytes.
//
// An index out of range is skipped (scatter) or reads 0 (gather): a kernel inside a CUDA graph
// cannot stop the run to report it, where the CPU backend fails with an error; neither ever
// writes or reads out of bounds. Duplicate indices without a reduction leave one of the
// updates (ONNX leaves the choice open); with one they all apply, in any order.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "backends/cuda/element_ops.h"
#include "backends/cuda/strided_copy.h"

namespace voxrt::backends::cuda::ops {

// Pad: out coordinate c on axis d reads input coordinate c - pad_begin[d]; outside [0, in_dims[d])
// the mode decides (constant: the value's bytes; edge: clamp; reflect: mirror without repeating
// the border). Negative pads crop.
enum class PadMode : int { kConstant, kEdge, kReflect };
struct PadIndex {
  int rank = 0;
  std::int64_t out_dims[kMaxRank] = {};
  std::int64_t in_dims[kMaxRank] = {};
  std::int64_t pad_begin[kMaxRank] = {};
};
cudaError_t pad(const void* in, void* out, int element_bytes, const PadIndex& index, PadMode mode,
                std::uint64_t constant_bits, cudaStream_t stream);

// Tile: out coordinate c on axis d reads input coordinate c % in_dims[d].
struct TileIndex {
  int rank = 0;
  std::int64_t out_dims[kMaxRank] = {};
  std::int64_t in_dims[kMaxRank] = {};
};
cudaError_t tile(const void* in, void* out, int element_bytes, const TileIndex& index,
                 cudaStream_t stream);

// Trilu over the trailing [rows, cols] matrices: element (i, j) kept where j - i >= k (upper) or
// j - i <= k (lower), zero otherwise. k is read on the device (null: 0).
cudaError_t trilu(const void* in, void* out, int element_bytes, std::int64_t matrices,
                  std::int64_t rows, std::int64_t cols, bool upper, const std::int64_t* k,
                  cudaStream_t stream);

enum class ScatterReduce : int { kNone, kAdd, kMul, kMax, kMin };
// The reductions take f32, i32 and i64 elements (atomics); kNone any element size.
constexpr bool scatter_reduce_takes(ScatterReduce reduce, ElemType type) {
  return reduce == ScatterReduce::kNone || type == ElemType::kF32 || type == ElemType::kI32 ||
         type == ElemType::kI64;
}

// ScatterND: out (holding data already) at each index tuple t (indices [tuples, k]) gets the
// slice of `slice` elements updates[t] (reduce: combined with what is there).
struct ScatterNdIndex {
  int k = 0;                              // index components per tuple (<= data rank)
  std::int64_t data_dims[kMaxRank] = {};  // the first k matter
  std::int64_t data_strides[kMaxRank] = {};
  std::int64_t tuples = 0;
  std::int64_t slice = 1;
};
cudaError_t scatter_nd(ElemType type, const void* updates, const void* indices,
                       bool indices_are_i32, void* out, const ScatterNdIndex& index,
                       ScatterReduce reduce, cudaStream_t stream);

// ScatterElements / GatherElements: element p of indices (dims index_dims) names the position
// along `axis`; its other coordinates are p's own. Scatter: out[pos] (reduce)= updates[p], out
// holding data already. Gather: out[p] = data[pos].
struct ElementsIndex {
  int rank = 0;
  int axis = 0;
  std::int64_t index_dims[kMaxRank] = {};
  std::int64_t data_dims[kMaxRank] = {};
  std::int64_t data_strides[kMaxRank] = {};
};
cudaError_t scatter_elements(ElemType type, const void* updates, const void* indices,
                             bool indices_are_i32, void* out, const ElementsIndex& index,
                             ScatterReduce reduce, cudaStream_t stream);
cudaError_t gather_elements(int element_bytes, const void* data, const void* indices,
                            bool indices_are_i32, void* out, const ElementsIndex& index,
                            cudaStream_t stream);

}  // namespace voxrt::backends::cuda::ops
