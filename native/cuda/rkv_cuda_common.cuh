// libradixkv_cuda helpers on top of rkv_common.h (whose error slot and dtype facts the CUDA
// library shares with the CPU one: rkv_error.cpp is compiled into both): argument-check
// macros and a CUDA-call check that turns cudaError_t into RKV_ERR_CUDA.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "rkv_common.h"

namespace rkv_cuda {
// Stream all rkv_cuda_* kernels are launched on (the legacy default stream unless set).
cudaStream_t current_stream();
}  // namespace rkv_cuda

#define RKV_CUDA_CHECK_ARG(cond, ...) RKV_CHECK(cond, __VA_ARGS__)

#define RKV_CUDA_TRY(expr)                                                              \
  do {                                                                                  \
    cudaError_t rkv_err_ = (expr);                                                      \
    if (rkv_err_ != cudaSuccess)                                                        \
      return ::rkv::set_error(RKV_ERR_CUDA, "%s: %s", #expr, cudaGetErrorString(rkv_err_)); \
  } while (0)

// After a kernel launch: launch-configuration errors are reported synchronously.
#define RKV_CUDA_CHECK_LAUNCH() RKV_CUDA_TRY(cudaGetLastError())
