#include "backends/cpu/quantized/int8_gemm_amx.h"

#include <cpuid.h>
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

namespace voxrt::backends::cpu::quantized {
namespace {

#define VOXRT_AMX __attribute__((target("amx-tile,amx-int8,avx512f,avx512bw,avx512vl,avx2,fma")))

// Linux's arch_prctl request for the AMX tile data state (asm/prctl.h, xfeature 18).
constexpr long kArchRequestXcompPermission = 0x1023;
constexpr long kXfeatureTileData = 18;

// The 64-byte operand of ldtilecfg (palette 1).
struct alignas(64) TileConfig {
  std::uint8_t palette = 1;
  std::uint8_t start_row = 0;
  std::uint8_t reserved[14] = {};
  std::uint16_t bytes_per_row[16] = {};
  std::uint8_t rows[16] = {};
};

// Tiles 0-3: the four 16 x 16 int32 sums of a column group; 4: the A tile; 5 and 6: W tiles,
// alternating so that one loads while the other multiplies. All 16 rows of 64 bytes.
TileConfig make_config() {
  TileConfig config;
  for (int t = 0; t < 7; ++t) {
    config.bytes_per_row[t] = static_cast<std::uint16_t>(kAmxStepBytes);
    config.rows[t] = static_cast<std::uint8_t>(kAmxTileRows);
  }
  return config;
}

// GCC's tile loads are asm statements without a memory operand: this barrier (which also makes
// `buffer` escape) keeps the compiler's own loads and stores of the buffers on the right side.
inline void compiler_barrier(const void* buffer) {
  asm volatile("" : : "r"(buffer) : "memory");
}

// fma(float(sums - zero_point_sums), scales, bias) for the valid rows and columns of one
// 16-row block of one column group; sums is [16][64] int32.
VOXRT_AMX void store_group(const std::int32_t* sums, std::int64_t valid_rows, std::int64_t col0,
                           std::int64_t columns, const Int8Epilogue& e, float* c,
                           std::int64_t ldc) {
  for (std::int64_t j = 0; j < kAmxGroupColumns / 16; ++j) {
    const std::int64_t col = col0 + j * 16;
    const std::int64_t valid = std::min<std::int64_t>(16, columns - col);
    if (valid <= 0) break;
    const auto mask = static_cast<__mmask16>(valid == 16 ? 0xffff : (1u << valid) - 1u);
    const __m512i zero_point_sums = _mm512_maskz_loadu_epi32(mask, e.zero_point_sums.data() + col);
    const __m512 scales = _mm512_maskz_loadu_ps(mask, e.scales.data() + col);
    const __m512 bias =
        e.bias.empty() ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(mask, e.bias.data() + col);
    for (std::int64_t m = 0; m < valid_rows; ++m) {
      const __m512i acc = _mm512_maskz_loadu_epi32(mask, sums + m * kAmxGroupColumns + j * 16);
      // The masked conversion names its pass-through operand: GCC 12's unmasked one passes an
      // undefined vector that trips its own -Wmaybe-uninitialized (as in avx512_math.h).
      const __m512 sum =
          _mm512_mask_cvtepi32_ps(_mm512_setzero_ps(), static_cast<__mmask16>(0xffff),
                                  _mm512_sub_epi32(acc, zero_point_sums));
      const __m512 y = _mm512_fmadd_ps(sum, scales, bias);
      _mm512_mask_storeu_ps(c + m * ldc + col, mask, y);
    }
  }
}

VOXRT_AMX void gemm_amx(const std::uint8_t* a, std::int64_t lda, std::int64_t rows,
                        const AmxInt8Weights& w, const Int8Epilogue& e, std::int64_t group_begin,
                        std::int64_t group_end, float* c, std::int64_t ldc) {
  static const TileConfig config = make_config();
  alignas(64) std::int32_t sums[kAmxTileRows * kAmxGroupColumns];
  constexpr std::int64_t kTileBytes = kAmxTileRows * kAmxStepBytes;  // 1 KiB
  const std::int8_t* packed = w.data.data<std::int8_t>();
  _tile_loadconfig(&config);
  compiler_barrier(a);
  for (std::int64_t g = group_begin; g < group_end; ++g) {
    const std::int8_t* group = packed + g * w.steps * 4 * kTileBytes;
    for (std::int64_t row = 0; row < rows; row += kAmxTileRows) {
      const std::uint8_t* a_rows = a + row * lda;
      _tile_zero(0);
      _tile_zero(1);
      _tile_zero(2);
      _tile_zero(3);
      for (std::int64_t s = 0; s < w.steps; ++s) {
        const std::int8_t* b = group + s * 4 * kTileBytes;
        _tile_loadd(4, a_rows + s * kAmxStepBytes, lda);
        _tile_loadd(5, b, kAmxStepBytes);
        _tile_dpbusd(0, 4, 5);
        _tile_loadd(6, b + kTileBytes, kAmxStepBytes);
        _tile_dpbusd(1, 4, 6);
        _tile_loadd(5, b + 2 * kTileBytes, kAmxStepBytes);
        _tile_dpbusd(2, 4, 5);
        _tile_loadd(6, b + 3 * kTileBytes, kAmxStepBytes);
        _tile_dpbusd(3, 4, 6);
      }
      constexpr std::int64_t kSumsStride = kAmxGroupColumns * sizeof(std::int32_t);
      _tile_stored(0, sums, kSumsStride);
      _tile_stored(1, sums + 16, kSumsStride);
      _tile_stored(2, sums + 32, kSumsStride);
      _tile_stored(3, sums + 48, kSumsStride);
      compiler_barrier(sums);
      store_group(sums, std::min(kAmxTileRows, rows - row), g * kAmxGroupColumns, w.columns, e,
                  c + row * ldc, ldc);
      compiler_barrier(sums);
    }
  }
  _tile_release();
}

bool cpu_has_amx_int8() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return false;
  const bool tile = (edx >> 24) & 1u, int8 = (edx >> 25) & 1u;
  // The epilogue is AVX-512 (every AMX CPU has it; checked all the same).
  return tile && int8 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl");
}

}  // namespace

bool amx_int8_available() {
  static const bool available =
      cpu_has_amx_int8() &&
      syscall(SYS_arch_prctl, kArchRequestXcompPermission, kXfeatureTileData) == 0;
  return available;
}

AmxInt8Weights pack_amx_int8_weights(const PackedInt8Weights& weights) {
  AmxInt8Weights w;
  w.columns = weights.columns;
  w.depth = weights.depth;
  w.steps = (w.depth + kAmxStepBytes - 1) / kAmxStepBytes;
  w.groups = (w.columns + kAmxGroupColumns - 1) / kAmxGroupColumns;
  constexpr std::int64_t kTileBytes = kAmxTileRows * kAmxStepBytes;
  w.data =
      Tensor::zeros(DType::kI8, {std::max<std::int64_t>(1, w.groups * w.steps * 4 * kTileBytes)});
  std::int8_t* packed = w.data.data<std::int8_t>();
  const std::int8_t* rows = weights.rows.values.data();
  for (std::int64_t col = 0; col < w.columns; ++col) {
    const std::int64_t group = col / kAmxGroupColumns, tile = (col % kAmxGroupColumns) / 16,
                       lane = col % 16;
    for (std::int64_t k = 0; k < w.depth; ++k) {
      const std::int64_t step = k / kAmxStepBytes, quad = (k % kAmxStepBytes) / 4;
      // Tile row = quad, 4 bytes per column: the layout tdpbusd reads B in.
      packed[((group * w.steps + step) * 4 + tile) * kTileBytes + quad * kAmxStepBytes + lane * 4 +
             k % 4] = rows[col * w.depth + k];
    }
  }
  return w;
}

void int8_gemm_amx(const std::uint8_t* a, std::int64_t lda, std::int64_t rows,
                   const AmxInt8Weights& weights, const Int8Epilogue& epilogue,
                   std::int64_t group_begin, std::int64_t group_end, float* c, std::int64_t ldc) {
  gemm_amx(a, lda, rows, weights, epilogue, group_begin, group_end, c, ldc);
}

}  // namespace voxrt::backends::cpu::quantized
