// Element-wise dense ops on the GPU: SiLU*mul and GELU(tanh)*mul (gated MLPs), bias add,
// residual add, soft cap and scale. Grid-stride loops around rkv_dense_elem.h's bodies.
#include "dense_launch.cuh"

namespace {

using namespace rkv_cuda_dense;
namespace de = rkv::dense_elem;

template <bool GELU>
__global__ void gated_kernel(const float* __restrict__ gate_up, float* __restrict__ out, int64_t total, int32_t inter) {
  RKV_GRID_STRIDE(idx, total) {
    if (GELU)
      de::gelu_tanh_mul_elem(gate_up, out, inter, idx);
    else
      de::silu_mul_elem(gate_up, out, inter, idx);
  }
}

__global__ void add_bias_kernel(float* y, const float* __restrict__ bias, int64_t total, int32_t n) {
  RKV_GRID_STRIDE(idx, total) de::add_bias_elem(y, bias, n, idx);
}
__global__ void add_kernel(float* y, const float* x, int64_t n) {
  RKV_GRID_STRIDE(idx, n) de::add_elem(y, x, idx);
}
__global__ void soft_cap_kernel(float* x, int64_t n, float cap) {
  RKV_GRID_STRIDE(idx, n) de::soft_cap_elem(x, cap, idx);
}
__global__ void scale_kernel(float* x, int64_t n, float s) {
  RKV_GRID_STRIDE(idx, n) de::scale_elem(x, s, idx);
}

int gated(const char* fn, bool gelu, const float* gate_up, float* out, int64_t rows, int32_t inter, void* stream) {
  RKV_CHECK(rows >= 0, "%s: rows must not be negative, got %lld", fn, (long long)rows);
  RKV_CHECK(inter > 0, "%s: inter must be positive, got %d", fn, inter);
  if (rows == 0) return RKV_OK;
  RKV_CHECK_PTR(gate_up);
  RKV_CHECK_PTR(out);
  const int64_t total = rows * inter;
  if (gelu)
    gated_kernel<true><<<blocks_for(total), kThreads, 0, as_stream(stream)>>>(gate_up, out, total, inter);
  else
    gated_kernel<false><<<blocks_for(total), kThreads, 0, as_stream(stream)>>>(gate_up, out, total, inter);
  RKV_CUDA_CHECK_LAUNCH();
  return RKV_OK;
}

}  // namespace

extern "C" {

RKV_API int rkv_cuda_silu_mul(const float* gate_up, float* out, int64_t rows, int32_t inter, void* stream) {
  return gated("rkv_cuda_silu_mul", false, gate_up, out, rows, inter, stream);
}

RKV_API int rkv_cuda_gelu_tanh_mul(const float* gate_up, float* out, int64_t rows, int32_t inter, void* stream) {
  return gated("rkv_cuda_gelu_tanh_mul", true, gate_up, out, rows, inter, stream);
}

RKV_API int rkv_cuda_add_bias(float* y, const float* bias, int64_t rows, int32_t n, void* stream) {
  RKV_CHECK(rows >= 0, "rkv_cuda_add_bias: rows must not be negative, got %lld", (long long)rows);
  RKV_CHECK(n > 0, "rkv_cuda_add_bias: n must be positive, got %d", n);
  if (rows == 0) return RKV_OK;
  RKV_CHECK_PTR(y);
  RKV_CHECK_PTR(bias);
  add_bias_kernel<<<blocks_for(rows * n), kThreads, 0, as_stream(stream)>>>(y, bias, rows * n, n);
  RKV_CUDA_CHECK_LAUNCH();
  return RKV_OK;
}

RKV_API int rkv_cuda_add_inplace(float* y, const float* x, int64_t n, void* stream) {
  RKV_CHECK(n >= 0, "rkv_cuda_add_inplace: n must not be negative, got %lld", (long long)n);
  if (n == 0) return RKV_OK;
  RKV_CHECK_PTR(y);
  RKV_CHECK_PTR(x);
  add_kernel<<<blocks_for(n), kThreads, 0, as_stream(stream)>>>(y, x, n);
  RKV_CUDA_CHECK_LAUNCH();
  return RKV_OK;
}

RKV_API int rkv_cuda_soft_cap(float* x, int64_t n, float cap, void* stream) {
  RKV_CHECK(n >= 0, "rkv_cuda_soft_cap: n must not be negative, got %lld", (long long)n);
  RKV_CHECK(std::isfinite(cap) && cap > 0, "rkv_cuda_soft_cap: cap must be positive and finite, got %g", (double)cap);
  if (n == 0) return RKV_OK;
  RKV_CHECK_PTR(x);
  soft_cap_kernel<<<blocks_for(n), kThreads, 0, as_stream(stream)>>>(x, n, cap);
  RKV_CUDA_CHECK_LAUNCH();
  return RKV_OK;
}

RKV_API int rkv_cuda_scale(float* x, int64_t n, float s, void* stream) {
  RKV_CHECK(n >= 0, "rkv_cuda_scale: n must not be negative, got %lld", (long long)n);
  RKV_CHECK(std::isfinite(s), "rkv_cuda_scale: s must be finite, got %g", (double)s);
  if (n == 0) return RKV_OK;
  RKV_CHECK_PTR(x);
  scale_kernel<<<blocks_for(n), kThreads, 0, as_stream(stream)>>>(x, n, s);
  RKV_CUDA_CHECK_LAUNCH();
  return RKV_OK;
}

}  // extern "C"
