// Shared by the GPU test programs: the stream their kernels run on (NULL, the legacy default
// stream, unless a test creates one) and host <-> device copies of test vectors.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdlib>
#include <vector>

inline cudaStream_t g_stream = nullptr;

// Device copy of h, starting `offset_elems` elements into a fresh allocation (an offset view
// when non-zero), with 16 bytes of slack past the end; returns the allocation's start.
template <typename T>
static T* to_dev(const std::vector<T>& h, size_t offset_elems = 0) {
  T* d = nullptr;
  if (cudaMalloc(&d, (h.size() + offset_elems) * sizeof(T) + 16) != cudaSuccess) std::abort();
  cudaMemcpy(d + offset_elems, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice);
  return d;
}

// n elements at d, after the work queued on g_stream.
template <typename T>
static std::vector<T> to_host(const T* d, size_t n) {
  cudaStreamSynchronize(g_stream);
  std::vector<T> h(n);
  cudaMemcpy(h.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost);
  return h;
}
