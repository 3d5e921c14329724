// Error handling for libradixkv_cuda: its own thread-local message (rkv_cuda_last_error),
// argument-check macros and a CUDA-call check that turns cudaError_t into RKV_ERR_CUDA.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "rkv_common.h"

namespace rkv_cuda {
int set_error(int code, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

inline int dtype_size(int32_t d) {
  switch (d) {
    case RKV_DTYPE_F32: return 4;
    case RKV_DTYPE_F16:
    case RKV_DTYPE_BF16: return 2;
    case RKV_DTYPE_FP8_E4M3:
    case RKV_DTYPE_FP8_E5M2: return 1;
    default: return -1;
  }
}
// Stream all rkv_cuda_* kernels are launched on (the legacy default stream unless set).
cudaStream_t current_stream();
}  // namespace rkv_cuda

#define RKV_CUDA_CHECK_ARG(cond, ...)                                                   \
  do {                                                                                  \
    if (!(cond)) return ::rkv_cuda::set_error(RKV_ERR_INVALID_ARGUMENT, __VA_ARGS__);   \
  } while (0)

#define RKV_CUDA_TRY(expr)                                                              \
  do {                                                                                  \
    cudaError_t rkv_err_ = (expr);                                                      \
    if (rkv_err_ != cudaSuccess)                                                        \
      return ::rkv_cuda::set_error(RKV_ERR_CUDA, "%s: %s", #expr, cudaGetErrorString(rkv_err_)); \
  } while (0)

// After a kernel launch: launch-configuration errors are reported synchronously.
#define RKV_CUDA_CHECK_LAUNCH() RKV_CUDA_TRY(cudaGetLastError())
