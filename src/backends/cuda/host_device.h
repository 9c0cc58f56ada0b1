// VOXRT_HOST_DEVICE: a function both the CUDA kernels (nvcc) and host code or CPU-only tests
// compile, for the plain headers whose index maps the two share (conv_direct.h,
// conv_width_fold.h).
#pragma once

#ifndef VOXRT_HOST_DEVICE
#if defined(__CUDACC__)
#define VOXRT_HOST_DEVICE __host__ __device__
#else
#define VOXRT_HOST_DEVICE
#endif
#endif
