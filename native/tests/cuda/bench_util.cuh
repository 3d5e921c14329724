// Shared by the GPU benchmark programs (cuda_bench, gemv_bench): the CUDA error check, event
// timing and the device copy bandwidth every ratio is taken against. The including file
// defines kBenchName (its program name, for messages).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdio>

#define CK(x)                                                                       \
  do {                                                                              \
    cudaError_t e_ = (x);                                                           \
    if (e_ != cudaSuccess) {                                                        \
      std::fprintf(stderr, "%s: %s: %s\n", kBenchName, #x, cudaGetErrorString(e_)); \
      return 1;                                                                     \
    }                                                                               \
  } while (0)

// Warm-up once (f(0)), then `iters` runs f(0..iters-1) between two events; ms per run.
template <typename F>
static float time_ms(cudaStream_t s, int iters, F f) {
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  f(0);
  cudaEventRecord(a, s);
  for (int i = 0; i < iters; i++) f(i);
  cudaEventRecord(b, s);
  cudaEventSynchronize(b);
  float ms = 0;
  cudaEventElapsedTime(&ms, a, b);
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return ms / iters;
}

// Device-to-device copy of `bytes` (1 GiB: far past the L2), read + written bytes per second
// in GB/s, as CUDA's bandwidthTest counts; a negative value when allocation fails.
static double copy_bandwidth_gbs(cudaStream_t s, size_t bytes) {
  void *a = nullptr, *b = nullptr;
  if (cudaMalloc(&a, bytes) != cudaSuccess || cudaMalloc(&b, bytes) != cudaSuccess ||
      cudaMemset(a, 1, bytes) != cudaSuccess) {
    cudaFree(a);
    cudaFree(b);
    return -1;
  }
  float ms = time_ms(s, 10, [&](int) { cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, s); });
  cudaFree(a);
  cudaFree(b);
  return 2.0 * bytes / (ms * 1e6);
}
