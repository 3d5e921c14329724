// Scalar arithmetic of the family-specific dense ops, shared by the CPU kernels and (through
// RKV_HD) CUDA device code, so every path computes the same function.
#pragma once

#include <cmath>
#include <cstdint>

#include "rkv_dtype.h"

#if defined(__CUDACC__)
#define RKV_HD __host__ __device__ __forceinline__
#else
#define RKV_HD inline
#endif

namespace rkv {
namespace dense {

// sqrt(2/pi), the constant of the tanh approximation of GELU.
constexpr float kGeluTanhC = 0.7978845608028654f;

// e^x without a libm call (libm's expf was 3-4% of a 2048-token prefill, called once per value
// by SiLU). n = round(x log2 e) by the 1.5 * 2^23 rounding constant, r = x - n ln 2 in two steps
// (Cody-Waite), Cephes' degree-6 expf polynomial on r, and 2^n put into the exponent bits. Every
// multiply-add is an explicit fmaf so that dense.cpp's vector form (exp_approx8) gives the same
// bits. Within 2 ulp of e^x (dense_test checks it against double); +inf above 88.376 (where 2^n
// would overflow; e^x is within 1.42x of FLT_MAX there), 0 below -87.3365 (no subnormal inputs to
// the scaling); NaN stays NaN.
constexpr float kExpHi = 88.376f, kExpLo = -87.3365f;
constexpr float kExpRound = 12582912.f;  // 1.5 * 2^23: adding it rounds to an integer
constexpr int32_t kExpRoundBits = 0x4B400000;
constexpr float kExpLog2e = 1.44269504088896341f;
constexpr float kExpLn2Hi = 0.693359375f, kExpLn2Lo = -2.12194440e-4f;  // ln 2 = hi + lo, n * hi exact
// Cephes' coefficients, highest degree first (scalars: CUDA device code cannot index a host array)
constexpr float kExpP0 = 1.9875691500e-4f, kExpP1 = 1.3981999507e-3f, kExpP2 = 8.3334519073e-3f,
                kExpP3 = 4.1665795894e-2f, kExpP4 = 1.6666665459e-1f, kExpP5 = 5.0000001201e-1f;

RKV_HD float exp_approx(float x) {
  const bool over = x > kExpHi, under = x < kExpLo;  // NaN fails both and stays
  float xc = under ? kExpLo : x;
  xc = over ? kExpHi : xc;
  const float t = fmaf(xc, kExpLog2e, kExpRound);
  const float n = t - kExpRound;
  float r = fmaf(-n, kExpLn2Hi, xc);
  r = fmaf(-n, kExpLn2Lo, r);
  const float z = r * r;
  float p = fmaf(kExpP0, r, kExpP1);
  p = fmaf(p, r, kExpP2);
  p = fmaf(p, r, kExpP3);
  p = fmaf(p, r, kExpP4);
  p = fmaf(p, r, kExpP5);
  p = fmaf(p, z, r) + 1.f;
  const int32_t eb = (static_cast<int32_t>(f32_bits(t)) - kExpRoundBits + 127) * (1 << 23);  // n + 127: exponent
  float e = p * bits_f32(static_cast<uint32_t>(eb));
  e = under ? 0.f : e;
  return over ? INFINITY : e;
}

RKV_HD float silu(float x) { return x / (1.f + exp_approx(-x)); }

// GELU, tanh approximation (PyTorch gelu(approximate="tanh"), HF "gelu_pytorch_tanh"):
// 0.5 x (1 + tanh u) with u = sqrt(2/pi) (x + 0.044715 x^3), computed as x / (1 + e^(-2u)) (the
// same function: 0.5 (1 + tanh u) = sigmoid(2u)), so it shares SiLU's exponential and needs no
// tanhf call. The inner polynomial's multiply-add is an explicit fmaf, as dense.cpp's vector form.
RKV_HD float gelu_tanh_arg(float x) { return -2.f * (kGeluTanhC * fmaf(0.044715f * x * x, x, x)); }
RKV_HD float gelu_tanh(float x) { return x / (1.f + exp_approx(gelu_tanh_arg(x))); }

// Index of the first maximum of l[0, n); NaNs never win (every comparison with NaN is false)
// unless every value is NaN (then 0). The rule of rkv_argmax and rkv_sample's greedy rows (host
// code), which run it vectorized (rkv_argmax.h's argmax_row).
inline int32_t first_argmax(const float* l, int32_t n) {
  int32_t best = 0;
  float bv = l[0];
  for (int32_t i = 1; i < n; i++) {
    if (l[i] > bv || (bv != bv && l[i] == l[i])) {
      bv = l[i];
      best = i;
    }
  }
  return best;
}

// Soft cap c*tanh(x/c) (Gemma's final_logit_softcapping); c > 0.
RKV_HD float soft_cap(float x, float cap) { return cap * tanhf(x / cap); }

// One RMSNorm output: x * inv_rms * (w_offset + w); w_offset 0 (x.w) or 1 (Gemma's x.(1+w)).
RKV_HD float rms_apply(float x, float inv_rms, float w, float w_offset) { return x * inv_rms * (w_offset + w); }

}  // namespace dense
}  // namespace rkv
