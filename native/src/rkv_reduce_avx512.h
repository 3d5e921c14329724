// Transpose-reduction of 16 AVX-512 vectors: lane j of the result = the sum (or, with MaxOp, the
// max) of the 16 lanes of a[j], in 45 instructions (16 separate horizontal reductions take about
// 10 each). Every lane of the result comes from the same tree, whatever its position. Shared by
// the attention score tiles and the small-m GEMV. Included inside a namespace compiled under
// `#pragma GCC target("avx512f,...")`; no include guard on purpose (one copy per namespace).
//
// The zero-masked forms with a full mask compile to the plain instructions; the unmasked
// intrinsics of GCC 12 pass an uninitialized _mm512_undefined_* operand that -Wuninitialized
// reports.
struct AddOp {
  __m512 operator()(__m512 x, __m512 y) const { return _mm512_add_ps(x, y); }
};
struct MaxOp {
  __m512 operator()(__m512 x, __m512 y) const { return _mm512_max_ps(x, y); }
};

template <typename Op = AddOp>
static inline __m512 reduce_16x16(const __m512* a) {
  const Op op;
  constexpr __mmask16 kAll16 = 0xFFFF;
  constexpr __mmask8 kAll8 = 0xFF;
  __m512 b[8], c[4], e[2];
  for (int i = 0; i < 8; i++)
    b[i] = op(_mm512_maskz_unpacklo_ps(kAll16, a[2 * i], a[2 * i + 1]),
              _mm512_maskz_unpackhi_ps(kAll16, a[2 * i], a[2 * i + 1]));
  for (int i = 0; i < 4; i++) {
    __m512d x = _mm512_castps_pd(b[2 * i]), y = _mm512_castps_pd(b[2 * i + 1]);
    c[i] = op(_mm512_castpd_ps(_mm512_maskz_unpacklo_pd(kAll8, x, y)),
              _mm512_castpd_ps(_mm512_maskz_unpackhi_pd(kAll8, x, y)));
  }
  // c[i]: 128-bit lane k holds partial results of a[4i..4i+3] over that lane's elements
  for (int i = 0; i < 2; i++)
    e[i] = op(_mm512_maskz_shuffle_f32x4(kAll16, c[2 * i], c[2 * i + 1], 0x88),
              _mm512_maskz_shuffle_f32x4(kAll16, c[2 * i], c[2 * i + 1], 0xDD));
  return op(_mm512_maskz_shuffle_f32x4(kAll16, e[0], e[1], 0x88),
            _mm512_maskz_shuffle_f32x4(kAll16, e[0], e[1], 0xDD));
}
