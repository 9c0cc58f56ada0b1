// The INT8 GEMM on AMX tiles (Intel AMX-INT8, "amx_int8"): C = dequantize(A_u8 x W_s8) + bias
// with the same operands, int32 sums and epilogue as int8_gemm.h, so its results equal the
// reference's to the bit. Why a second layout: one tdpbusd multiplies a 16-row x 64-byte tile of
// A by a 16 x 64-byte tile of W (16 quads of 16 columns) into 16 x 16 int32 sums, 16 K
// multiply-adds per instruction against 32 for a 256-bit vpdpbusd; a streaming Conformer chunk's
// projections (16 rows) are one A tile high. The weights are packed once into such tiles:
// columns in groups of 64 (four C tiles), depth in steps of 64 bytes, zero past depth and
// columns, so every tile is whole and a tile load needs no mask.
#pragma once

#include <cstdint>

#include "backends/cpu/quantized/int8_gemm.h"
#include "voxrt/tensor.h"

namespace voxrt::backends::cpu::quantized {

// Whether this CPU has AMX-TILE and AMX-INT8 and the kernel let this process use the tile data
// (Linux arch_prctl ARCH_REQ_XCOMP_PERM, asked once per process).
bool amx_int8_available();

inline constexpr std::int64_t kAmxTileRows = 16;      // rows of A (and of C) per tile
inline constexpr std::int64_t kAmxStepBytes = 64;     // depth bytes per tile step
inline constexpr std::int64_t kAmxGroupColumns = 64;  // 4 C tiles of 16 columns

struct AmxInt8Weights {
  std::int64_t columns = 0, depth = 0;
  std::int64_t steps = 0;   // depth rounded up to 64-byte steps
  std::int64_t groups = 0;  // columns rounded up to groups of 64
  // i8 [group][step][tile 0..3][16 quads][16 columns][4 bytes]: one 1 KiB B tile per
  // (group, step, tile), contiguous, row stride 64 bytes.
  Tensor data;

  std::int64_t padded_depth() const { return steps * kAmxStepBytes; }
};

// The same quantized values as `weights.rows`, in tiles.
AmxInt8Weights pack_amx_int8_weights(const PackedInt8Weights& weights);

// c[m * ldc + col] for rows [0, rows) and the columns of groups [group_begin, group_end) (the
// columns past weights.columns are not written). Row m of A starts at a + m * lda and must have
// padded_depth() readable bytes (what lies past depth is multiplied by zero weights), and A must
// have a whole number of 16-row tiles readable: callers pad it (amx_int8.cpp does).
// `epilogue` is make_int8_epilogue's for the PackedInt8Weights these were packed from.
void int8_gemm_amx(const std::uint8_t* a, std::int64_t lda, std::int64_t rows,
                   const AmxInt8Weights& weights, const Int8Epilogue& epilogue,
                   std::int64_t group_begin, std::int64_t group_end, float* c, std::int64_t ldc);

}  // namespace voxrt::backends::cpu::quantized
