// Online-softmax and attention-state helpers shared by the CPU and CUDA attention kernels
// (RKV_HD: compiled for host and device).
//
// Internally the kernels work in base 2: a logit x becomes x * log2(e), so every exponential is
// an exp2 (one instruction on GPUs, a short polynomial on CPUs). The public LSE is natural-log:
// lse = (m2 + log2(l)) * ln(2) where m2 is the running base-2 maximum and l the running sum of
// exp2(x2 - m2).
#pragma once

#include <math.h>
#include <stdint.h>

#include "rkv_common.h"

namespace rkv {

constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

// Logits in base 2 with the scale folded into q: q is multiplied by logit_q_scale(scale, cap)
// (scale * log2(e), or scale / cap when soft-capping; `scale` is sm_scale times any K
// dequantization factor), so that the raw product s = q.k becomes the base-2 logit
// logit_base2(s, cap): s itself, or cap * log2(e) * tanh(s). The CUDA kernels and the scalar
// CPU core call these; the vector CPU cores evaluate the same formula lane-wise.
RKV_HD float logit_q_scale(float scale, float soft_cap) { return scale * (soft_cap > 0.f ? 1.f / soft_cap : kLog2e); }
RKV_HD float logit_base2(float s, float soft_cap) { return soft_cap > 0.f ? soft_cap * kLog2e * tanhf(s) : s; }

// Running state of one (query, head) row: base-2 max and sum of exp2(x - m).
struct SoftmaxState {
  float m;  // -INFINITY while nothing was seen
  float l;
};

RKV_HD SoftmaxState softmax_init() { return SoftmaxState{-INFINITY, 0.f}; }

// Scale factor for values accumulated under max `m_old` when the max becomes `m_new`
// (m_new >= m_old, m_new finite). exp2(-inf) = 0 covers the empty initial state.
RKV_HD float softmax_rescale(float m_old, float m_new) { return exp2f(m_old - m_new); }

// Natural-log LSE of a finished state; -inf for an empty one (l == 0). A NaN sum (a NaN
// in K) stays NaN rather than being mistaken for an empty row.
RKV_HD float softmax_lse(SoftmaxState s) {
  if (s.l == 0.f) return -INFINITY;
  return (s.m + log2f(s.l)) * kLn2;
}

// Weights of two partial states with natural-log LSEs sa, sb (FlashInfer merge_state):
// out = wa * va + wb * vb, lse_out = max + log(e^(sa-max) + e^(sb-max)).
// Both -inf gives wa = wb = 0 and lse_out = -inf (an empty result stays empty, no NaN).
struct MergeWeights {
  float wa, wb, lse;
};

RKV_HD MergeWeights merge_weights(float sa, float sb) {
  MergeWeights w;
  float mx = sa > sb ? sa : sb;
  if (mx == -INFINITY) {
    w.wa = 0.f;
    w.wb = 0.f;
    w.lse = -INFINITY;
    return w;
  }
  float ea = expf(sa - mx);  // exp(-inf) = 0
  float eb = expf(sb - mx);
  float sum = ea + eb;
  w.wa = ea / sum;
  w.wb = eb / sum;
  w.lse = mx + logf(sum);
  return w;
}

}  // namespace rkv
