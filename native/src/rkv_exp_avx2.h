// rkv::dense::exp_approx on 8 AVX2 lanes, for the CPU kernels compiled with AVX2 and FMA (the
// portable build's baseline); defines RKV_EXP_AVX2 where it is available.
#pragma once

#include <initializer_list>

#include "rkv_dense_math.h"

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define RKV_EXP_AVX2 1

namespace rkv {
namespace dense {

// rkv::dense::exp_approx on 8 lanes, operation for operation (its selects as blends), so the kernel
// gives the element function's bits. GCC does not vectorize the scalar form: a select on a float
// comparison is control flow to it under -ftrapping-math.
inline __m256 exp_approx8(__m256 x) {
  namespace d = rkv::dense;
  const __m256 over = _mm256_cmp_ps(x, _mm256_set1_ps(d::kExpHi), _CMP_GT_OQ);
  const __m256 under = _mm256_cmp_ps(x, _mm256_set1_ps(d::kExpLo), _CMP_LT_OQ);
  __m256 xc = _mm256_blendv_ps(x, _mm256_set1_ps(d::kExpLo), under);
  xc = _mm256_blendv_ps(xc, _mm256_set1_ps(d::kExpHi), over);
  const __m256 round = _mm256_set1_ps(d::kExpRound);
  const __m256 t = _mm256_fmadd_ps(xc, _mm256_set1_ps(d::kExpLog2e), round);
  const __m256 n = _mm256_sub_ps(t, round);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(d::kExpLn2Hi), xc);  // -(n * hi) + xc, one rounding
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(d::kExpLn2Lo), r);
  const __m256 z = _mm256_mul_ps(r, r);
  __m256 p = _mm256_fmadd_ps(_mm256_set1_ps(d::kExpP0), r, _mm256_set1_ps(d::kExpP1));
  for (const float c : {d::kExpP2, d::kExpP3, d::kExpP4, d::kExpP5}) p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(c));
  p = _mm256_add_ps(_mm256_fmadd_ps(p, z, r), _mm256_set1_ps(1.f));
  const __m256i eb = _mm256_slli_epi32(
      _mm256_add_epi32(_mm256_sub_epi32(_mm256_castps_si256(t), _mm256_set1_epi32(d::kExpRoundBits)),
                       _mm256_set1_epi32(127)),
      23);
  __m256 e = _mm256_mul_ps(p, _mm256_castsi256_ps(eb));
  e = _mm256_blendv_ps(e, _mm256_setzero_ps(), under);
  return _mm256_blendv_ps(e, _mm256_set1_ps(INFINITY), over);
}

}  // namespace dense
}  // namespace rkv
#endif
