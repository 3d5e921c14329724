// rkv::dense::exp_approx on 16 AVX-512 lanes, for functions compiled for AVX-512 with target
// attributes (RKV_EXP_AVX512_TARGET) and chosen at run time, so a portable x86-64-v3 build has
// it too; defines RKV_EXP_AVX512 where it is available (x86-64, GCC or Clang).
#pragma once

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#include <initializer_list>

#include "rkv_dense_math.h"

#define RKV_EXP_AVX512 1
#define RKV_EXP_AVX512_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma")))

namespace rkv {
namespace dense {

// rkv::dense::exp_approx on 16 lanes, operation for operation as exp_approx8 (its selects as
// masked moves), so it gives the element function's bits (sampling_test checks them).
RKV_EXP_AVX512_TARGET __attribute__((always_inline)) inline __m512 exp_approx16(__m512 x) {
  namespace d = rkv::dense;
  const __mmask16 over = _mm512_cmp_ps_mask(x, _mm512_set1_ps(d::kExpHi), _CMP_GT_OQ);
  const __mmask16 under = _mm512_cmp_ps_mask(x, _mm512_set1_ps(d::kExpLo), _CMP_LT_OQ);
  __m512 xc = _mm512_mask_mov_ps(x, under, _mm512_set1_ps(d::kExpLo));
  xc = _mm512_mask_mov_ps(xc, over, _mm512_set1_ps(d::kExpHi));
  const __m512 round = _mm512_set1_ps(d::kExpRound);
  const __m512 t = _mm512_fmadd_ps(xc, _mm512_set1_ps(d::kExpLog2e), round);
  const __m512 n = _mm512_sub_ps(t, round);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(d::kExpLn2Hi), xc);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(d::kExpLn2Lo), r);
  const __m512 z = _mm512_mul_ps(r, r);
  __m512 p = _mm512_fmadd_ps(_mm512_set1_ps(d::kExpP0), r, _mm512_set1_ps(d::kExpP1));
  for (const float c : {d::kExpP2, d::kExpP3, d::kExpP4, d::kExpP5}) p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(c));
  p = _mm512_add_ps(_mm512_fmadd_ps(p, z, r), _mm512_set1_ps(1.f));
  const __m512i eb = _mm512_slli_epi32(
      _mm512_add_epi32(_mm512_sub_epi32(_mm512_castps_si512(t), _mm512_set1_epi32(d::kExpRoundBits)),
                       _mm512_set1_epi32(127)),
      23);
  __m512 e = _mm512_mul_ps(p, _mm512_castsi512_ps(eb));
  e = _mm512_maskz_mov_ps(static_cast<__mmask16>(~under), e);
  return _mm512_mask_mov_ps(e, over, _mm512_set1_ps(INFINITY));
}

}  // namespace dense
}  // namespace rkv
#endif
