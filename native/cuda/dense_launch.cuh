// Launch helpers of the dense kernels (dense_*.cu): grid-stride element loops on a caller's
// stream, and the argument checks they share. Device pointers are never dereferenced on the
// host; nothing here synchronizes.
#pragma once

#include <cmath>

#include "rkv_cuda_common.cuh"
#include "rkv_dense_elem.h"

namespace rkv_cuda_dense {

constexpr int kThreads = 256;

inline int blocks_for(int64_t n) {
  int64_t b = (n + kThreads - 1) / kThreads;
  return (int)(b < 65535 * 8 ? b : 65535 * 8);  // grid-stride loops cover the rest
}

#define RKV_GRID_STRIDE(i, n) \
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (int64_t)gridDim.x * blockDim.x)

inline cudaStream_t as_stream(void* s) { return static_cast<cudaStream_t>(s); }

}  // namespace rkv_cuda_dense
