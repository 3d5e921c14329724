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

// The start every benchmark program shares: 77 (skipped) without a device, 1 on a CUDA error,
// else 0 with *s a new stream and *copy_gbs the copy baseline, printed as "bench <copy_name>".
static int bench_start(const char* copy_name, cudaStream_t* s, double* copy_gbs) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("%s: no CUDA device, skipped\n", kBenchName);
    return 77;
  }
  CK(cudaStreamCreate(s));
  *copy_gbs = copy_bandwidth_gbs(*s, size_t{1} << 30);  // 1 GiB device-to-device
  if (*copy_gbs < 0) {
    std::fprintf(stderr, "%s: cannot allocate 2 GiB for the copy baseline\n", kBenchName);
    return 1;
  }
  std::printf("bench %s %.1f GB/s -\n", copy_name, *copy_gbs);
  return 0;
}
