// FP8 quantize / dequantize on the GPU, with exactly the arithmetic of the CPU kernels:
// the RKV_HD helpers of rkv_dtype.h (bit-exact with cuda_fp8.h) and the scale rule of
// rkv_kv.h (stored = x / scale, real = stored * scale; nvcc's '/' is IEEE-rounded unless
// -use_fast_math, which this library never uses).
#include <cmath>

#include "rkv_cuda_common.cuh"
#include "rkv_kv.h"

namespace {

constexpr int kThreads = 256;

int blocks_for(int64_t n) {
  int64_t b = (n + kThreads - 1) / kThreads;
  return (int)(b < 65535 * 8 ? b : 65535 * 8);  // grid-stride loops cover the rest
}

template <int FMT>
__global__ void quantize_kernel(const float* __restrict__ src, uint8_t* __restrict__ dst, int64_t n, float scale) {
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    float x = rkv::apply_scale(src[i], rkv::kScaleDiv, scale);
    dst[i] = FMT == RKV_DTYPE_FP8_E4M3 ? rkv::float_to_fp8_e4m3(x) : rkv::float_to_fp8_e5m2(x);
  }
}

template <int FMT>
__global__ void dequantize_kernel(const uint8_t* __restrict__ src, float* __restrict__ dst, int64_t n, float scale) {
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    float x = FMT == RKV_DTYPE_FP8_E4M3 ? rkv::fp8_e4m3_to_float(src[i]) : rkv::fp8_e5m2_to_float(src[i]);
    dst[i] = rkv::apply_scale(x, rkv::kScaleMul, scale);
  }
}

int check_fp8_args(const char* fn, const void* src, const void* dst, int64_t n, int32_t fp8_dtype, float scale) {
  RKV_CUDA_CHECK_ARG(fp8_dtype == RKV_DTYPE_FP8_E4M3 || fp8_dtype == RKV_DTYPE_FP8_E5M2,
                     "%s: fp8_dtype must be %d (e4m3) or %d (e5m2), got %d", fn, RKV_DTYPE_FP8_E4M3, RKV_DTYPE_FP8_E5M2,
                     fp8_dtype);
  RKV_CUDA_CHECK_ARG(n >= 0, "%s: n must not be negative, got %lld", fn, (long long)n);
  RKV_CUDA_CHECK_ARG(scale > 0.0f && !std::isinf(scale), "%s: scale must be positive and finite, got %g", fn,
                     (double)scale);
  if (n > 0) {
    RKV_CUDA_CHECK_ARG(src != nullptr, "%s: src must not be NULL", fn);
    RKV_CUDA_CHECK_ARG(dst != nullptr, "%s: dst must not be NULL", fn);
  }
  return RKV_OK;
}

}  // namespace

extern "C" {

RKV_API int rkv_cuda_fp8_quantize(const float* src, uint8_t* dst, int64_t n, int32_t fp8_dtype, float scale,
                                  void* stream) {
  if (int e = check_fp8_args("rkv_cuda_fp8_quantize", src, dst, n, fp8_dtype, scale)) return e;
  if (n == 0) return RKV_OK;
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  if (fp8_dtype == RKV_DTYPE_FP8_E4M3)
    quantize_kernel<RKV_DTYPE_FP8_E4M3><<<blocks_for(n), kThreads, 0, s>>>(src, dst, n, scale);
  else
    quantize_kernel<RKV_DTYPE_FP8_E5M2><<<blocks_for(n), kThreads, 0, s>>>(src, dst, n, scale);
  RKV_CUDA_CHECK_LAUNCH();
  return RKV_OK;
}

RKV_API int rkv_cuda_fp8_dequantize(const uint8_t* src, float* dst, int64_t n, int32_t fp8_dtype, float scale,
                                    void* stream) {
  if (int e = check_fp8_args("rkv_cuda_fp8_dequantize", src, dst, n, fp8_dtype, scale)) return e;
  if (n == 0) return RKV_OK;
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  if (fp8_dtype == RKV_DTYPE_FP8_E4M3)
    dequantize_kernel<RKV_DTYPE_FP8_E4M3><<<blocks_for(n), kThreads, 0, s>>>(src, dst, n, scale);
  else
    dequantize_kernel<RKV_DTYPE_FP8_E5M2><<<blocks_for(n), kThreads, 0, s>>>(src, dst, n, scale);
  RKV_CUDA_CHECK_LAUNCH();
  return RKV_OK;
}

}  // extern "C"
