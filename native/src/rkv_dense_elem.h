// Per-element bodies of the CUDA dense kernels (native/cuda/dense_*.cu), written once as
// RKV_HD functions so that the native tests run exactly the device arithmetic on the CPU
// (dense_elem_test.cpp compares them with the CPU kernels of dense*.cpp). Each CUDA kernel is
// a grid-stride loop (or a block reduction) around these; the scalar math itself is
// rkv_dense_math.h's, shared with the CPU kernels.
#pragma once

#include <stdint.h>

#include "rkv_common.h"
#include "rkv_dense_math.h"
#include "rkv_dtype.h"

namespace rkv {
namespace dense_elem {

// ---- RMSNorm (x.w and Gemma's x.(1+w); per-head q/k norm is rows = tokens * heads) ----

// 1 / sqrt(mean(x^2) + eps) from the row's sum of squares (the CPU kernel's formula).
RKV_HD float rms_inv(float sum_sq, int32_t dim, float eps) { return 1.f / sqrtf(sum_sq / (float)dim + eps); }

RKV_HD void rmsnorm_elem(const float* x, const float* w, float* y, int64_t row, int32_t dim, int32_t i, float inv,
                         float w_offset) {
  const int64_t j = row * dim + i;
  y[j] = dense::rms_apply(x[j], inv, w[i], w_offset);
}

// ---- RoPE from an inv_freq table (rotate_half layout) ----

// cos / sin of position * inv_freq, in double (as the CPU kernel), rounded to float.
RKV_HD void rope_cos_sin(int32_t position, double inv_freq, float* c, float* s) {
  const double a = (double)position * inv_freq;
  *c = (float)cos(a);
  *s = (float)sin(a);
}

// Rotates pair (i, i + head_dim/2) of vector `vec` of base ([vectors, head_dim]).
RKV_HD void rope_pair(float* base, int64_t vec, int32_t head_dim, int32_t i, float c, float s) {
  float* v = base + vec * head_dim;
  const int32_t half = head_dim / 2;
  const float x1 = v[i], x2 = v[i + half];
  v[i] = x1 * c - x2 * s;
  v[i + half] = x2 * c + x1 * s;
}

// ---- gated activations: out[r, i] = act(gate_up[r, i]) * gate_up[r, inter + i] ----

RKV_HD void silu_mul_elem(const float* gate_up, float* out, int32_t inter, int64_t idx) {
  const int64_t r = idx / inter, i = idx % inter;
  const float* g = gate_up + r * 2 * (int64_t)inter;
  out[idx] = dense::silu(g[i]) * g[inter + i];
}

RKV_HD void gelu_tanh_mul_elem(const float* gate_up, float* out, int32_t inter, int64_t idx) {
  const int64_t r = idx / inter, i = idx % inter;
  const float* g = gate_up + r * 2 * (int64_t)inter;
  out[idx] = dense::gelu_tanh(g[i]) * g[inter + i];
}

// ---- element-wise ----

RKV_HD void add_bias_elem(float* y, const float* bias, int32_t n, int64_t idx) { y[idx] += bias[idx % n]; }
RKV_HD void add_elem(float* y, const float* x, int64_t idx) { y[idx] += x[idx]; }
RKV_HD void soft_cap_elem(float* x, float cap, int64_t idx) { x[idx] = dense::soft_cap(x[idx], cap); }
RKV_HD void scale_elem(float* x, float s, int64_t idx) { x[idx] *= s; }

// ---- embedding gather ----

// out[idx] for row idx / dim. Returns false (and writes 0) for an id outside [0, vocab): the
// device kernel reports it through its error flag instead of reading out of bounds.
RKV_HD bool embedding_elem(const int32_t* ids, const void* table, int32_t dtype, int32_t vocab, int32_t dim,
                           float* out, int64_t idx) {
  const int64_t t = idx / dim, j = idx % dim;
  const int32_t id = ids[t];
  if (id < 0 || id >= vocab) {
    out[idx] = 0.f;
    return false;
  }
  const int64_t at = (int64_t)id * dim + j;
  out[idx] = dtype == RKV_DTYPE_F32 ? static_cast<const float*>(table)[at]
                                    : bf16_to_float(static_cast<const uint16_t*>(table)[at]);
  return true;
}

// ---- argmax: first maximum, NaN never wins (all NaN: index 0), in any reduction order ----

// Whether candidate (v, i) replaces the current best (bv, bi). Associative and commutative
// over (value, index) pairs, so a block reduction gives the CPU's sequential answer.
RKV_HD bool argmax_takes(float v, int32_t i, float bv, int32_t bi) {
  const bool v_nan = v != v, b_nan = bv != bv;
  if (v_nan != b_nan) return b_nan;      // a number beats NaN
  if (v_nan) return i < bi;              // both NaN: the first index
  return v > bv || (v == bv && i < bi);  // larger, or equal and earlier
}

}  // namespace dense_elem
}  // namespace rkv
