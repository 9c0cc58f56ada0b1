// Tensor-core building blocks shared by the kernels that use mma.sync (the K-split recurrent
// kernel, the attention kernels): two floats packed into one 32-bit register of FP16/BF16, the
// m16n8k16 product with float accumulation, and ldmatrix loads of 8x8 16-bit tiles from shared
// memory. Fragment layout of m16n8k16 (lane = 4 g + t): A holds rows g and g + 8 at columns
// 2t, 2t + 1 (regs 0, 1) and 2t + 8, 2t + 9 (regs 2, 3); B holds k rows 2t, 2t + 1 (reg 0) and
// 2t + 8, 2t + 9 (reg 1) of column g; C holds rows g (0, 1) and g + 8 (2, 3) at columns 2t, 2t + 1.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <type_traits>

namespace voxrt::backends::cuda::ops {

template <typename W>
__device__ __forceinline__ unsigned pack2(float lo, float hi) {
  if constexpr (std::is_same_v<W, __half>) {
    const __half2 v = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<const unsigned*>(&v);
  } else {
    const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<const unsigned*>(&v);
  }
}

// c += a b on tensor cores (m16n8k16, W operands, float accumulation).
template <typename W>
__device__ __forceinline__ void mma16816(float (&c)[4], const unsigned (&a)[4],
                                         const unsigned (&b)[2]) {
  if constexpr (std::is_same_v<W, __half>) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
}

// Four 8x8 tiles of 16-bit elements from shared memory; lane l gives the address of row l % 8 of
// tile l / 8 (16-byte aligned) and receives, of tile k, register k: row l / 4, columns 2 (l % 4)
// and 2 (l % 4) + 1 (the B fragment of a row-major [n][k] tile, or A's of an [m][k] one).
__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], const void* row) {
  const auto address = static_cast<unsigned>(__cvta_generic_to_shared(row));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(address));
}
// The same, transposed: lane receives, of tile k, column l / 4 at rows 2 (l % 4) and 2 (l % 4) + 1
// (the B fragment of a row-major [k][n] tile).
__device__ __forceinline__ void ldmatrix_x4_trans(unsigned (&r)[4], const void* row) {
  const auto address = static_cast<unsigned>(__cvta_generic_to_shared(row));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(address));
}

}  // namespace voxrt::backends::cuda::ops
