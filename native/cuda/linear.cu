// GEMM on the GPU through cuBLAS (loaded at run time, cublas_loader.h):
// y[m, n] (+)= x[m, k] . w[n, k]^T, row-major, f32 activations and output.
//   f32 weights   cublasGemmEx f32 x f32 -> f32, CUBLAS_COMPUTE_32F (no TF32: the CPU path is
//                 f32 too, so the two backends agree to f32 rounding).
//   bf16 weights  the activations are rounded to bf16 (RNE, rkv_dtype.h's float_to_bf16: the
//                 CPU's bf16 matmul does the same) into a stream-ordered scratch buffer, then
//                 cublasGemmEx bf16 x bf16 -> f32 with f32 accumulation.
// Row-major y = x . w^T is column-major y^T = (w as k x n)^T . (x as k x m): transa = T.
// Decode batches (m <= rkv_gemv::kGemvMaxRows) skip cuBLAS: gemv.cu's memory-bound kernel, f32
// or bf16 weights, x not rounded (as the CPU's small-m kernel). Larger m keeps the per-call
// stream-ordered scratch for the rounded x (cudaMallocAsync from the pool: a couple of
// microseconds against a prefill GEMM's milliseconds; a cached buffer would need an event per
// stream to be safe against a destroyed-and-recreated stream handle).
#include <cmath>

#include "cublas_loader.h"
#include "gemv_math.h"
#include "rkv_cuda_common.cuh"
#include "rkv_dtype.h"

namespace {

constexpr int kThreads = 256;

__global__ void round_to_bf16_kernel(const float* __restrict__ x, uint16_t* __restrict__ out, int64_t n) {
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    out[i] = rkv::float_to_bf16(x[i]);
}

// One cuBLAS handle per calling thread (handles must not be used by two threads at once),
// created on first use; its stream is set on every call.
struct ThreadHandle {
  rkv_cublas::Handle h = nullptr;
  const rkv_cublas::Api* api = nullptr;
  ~ThreadHandle() {
    if (h && api) api->destroy(h);
  }
};

int handle_for(const rkv_cublas::Api* api, cudaStream_t stream, rkv_cublas::Handle* out) {
  thread_local ThreadHandle th;
  if (!th.h) {
    rkv_cublas::Status s = api->create(&th.h);
    if (s != rkv_cublas::kStatusSuccess) {
      th.h = nullptr;
      return rkv::set_error(RKV_ERR_CUDA, "cublasCreate_v2 (%s): %s", api->library, rkv_cublas::status_name(s));
    }
    th.api = api;
  }
  rkv_cublas::Status s = api->set_stream(th.h, stream);
  if (s != rkv_cublas::kStatusSuccess)
    return rkv::set_error(RKV_ERR_CUDA, "cublasSetStream_v2: %s", rkv_cublas::status_name(s));
  *out = th.h;
  return RKV_OK;
}

constexpr int64_t kIntMax = 2147483647;

}  // namespace

extern "C" {

RKV_API int rkv_cuda_blas_available(void) {
  return rkv_cublas::api() ? RKV_OK : RKV_ERR_UNSUPPORTED;
}

RKV_API int rkv_cuda_linear(const float* x, const void* w, int32_t w_dtype, float* y, int64_t m, int64_t n,
                            int64_t k, int32_t accumulate, void* stream) {
  RKV_CUDA_CHECK_ARG(w_dtype == RKV_DTYPE_F32 || w_dtype == RKV_DTYPE_BF16,
                     "rkv_cuda_linear: w_dtype must be f32 (%d) or bf16 (%d), got %d", RKV_DTYPE_F32, RKV_DTYPE_BF16,
                     w_dtype);
  RKV_CUDA_CHECK_ARG(m >= 0 && n > 0 && k > 0, "rkv_cuda_linear: need m >= 0, n > 0, k > 0, got m=%lld n=%lld k=%lld",
                     (long long)m, (long long)n, (long long)k);
  // cuBLAS's dims and leading dimensions are int.
  RKV_CUDA_CHECK_ARG(m <= kIntMax && n <= kIntMax && k <= kIntMax,
                     "rkv_cuda_linear: m=%lld n=%lld k=%lld exceed cuBLAS's int range", (long long)m, (long long)n,
                     (long long)k);
  if (m == 0) return RKV_OK;
  RKV_CHECK_PTR(x);
  RKV_CHECK_PTR(w);
  RKV_CHECK_PTR(y);
  if (m <= rkv_gemv::kGemvMaxRows) return rkv_gemv::launch(x, w, w_dtype, y, m, n, k, accumulate != 0, stream);
  const rkv_cublas::Api* api = rkv_cublas::api();
  if (!api) return RKV_ERR_UNSUPPORTED;  // message set by the loader
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  rkv_cublas::Handle h;
  if (int e = handle_for(api, s, &h)) return e;
  const float alpha = 1.f, beta = accumulate ? 1.f : 0.f;
  const void* b = x;
  int ab_type = rkv_cublas::kDataF32;
  void* scratch = nullptr;
  if (w_dtype == RKV_DTYPE_BF16) {
    ab_type = rkv_cublas::kDataBf16;
    // Stream-ordered allocation: no device-wide synchronization, reused from the pool.
    RKV_CUDA_TRY(cudaMallocAsync(&scratch, (size_t)(m * k) * sizeof(uint16_t), s));
    int64_t blocks = (m * k + kThreads - 1) / kThreads;
    round_to_bf16_kernel<<<(int)(blocks < 65535 * 8 ? blocks : 65535 * 8), kThreads, 0, s>>>(
        x, static_cast<uint16_t*>(scratch), m * k);
    cudaError_t le = cudaGetLastError();
    if (le != cudaSuccess) {
      cudaFreeAsync(scratch, s);
      return rkv::set_error(RKV_ERR_CUDA, "rkv_cuda_linear: bf16 rounding launch: %s", cudaGetErrorString(le));
    }
    b = scratch;
  }
  rkv_cublas::Status st = api->gemm_ex(h, rkv_cublas::kOpT, rkv_cublas::kOpN, (int)n, (int)m, (int)k, &alpha, w,
                                       ab_type, (int)k, b, ab_type, (int)k, &beta, y, rkv_cublas::kDataF32, (int)n,
                                       rkv_cublas::kComputeF32, rkv_cublas::kGemmDefault);
  if (scratch) RKV_CUDA_TRY(cudaFreeAsync(scratch, s));
  if (st != rkv_cublas::kStatusSuccess)
    return rkv::set_error(RKV_ERR_CUDA, "rkv_cuda_linear: cublasGemmEx(m=%lld n=%lld k=%lld %s): %s", (long long)m,
                          (long long)n, (long long)k, rkv::dtype_name(w_dtype), rkv_cublas::status_name(st));
  return RKV_OK;
}

}  // extern "C"
