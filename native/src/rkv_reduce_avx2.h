// Horizontal sum and max of the 8 lanes of an AVX vector (and the sum of 4 of an SSE one), shared
// by the kernels' AVX2 paths (attention, the dense GEMV, the quantized GEMV). Included inside a
// namespace compiled under `#pragma GCC target("avx2,...")` or a wider target; no include guard on
// purpose (one copy per namespace).
static inline float hsum4(__m128 s) {
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

static inline float hsum8(__m256 v) { return hsum4(_mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1))); }

static inline float hmax8(__m256 v) {
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  s = _mm_max_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}
