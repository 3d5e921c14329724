// The AVX-512 forms of rkv_sample's row passes (sampling_rows.h), compiled per function with
// target attributes and chosen at run time (rkv_isa.h), so a portable x86-64-v3 build uses them
// where the CPU has AVX-512. Each gives the bits of its portable form (sampling.cpp,
// sampling_walk.h), so a row draws the same token on every path. The exponent masses of top-p
// take 8 exponents a pass (one compare and one masked add each, no scatter): 16 leave GCC too few
// registers for their indices.
// Measured: docs/measurements/kernel-constants.md#sampling-row-passes-on-avx-512
#include <algorithm>
#include <cmath>
#include <cstdint>

#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
// GCC 12's AVX-512 headers build many intrinsics on a self-initialized _mm512_undefined_*
// operand, which -W(maybe-)uninitialized reports once inlined (GCC bug 105593, fixed in 13).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

#include "rkv_dense_math.h"
#include "rkv_exp_avx512.h"
#include "sampling_rows.h"

#if defined(__x86_64__)
#include <immintrin.h>

#define RKV_AVX512 RKV_EXP_AVX512_TARGET
#define RKV_AVX512_INLINE RKV_AVX512 __attribute__((always_inline)) inline

namespace rkv {
namespace sampling {
namespace {

// One step of exponent_masses_avx512: each token's 24-bit mantissa into the accumulator of its
// exponent field (top - field = the index; 0 and fields outside the window match none).
RKV_AVX512_INLINE void add_by_exponent(__m512i b, __m512i top, __m512i* acc, __mmask16& above) {
  const __m512i j = _mm512_sub_epi32(top, _mm512_srli_epi32(b, 23));
  const __m512i m = _mm512_ternarylogic_epi32(b, _mm512_set1_epi32(0x7FFFFF), _mm512_set1_epi32(0x800000), 0xEA);
  above |= _mm512_movepi32_mask(j);  // exponent field > top
  for (int k = 0; k < kExponentsAPass; k++)
    acc[k] = _mm512_mask_add_epi32(acc[k], _mm512_cmpeq_epi32_mask(j, _mm512_set1_epi32(k)), acc[k], m);
}

}  // namespace

RKV_AVX512 double probabilities_avx512(const float* l, int32_t vocab, float max, float inv_t, float* p, double* chunk) {
  double total = 0;
  for (int32_t c0 = 0; c0 < vocab; c0 += kChunk) {
    const int32_t c1 = std::min(vocab, c0 + kChunk);
    // lanes 0-7 here are the AVX2 pass's sums of tokens 0-3 and 4-7 of each 16, lanes 8-15 of 8-15
    __m512d acc0 = _mm512_setzero_pd(), acc1 = _mm512_setzero_pd();
    int32_t i = c0;
    for (; i + 16 <= c1; i += 16) {
      const __m512 v = _mm512_loadu_ps(l + i);
      __m512 e = rkv::dense::exp_approx16(_mm512_mul_ps(_mm512_sub_ps(v, _mm512_set1_ps(max)), _mm512_set1_ps(inv_t)));
      e = _mm512_mask_mov_ps(e, _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q), _mm512_setzero_ps());
      _mm512_storeu_ps(p + i, e);
      acc0 = _mm512_add_pd(acc0, _mm512_cvtps_pd(_mm512_castps512_ps256(e)));
      acc1 = _mm512_add_pd(acc1, _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(e), 1))));
    }
    const __m512d a = _mm512_add_pd(acc0, acc1);
    alignas(32) double lanes[4];
    _mm256_store_pd(lanes, _mm256_add_pd(_mm512_castpd512_pd256(a), _mm512_extractf64x4_pd(a, 1)));
    double sum = (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
    for (; i < c1; i++) {
      const float x = std::isnan(l[i]) ? 0.f : rkv::dense::exp_approx((l[i] - max) * inv_t);
      p[i] = x;
      sum += x;
    }
    chunk[c0 / kChunk] = sum;
    total += sum;
  }
  return total;
}

RKV_AVX512 bool exponent_masses_avx512(const float* p, int32_t vocab, int top, double* mass) {
  uint64_t sum[kExponentsAPass] = {};
  __mmask16 above = 0;
  const __m512i topv = _mm512_set1_epi32(top);
  for (int32_t i = 0; i < vocab;) {
    // a lane adds at most one 24-bit mantissa per 16 tokens: 256 steps stay below 2^32
    const int32_t end = std::min(vocab, i + 16 * 256);
    __m512i acc[kExponentsAPass];
    for (__m512i& a : acc) a = _mm512_setzero_si512();
    // the tail as a masked step after the loop (a mask in every step cost 13.4 us a row, not 10.8)
    for (; i + 16 <= end; i += 16) add_by_exponent(_mm512_loadu_si512(p + i), topv, acc, above);
    if (i < end) {
      const __mmask16 live = static_cast<__mmask16>((1u << (end - i)) - 1);
      add_by_exponent(_mm512_maskz_loadu_epi32(live, p + i), topv, acc, above);  // p = 0 is in no bucket
      i = end;
    }
    for (int k = 0; k < kExponentsAPass; k++) {
      const __m512i lo = _mm512_cvtepu32_epi64(_mm512_castsi512_si256(acc[k]));
      const __m512i hi = _mm512_cvtepu32_epi64(_mm512_extracti64x4_epi64(acc[k], 1));
      sum[k] += static_cast<uint64_t>(_mm512_reduce_add_epi64(_mm512_add_epi64(lo, hi)));
    }
  }
  for (int k = 0; k < kExponentsAPass; k++) mass[top - k] = static_cast<double>(sum[k]) * mantissa_unit(top - k);
  return above != 0;
}

RKV_AVX512 int32_t gather_bucket_avx512(const float* p, int32_t vocab, uint32_t q, uint64_t* keys) {
  const __m512i want = _mm512_set1_epi32(static_cast<int>(q));
  int32_t n = 0;
  // a bucket holds a small share of the row: test 16 tokens at once, store only those that match
  // (ids compressed into a block first, without a branch a step, took 6.3 us a row, not 4.4)
  const auto take = [&](int32_t i, __mmask16 live) RKV_AVX512 {
    const __m512i b = _mm512_maskz_loadu_epi32(live, p + i);
    unsigned hit = _mm512_mask_cmpeq_epi32_mask(_mm512_test_epi32_mask(b, b), _mm512_srli_epi32(b, 15), want);
    for (; hit; hit &= hit - 1) {
      const int32_t id = i + __builtin_ctz(hit);
      keys[n++] = order_key(rkv::f32_bits(p[id]), id);
    }
  };
  int32_t i = 0;
  for (; i + 16 <= vocab; i += 16) take(i, 0xFFFF);
  if (i < vocab) take(i, static_cast<__mmask16>((1u << (vocab - i)) - 1));
  return n;
}

RKV_AVX512 void window_masses_avx512(const float* p, int32_t vocab, int lo, int width, uint64_t* sum, double* mass) {
  constexpr int32_t kBlock = 1024;  // tokens a phase: 8 KiB of bucket indices and mantissas
  const int32_t buckets = width * 256;
  std::fill(sum, sum + buckets, uint64_t{0});
  alignas(64) uint32_t index[kBlock];
  alignas(64) uint32_t mant[kBlock];
  const __m512i base = _mm512_set1_epi32(lo << 8);
  for (int32_t i0 = 0; i0 < vocab; i0 += kBlock) {
    const int32_t n = std::min(kBlock, vocab - i0);
    // vector phase: each token's bucket (its bits >> 15 from the window's first, wrapped into
    // the window by the low bits) and its mantissa, 0 outside the window (so it adds nothing)
    for (int32_t t = 0; t < n; t += 16) {
      const __mmask16 live = n - t >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << (n - t)) - 1);
      const __m512i b = _mm512_maskz_loadu_epi32(live, p + i0 + t);
      const __m512i q = _mm512_sub_epi32(_mm512_srli_epi32(b, 15), base);
      const __mmask16 in = _mm512_cmplt_epu32_mask(q, _mm512_set1_epi32(buckets));
      // the leading 1 of normal numbers (subnormals and 0, exponent field 0, have none)
      const __m512i lead = _mm512_maskz_mov_epi32(_mm512_cmpge_epu32_mask(b, _mm512_set1_epi32(0x800000)),
                                                  _mm512_set1_epi32(0x800000));
      _mm512_store_si512(index + t, _mm512_and_si512(q, _mm512_set1_epi32(buckets - 1)));
      _mm512_store_si512(mant + t, _mm512_maskz_ternarylogic_epi32(in, b, _mm512_set1_epi32(0x7FFFFF), lead, 0xEA));
    }
    for (int32_t t = 0; t < n; t++) sum[index[t]] += mant[t];
  }
  for (int e = 0; e < width; e++) {
    const __m512d scale = _mm512_set1_pd(mantissa_unit(lo + e));
    for (int32_t k = e * 256; k < (e + 1) * 256; k += 8)
      _mm512_storeu_pd(mass + k, _mm512_mul_pd(_mm512_cvtepu64_pd(_mm512_loadu_si512(sum + k)), scale));
  }
}

}  // namespace sampling
}  // namespace rkv
#endif
