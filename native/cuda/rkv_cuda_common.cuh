// libradixkv_cuda helpers on top of rkv_common.h (whose error slot and dtype facts the CUDA
// library shares with the CPU one: rkv_error.cpp is compiled into both): argument-check
// macros and a CUDA-call check that turns cudaError_t into RKV_ERR_CUDA.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "rkv_common.h"

namespace rkv_cuda {

#ifdef __CUDACC__
// Records a device-side input error into a caller's error record (radixkv.h: code, row, value,
// bound); the first writer wins. rec may be NULL (errors are then only skipped).
__device__ inline void record_error(int64_t* rec, int64_t code, int64_t row, int64_t value, int64_t bound) {
  if (rec == nullptr) return;
  static_assert(sizeof(int64_t) == sizeof(unsigned long long), "record width");
  if (atomicCAS(reinterpret_cast<unsigned long long*>(rec), 0ull, (unsigned long long)code) == 0ull) {
    rec[1] = row;
    rec[2] = value;
    rec[3] = bound;
  }
}
#endif

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
