// x rounded to bf16 for the vdpbf16ps paths of the small-m GEMV (dense_gemv.cpp, row-major
// weights; dense_packed.cpp, packed weights). Included inside a namespace compiled under
// `#pragma GCC target("avx512f,avx512bw,...")`; no include guard on purpose (one copy per
// namespace).
//
// count floats to bf16, exactly rkv::float_to_bf16 (RNE, NaN kept quiet), 16 at a time.
static inline void round_to_bf16(const float* x, int64_t count, uint16_t* out) {
  const __m512i abs_mask = _mm512_set1_epi32(0x7FFFFFFF), inf = _mm512_set1_epi32(0x7F800000);
  const __m512i bias = _mm512_set1_epi32(0x7FFF), one = _mm512_set1_epi32(1), quiet = _mm512_set1_epi32(0x00400000);
  int64_t i = 0;
  for (; i < count; i += 16) {
    const __mmask16 mk = count - i >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (count - i)) - 1);
    const __m512i u = _mm512_maskz_loadu_epi32(mk, x + i);
    const __mmask16 nan = _mm512_cmpgt_epi32_mask(_mm512_and_si512(u, abs_mask), inf);
    __m512i r = _mm512_add_epi32(u, _mm512_add_epi32(bias, _mm512_and_si512(_mm512_srli_epi32(u, 16), one)));
    r = _mm512_mask_mov_epi32(r, nan, _mm512_or_si512(u, quiet));
    _mm256_mask_storeu_epi16(out + i, mk, _mm512_cvtepi32_epi16(_mm512_srli_epi32(r, 16)));
  }
}
