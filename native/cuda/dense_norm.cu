// RMSNorm on the GPU: y = x * rsqrt(mean(x^2) + eps) * (w_offset + w), one block per row
// (a row is a token's hidden state, or one head of q/k for the per-head norms). The sum of
// squares is a block reduction (so its rounding order differs from the CPU's SIMD sum); the
// per-element arithmetic is rkv_dense_elem.h's, shared with the CPU tests.
#include "dense_launch.cuh"

namespace {

using namespace rkv_cuda_dense;

__global__ void rmsnorm_kernel(const float* __restrict__ x, const float* __restrict__ w, float* y, int64_t rows,
                               int32_t dim, float eps, float w_offset) {
  __shared__ float partial[kThreads / 32];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const float* xr = x + r * dim;
    float ss = 0.f;
    for (int32_t i = threadIdx.x; i < dim; i += blockDim.x) ss += xr[i] * xr[i];
    for (int off = 16; off > 0; off >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, off);
    if ((threadIdx.x & 31) == 0) partial[threadIdx.x >> 5] = ss;
    __syncthreads();
    float total = 0.f;
    for (int i = 0; i < kThreads / 32; i++) total += partial[i];
    const float inv = rkv::dense_elem::rms_inv(total, dim, eps);
    // y may alias x: every thread has read its x values into ss before the barrier above.
    for (int32_t i = threadIdx.x; i < dim; i += blockDim.x) rkv::dense_elem::rmsnorm_elem(x, w, y, r, dim, i, inv, w_offset);
    __syncthreads();  // partial[] is reused by the next row
  }
}

}  // namespace

extern "C" {

RKV_API int rkv_cuda_rmsnorm(const float* x, const float* w, float* y, int64_t rows, int32_t dim, float eps,
                             float w_offset, void* stream) {
  RKV_CHECK(rows >= 0, "rkv_cuda_rmsnorm: rows must not be negative, got %lld", (long long)rows);
  RKV_CHECK(dim > 0, "rkv_cuda_rmsnorm: dim must be positive, got %d", dim);
  RKV_CHECK(std::isfinite(eps) && eps >= 0, "rkv_cuda_rmsnorm: eps must be finite and >= 0, got %g", (double)eps);
  RKV_CHECK(std::isfinite(w_offset), "rkv_cuda_rmsnorm: w_offset must be finite, got %g", (double)w_offset);
  if (rows == 0) return RKV_OK;
  RKV_CHECK_PTR(x);
  RKV_CHECK_PTR(w);
  RKV_CHECK_PTR(y);
  int blocks = (int)(rows < 65535 * 8 ? rows : 65535 * 8);
  rmsnorm_kernel<<<blocks, kThreads, 0, as_stream(stream)>>>(x, w, y, rows, dim, eps, w_offset);
  RKV_CUDA_CHECK_LAUNCH();
  return RKV_OK;
}

}  // extern "C"
