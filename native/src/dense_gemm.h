// Built-in GEMM for y[m, n] (+)= x[m, k] . w[n, k]^T with f32 or bf16 weights.
//
// Used (a) for every shape when oneDNN is absent, (b) for bf16 weights with few rows
// (decode), where the work is bound by streaming the weights once and a direct
// bf16 -> f32 widening in registers beats converting the weights or the activations.
// Both operands are contiguous along k, so each output is a dot product: the micro-kernel
// keeps a 4x4 block of vector accumulators (4 rows of x against 4 rows of w) to reuse every
// loaded vector four times.
#pragma once

#include <omp.h>

#include <cstdint>
#include <cstring>

#include "rkv_dtype.h"
#include "rkv_parallel.h"

#if defined(__AVX512F__) || defined(__AVX2__)
#include <immintrin.h>
#endif

// GCC 12's AVX-512 headers trip -W(maybe-)uninitialized on their own "__Y = __Y" idiom
// once inlined here; the warnings are about the headers, not this code.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace rkv {
namespace dense {

// Scalar conversions are the project's shared ones (rkv_dtype.h), so every path agrees bit for bit.
inline float bf16_bits_to_float(uint16_t h) { return rkv::bf16_to_float(h); }
inline uint16_t float_to_bf16_bits(float f) { return rkv::float_to_bf16(f); }

template <typename W>
inline float load_w(const W* p);
template <>
inline float load_w<float>(const float* p) { return *p; }
template <>
inline float load_w<uint16_t>(const uint16_t* p) { return bf16_bits_to_float(*p); }

#if defined(__AVX512F__)
template <typename W>
inline __m512 vload_w(const W* p, __mmask16 m);
template <>
inline __m512 vload_w<float>(const float* p, __mmask16 m) { return _mm512_maskz_loadu_ps(m, p); }
template <>
inline __m512 vload_w<uint16_t>(const uint16_t* p, __mmask16 m) {
  __m256i h = _mm256_maskz_loadu_epi16(m, p);
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}
template <typename W>
inline __m512 vload_w_full(const W* p);
template <>
inline __m512 vload_w_full<float>(const float* p) { return _mm512_loadu_ps(p); }
template <>
inline __m512 vload_w_full<uint16_t>(const uint16_t* p) {
  __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

// out[r][c] = dot(x[r], w[c]) for r < MR, c < NR.
template <typename W, int MR, int NR>
inline void dot_block(const float* x, int64_t ldx, const W* w, int64_t ldw, int64_t k, float out[4][4]) {
  __m512 acc[MR][NR];
  for (int r = 0; r < MR; r++)
    for (int c = 0; c < NR; c++) acc[r][c] = _mm512_setzero_ps();
  int64_t kk = 0;
  for (; kk + 16 <= k; kk += 16) {
    __m512 wv[NR];
    for (int c = 0; c < NR; c++) wv[c] = vload_w_full<W>(w + c * ldw + kk);
    for (int r = 0; r < MR; r++) {
      __m512 xv = _mm512_loadu_ps(x + r * ldx + kk);
      for (int c = 0; c < NR; c++) acc[r][c] = _mm512_fmadd_ps(xv, wv[c], acc[r][c]);
    }
  }
  if (kk < k) {
    __mmask16 m = static_cast<__mmask16>((1u << (k - kk)) - 1u);
    __m512 wv[NR];
    for (int c = 0; c < NR; c++) wv[c] = vload_w<W>(w + c * ldw + kk, m);
    for (int r = 0; r < MR; r++) {
      __m512 xv = _mm512_maskz_loadu_ps(m, x + r * ldx + kk);
      for (int c = 0; c < NR; c++) acc[r][c] = _mm512_fmadd_ps(xv, wv[c], acc[r][c]);
    }
  }
  for (int r = 0; r < MR; r++)
    for (int c = 0; c < NR; c++) out[r][c] = _mm512_reduce_add_ps(acc[r][c]);
}
#else
// Portable version: the simd reduction lets the compiler vectorize (AVX2 on x86-64-v3).
template <typename W, int MR, int NR>
inline void dot_block(const float* x, int64_t ldx, const W* w, int64_t ldw, int64_t k, float out[4][4]) {
  for (int r = 0; r < MR; r++) {
    for (int c = 0; c < NR; c++) {
      const float* xr = x + r * ldx;
      const W* wc = w + c * ldw;
      float s = 0.f;
#pragma omp simd reduction(+ : s)
      for (int64_t kk = 0; kk < k; kk++) s += xr[kk] * load_w<W>(wc + kk);
      out[r][c] = s;
    }
  }
}
#endif

template <typename W, int MR>
inline void dot_rows(const float* x, int64_t ldx, const W* w, int64_t ldw, int64_t k, int nr, float out[4][4]) {
  switch (nr) {
    case 4: dot_block<W, MR, 4>(x, ldx, w, ldw, k, out); break;
    case 3: dot_block<W, MR, 3>(x, ldx, w, ldw, k, out); break;
    case 2: dot_block<W, MR, 2>(x, ldx, w, ldw, k, out); break;
    default: dot_block<W, MR, 1>(x, ldx, w, ldw, k, out); break;
  }
}

template <typename W>
void gemm_builtin(const float* x, const W* w, float* y, int64_t m, int64_t n, int64_t k, bool accumulate) {
  const int64_t nblocks = (n + 3) / 4;
  // Threads split the weight rows: each thread streams its own part of w exactly once per
  // 4-row block of x, and writes disjoint output columns.
  const bool parallel = m * n * k >= (int64_t{1} << 16);
  rkv::parallel_for(nblocks, parallel, [&](int64_t nb) {
    const int64_t j0 = nb * 4;
    const int nr = static_cast<int>(n - j0 < 4 ? n - j0 : 4);
    for (int64_t i0 = 0; i0 < m; i0 += 4) {
      const int mr = static_cast<int>(m - i0 < 4 ? m - i0 : 4);
      float out[4][4];
      const float* xb = x + i0 * k;
      const W* wb = w + j0 * k;
      switch (mr) {
        case 4: dot_rows<W, 4>(xb, k, wb, k, k, nr, out); break;
        case 3: dot_rows<W, 3>(xb, k, wb, k, k, nr, out); break;
        case 2: dot_rows<W, 2>(xb, k, wb, k, k, nr, out); break;
        default: dot_rows<W, 1>(xb, k, wb, k, k, nr, out); break;
      }
      for (int r = 0; r < mr; r++) {
        float* yr = y + (i0 + r) * n + j0;
        for (int c = 0; c < nr; c++) yr[c] = accumulate ? yr[c] + out[r][c] : out[r][c];
      }
    }
  });
}

}  // namespace dense
}  // namespace rkv

#pragma GCC diagnostic pop
