// Scalar arithmetic of the family-specific dense ops, shared by the CPU kernels and (through
// RKV_HD) CUDA device code, so every path computes the same function.
#pragma once

#include <cmath>

#if defined(__CUDACC__)
#define RKV_HD __host__ __device__ __forceinline__
#else
#define RKV_HD inline
#endif

namespace rkv {
namespace dense {

// sqrt(2/pi), the constant of the tanh approximation of GELU.
constexpr float kGeluTanhC = 0.7978845608028654f;

// GELU, tanh approximation (PyTorch gelu(approximate="tanh"), HF "gelu_pytorch_tanh").
RKV_HD float gelu_tanh(float x) {
  const float inner = kGeluTanhC * (x + 0.044715f * x * x * x);
  return 0.5f * x * (1.f + tanhf(inner));
}

RKV_HD float silu(float x) { return x / (1.f + expf(-x)); }

// Soft cap c*tanh(x/c) (Gemma's final_logit_softcapping); c > 0.
RKV_HD float soft_cap(float x, float cap) { return cap * tanhf(x / cap); }

// One RMSNorm output: x * inv_rms * (w_offset + w); w_offset 0 (x.w) or 1 (Gemma's x.(1+w)).
RKV_HD float rms_apply(float x, float inv_rms, float w, float w_offset) { return x * inv_rms * (w_offset + w); }

}  // namespace dense
}  // namespace rkv
