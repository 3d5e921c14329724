// Row max and argmax of the CPU kernels (rkv_argmax, rkv_sample): first_argmax's rule
// (rkv_dense_math.h: the first maximum, NaN never wins, all NaN -> 0) on 8 AVX2 lanes where AVX2
// is compiled in (the portable build's baseline): row_max, then the first index holding it. The
// scalar loop's compare-and-select chain ran at about 1.7 ns per logit on a Zen 1 core: 53 us per
// 32000-id row (5% of the 2-layer `tiny` model's decode step), 0.22 ms per row of Llama 3's
// 128256 ids; these passes 3.8 and 17 us.
#pragma once

#include <cmath>
#include <cstdint>

#include "rkv_dense_math.h"

#if defined(__AVX2__)
#include <immintrin.h>
#endif

namespace rkv {
namespace dense {

// The largest logit; NaN never wins (-inf when every logit is NaN or -inf). vmaxps returns its
// second operand when either is NaN, so a NaN logit never enters the running maxima (which start
// at -inf and are never NaN). rkv_sample's temperature rows and argmax_row's first pass.
inline float row_max(const float* l, int32_t n) {
  float mx = -INFINITY;
  int32_t i = 0;
#if defined(__AVX2__)
  __m256 m0 = _mm256_set1_ps(-INFINITY), m1 = m0;
  for (; i + 16 <= n; i += 16) {
    m0 = _mm256_max_ps(_mm256_loadu_ps(l + i), m0);
    m1 = _mm256_max_ps(_mm256_loadu_ps(l + i + 8), m1);
  }
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, _mm256_max_ps(m0, m1));
  for (float v : lanes) mx = v > mx ? v : mx;
#endif
  for (; i < n; i++) mx = l[i] > mx ? l[i] : mx;
  return mx;
}

inline int32_t argmax_row(const float* l, int32_t n) {
#if defined(__AVX2__)
  if (n >= 16) {
    const float mx = row_max(l, n);
    // Nothing above -inf (only -inf and NaN): the scalar rule picks the first number, or 0.
    if (mx == -INFINITY) return first_argmax(l, n);
    // The first index holding it (-0 == +0, as in the scalar rule's comparisons).
    const __m256 v = _mm256_set1_ps(mx);
    int32_t i = 0;
    for (; i + 8 <= n; i += 8) {
      const int eq = _mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(l + i), v, _CMP_EQ_OQ));
      if (eq != 0) return i + __builtin_ctz(static_cast<unsigned>(eq));
    }
    for (; i < n; i++)
      if (l[i] == mx) return i;
  }
#endif
  return first_argmax(l, n);
}

}  // namespace dense
}  // namespace rkv
