// The inner product of the INT8 kernels: unsigned 8-bit activation rows times signed 8-bit
// weight panels on AVX-512 VNNI (vpdpbusd on 256-bit registers: 8 int32 lanes, each summing 4
// byte products). Weights are stored in panels of 8 output columns with the depth in quads,
// [quad][column][4 bytes]: one quad of one panel is 32 bytes, one register. The 8-column panel
// matches the recurrent kernels' unit blocks of 8 (recurrent_packing.h), so a block's gates are
// panels side by side; dense layers use the same panels. On this AMD EPYC (Zen 4) a 512-bit
// vpdpbusd is two 256-bit halves, so the narrower registers cost no throughput; AVX-512VL gives
// 32 of them, room for 24 accumulators. (Where AMX-INT8 exists the dense layers have amx_int8,
// int8_gemm_amx.h, with 16 times the multiply-adds per instruction.)
//
// The library is built for baseline x86-64: everything here carries VOXRT_VNNI and runs only
// after vnni_available() (int8_gemm.h) said yes.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#define VOXRT_VNNI __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")))

namespace voxrt::backends::cpu::quantized {

inline constexpr int kPanelColumns = 8;
inline constexpr int kQuadBytes = 4;
inline constexpr int kPanelQuadBytes = kPanelColumns * kQuadBytes;  // 32

// Where the weight panels are: panel p's quad q starts at data + p * panel_stride + q *
// quad_stride (bytes; both multiples of 32, data 32-byte aligned).
struct PanelLayout {
  const std::int8_t* data = nullptr;
  std::int64_t panel_stride = 0;
  std::int64_t quad_stride = 0;
  std::int64_t quads = 0;
};

// acc[m][p] += sum over quads q of a[m][4q..4q+4) . panel p's quad q, for M rows and P panels.
// a[m] points at a row of at least 4 * quads bytes.
template <int M, int P>
VOXRT_VNNI inline void int8_tile(const std::uint8_t* const* a, const PanelLayout& w,
                                 __m256i (&acc)[M][P]) {
#pragma GCC unroll 6
  for (int m = 0; m < M; ++m) {
#pragma GCC unroll 4
    for (int p = 0; p < P; ++p) acc[m][p] = _mm256_setzero_si256();
  }
  const std::int8_t* quad = w.data;
  for (std::int64_t q = 0; q < w.quads; ++q, quad += w.quad_stride) {
    __m256i weights[P];
#pragma GCC unroll 4
    for (int p = 0; p < P; ++p) {
      weights[p] = _mm256_load_si256(reinterpret_cast<const __m256i*>(quad + p * w.panel_stride));
    }
#pragma GCC unroll 6
    for (int m = 0; m < M; ++m) {
      std::int32_t four;
      std::memcpy(&four, a[m] + q * kQuadBytes, sizeof(four));
      const __m256i x = _mm256_set1_epi32(four);
#pragma GCC unroll 4
      for (int p = 0; p < P; ++p) acc[m][p] = _mm256_dpbusd_epi32(acc[m][p], x, weights[p]);
    }
  }
}

// The dense epilogue of one 8-column panel: fma(float(acc - zero_point_sums), scales, bias),
// with the scales (input scale x weight scale) and zero-point sums (input zero point x the
// column's weight sum) per column. bias may be null (0).
VOXRT_VNNI inline __m256 int8_dequantize(__m256i acc, const std::int32_t* zero_point_sums,
                                         const float* scales, const float* bias) {
  const __m256i corrected =
      _mm256_sub_epi32(acc, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(zero_point_sums)));
  return _mm256_fmadd_ps(_mm256_cvtepi32_ps(corrected), _mm256_loadu_ps(scales),
                         bias ? _mm256_loadu_ps(bias) : _mm256_setzero_ps());
}

}  // namespace voxrt::backends::cpu::quantized
