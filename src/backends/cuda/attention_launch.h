// The CUDA Attention kernels' shape and launch plan (the op's semantics: ir/op_kind.h). Plain
// C++17 with no CUDA include: the host side (attention.cpp), the kernels (attention_*.cu) and
// CPU-only unit tests (tests/unit/cuda_attention_plan) share it. One struct describes a run
// (sizes, element strides of every operand, so both qkv layouts and broadcast masks are the same
// code); attention_plan() says whether a kernel takes it and how it is launched.
#pragma once

#include <cstdint>

namespace voxrt::backends::cuda {

enum class AttentionMask : int { kNone, kBool, kFloat };

struct AttentionShape {
  std::int64_t batch = 0, heads = 0, kv_heads = 0, q_len = 0, kv_len = 0;
  std::int64_t key_dim = 0, value_dim = 0;
  float scale = 1.0f;
  bool causal = false;
  float mask_fill = 0.0f;  // the score of a false bool mask entry (it replaces the score)
  // Element strides of batch, head and row (one sequence position); the last dim is contiguous.
  std::int64_t q_stride[3] = {}, k_stride[3] = {}, v_stride[3] = {}, out_stride[3] = {};
  AttentionMask mask = AttentionMask::kNone;
  std::int64_t mask_stride[4] = {};  // b, h, i, j; 0 along broadcast dims
  bool has_bias = false;
  std::int64_t bias_stride[4] = {};
};

// The kernels (tactics of the attention family, attention.cpp):
//   kReference  one warp per query row, three passes over the keys in global memory (the oracle).
//   kSimtTiled  FP32 on CUDA cores: a block of 4 warps takes 16 query rows of one head, keys in
//               tiles of 32 staged in shared memory, online softmax (no score matrix).
//   kSplitKeys  decoder steps (at most kSplitKeysMaxRows query rows): the keys of one head split
//               over several blocks, each a partial softmax in FP32, then one combining launch.
//   kMmaRows16 / kMmaRows32 / kMmaRows64  FP16/BF16 tensor cores (mma.sync m16n8k16, FP32
//               accumulation and softmax statistics): 1, 2 or 4 warps of 16 query rows sharing
//               key/value tiles of 32, 64 and 64 keys in shared memory, online softmax (flash);
//               the small tiles for streaming chunks, the large for long sequences. Dk == Dv in
//               {32, 64, 128}.
//   kMmaPipelinedRows64 / kMmaPipelinedRows128  the same warp steps with 4 or 8 warps, after
//               one launch that rounds K and V to 16 bits into scratch once (not once per query
//               block); key/value tiles (64 keys, 32 at Dk 128) stream into two shared stages
//               with cp.async, the next tile's copy overlapping this tile's products.
enum class AttentionKernel : int {
  kReference,
  kSimtTiled,
  kSplitKeys,
  kMmaRows16,
  kMmaRows32,
  kMmaRows64,
  kMmaPipelinedRows64,
  kMmaPipelinedRows128,
};

inline constexpr std::int64_t kSplitKeysMaxRows = 8;
inline constexpr std::int64_t kSimtMaxDim = 256;
inline constexpr int kSimtRows = 16;
inline constexpr int kSimtKeys = 32;

struct AttentionPlan {
  bool takes = false;
  const char* why_not = "";
  int threads = 0;          // per block
  std::int64_t blocks = 0;  // grid (x)
  std::int64_t splits = 1;  // kSplitKeys: key ranges per row
  std::int64_t keys_per_split = 0;
  std::int64_t shared_bytes = 0;   // dynamic shared memory per block
  std::int64_t scratch_bytes = 0;  // kSplitKeys: the partial results
  int warps = 0, key_tile = 0;     // the mma kernels' tile
};

inline bool mma_head_dim(std::int64_t d) {
  return d == 32 || d == 64 || d == 128;
}

// The pipelined kernels' key tile: two stages of K and V tiles stay within 48 KiB of shared
// memory.
inline int pipelined_key_tile(std::int64_t head_dim) {
  return head_dim == 128 ? 32 : 64;
}
// Keys per (batch, key/value head) in the rounded copy: whole tiles, the tail zeros.
inline std::int64_t pipelined_kv_padded(const AttentionShape& s, int key_tile) {
  return (s.kv_len + key_tile - 1) / key_tile * key_tile;
}
// Bytes of one rounded copy (K or V; V follows K in scratch), a multiple of 256.
inline std::int64_t pipelined_rounded_bytes(const AttentionShape& s, int key_tile) {
  const std::int64_t bytes =
      2 * s.batch * s.kv_heads * pipelined_kv_padded(s, key_tile) * s.key_dim;
  return (bytes + 255) / 256 * 256;
}

// `sm_count`: multiprocessors of the device (kSplitKeys spreads rows x splits over them).
inline AttentionPlan attention_plan(AttentionKernel kernel, const AttentionShape& s, int sm_count) {
  AttentionPlan p;
  const std::int64_t rows = s.batch * s.heads * s.q_len;
  if (s.batch < 0 || s.heads <= 0 || s.kv_heads <= 0 || s.heads % s.kv_heads != 0) {
    p.why_not = "heads must be a positive multiple of the key/value heads";
    return p;
  }
  switch (kernel) {
    case AttentionKernel::kReference:
      p.threads = 128;  // 4 warps, one query row each
      p.blocks = (rows + 3) / 4;
      break;
    case AttentionKernel::kSimtTiled: {
      if (s.key_dim > kSimtMaxDim || s.value_dim > kSimtMaxDim) {
        p.why_not = "head dims above 256";
        return p;
      }
      p.threads = 128;
      p.blocks = s.batch * s.heads * ((s.q_len + kSimtRows - 1) / kSimtRows);
      // Q rows, a key tile and a value tile (rows padded by one float: no bank conflicts), and
      // each row's probabilities for the tile.
      p.shared_bytes = 4 * (kSimtRows * s.key_dim + kSimtKeys * (s.key_dim + 1) +
                            kSimtKeys * s.value_dim + kSimtRows * kSimtKeys);
      break;
    }
    case AttentionKernel::kSplitKeys: {
      if (s.q_len > kSplitKeysMaxRows) {
        p.why_not = "more than 8 query rows (a decoder step has 1)";
        return p;
      }
      if (s.key_dim > kSimtMaxDim || s.value_dim > kSimtMaxDim) {
        p.why_not = "head dims above 256";
        return p;
      }
      p.threads = 128;
      // Enough blocks for two waves over the multiprocessors, each at least 64 keys.
      std::int64_t splits = rows > 0 ? (2 * sm_count + rows - 1) / rows : 1;
      const std::int64_t by_length = (s.kv_len + 63) / 64;
      if (splits > by_length) splits = by_length;
      if (splits < 1) splits = 1;
      if (splits > 64) splits = 64;
      p.splits = splits;
      p.keys_per_split = s.kv_len > 0 ? (s.kv_len + splits - 1) / splits : 0;
      p.blocks = rows * splits;
      // Per block: the query row, then per warp its (max, sum) and output; partials per split.
      p.shared_bytes = 4 * (s.key_dim + 4 * (2 + s.value_dim));
      p.scratch_bytes = 4 * rows * splits * (2 + s.value_dim);
      break;
    }
    case AttentionKernel::kMmaRows16:
    case AttentionKernel::kMmaRows32:
    case AttentionKernel::kMmaRows64: {
      if (s.key_dim != s.value_dim || !mma_head_dim(s.key_dim)) {
        p.why_not = "the tensor-core kernels take Dk == Dv in {32, 64, 128}";
        return p;
      }
      p.warps = kernel == AttentionKernel::kMmaRows16   ? 1
                : kernel == AttentionKernel::kMmaRows32 ? 2
                                                        : 4;
      p.key_tile = kernel == AttentionKernel::kMmaRows16 ? 32 : 64;
      p.threads = 32 * p.warps;
      const std::int64_t tile_rows = 16 * p.warps;
      p.blocks = s.batch * s.heads * ((s.q_len + tile_rows - 1) / tile_rows);
      // K and V tiles in 16-bit elements, rows padded by 8 (16 bytes: conflict-free ldmatrix).
      p.shared_bytes = 2 * 2 * p.key_tile * (s.key_dim + 8);
      break;
    }
    case AttentionKernel::kMmaPipelinedRows64:
    case AttentionKernel::kMmaPipelinedRows128: {
      if (s.key_dim != s.value_dim || !mma_head_dim(s.key_dim)) {
        p.why_not = "the tensor-core kernels take Dk == Dv in {32, 64, 128}";
        return p;
      }
      p.warps = kernel == AttentionKernel::kMmaPipelinedRows64 ? 4 : 8;
      p.key_tile = pipelined_key_tile(s.key_dim);
      p.threads = 32 * p.warps;
      const std::int64_t tile_rows = 16 * p.warps;
      p.blocks = s.batch * s.heads * ((s.q_len + tile_rows - 1) / tile_rows);
      // Two stages of a K and a V tile in 16-bit elements, rows padded by 8.
      p.shared_bytes = 2 * 2 * 2 * p.key_tile * (s.key_dim + 8);
      p.scratch_bytes = 2 * pipelined_rounded_bytes(s, p.key_tile);
      break;
    }
  }
  if (p.blocks > 0x7fffffffLL) {
    p.why_not = "too many blocks";
    return p;
  }
  p.takes = true;
  return p;
}

}  // namespace voxrt::backends::cuda
