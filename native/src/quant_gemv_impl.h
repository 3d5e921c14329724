// The SIMD kernels of rkv_quant_linear's decode path (quant_gemv.cpp), included twice there: in
// namespace avx2 under `#pragma GCC target("avx2,fma,f16c")` (RKV_QUANT_VNNI 0) and in namespace
// vnni under the AVX-512 VNNI target (RKV_QUANT_VNNI 1), so that a portable x86-64-v3 build has the
// VNNI path too and the AVX2 path never carries an AVX-512 instruction. No include guard on purpose.
// f16 to f32 in one instruction (F16C, part of every AVX2 target here): the block scales.
inline float f16c(uint16_t h) { return _cvtsh_ss(h); }

#include "rkv_reduce_avx2.h"

inline float hsum(__m128 s) { return hsum4(s); }
inline float hsum(__m256 v) { return hsum8(v); }

// ---- the activations' quantization, 8 values at a time (the same results as the scalar loops) ----

inline int32_t hsum_i32(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
  return _mm_cvtsi128_si32(s);
}

// C's roundf of 8 values (halves away from zero), as int32: truncate, then step one away from
// zero where the dropped fraction is at least a half.
inline __m256i roundf_epi32(__m256 v) {
  const __m256 sign = _mm256_set1_ps(-0.f);
  const __m256 t = _mm256_round_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
  const __m256 frac = _mm256_andnot_ps(sign, _mm256_sub_ps(v, t));
  const __m256 step = _mm256_and_ps(_mm256_cmp_ps(frac, _mm256_set1_ps(0.5f), _CMP_GE_OQ),
                                    _mm256_or_ps(_mm256_and_ps(v, sign), _mm256_set1_ps(1.f)));
  return _mm256_cvttps_epi32(_mm256_add_ps(t, step));
}

// 32 int32 values (4 vectors) to 32 int8 in order (each within -127..127).
inline __m256i pack_i8(const __m256i q[4]) {
  const __m256i w01 = _mm256_packs_epi32(q[0], q[1]), w23 = _mm256_packs_epi32(q[2], q[3]);
  const __m256i b = _mm256_packs_epi16(w01, w23);  // 4-value groups of q[0..3] in the order 0 1 2 3 0 1 2 3
  return _mm256_permutevar8x32_epi32(b, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

// quantize_row_32 with AVX2. With `pairs` (the 4-bit two-block path of rows_nibble_pairs) each
// pair of blocks b, b + 1 is stored as values 0-15 of b, 0-15 of b + 1, 16-31 of b, 16-31 of
// b + 1, and the correction is spread over 4 lanes per block rather than 8.
void quantize_row_32_avx2(const float* x, int64_t k, int64_t offset, bool pairs, ActRow a) {
  const __m256 sign = _mm256_set1_ps(-0.f);
  for (int64_t b = 0; b < k / 32; b++) {
    const float* xb = x + b * 32;
    __m256 v[4];
    __m256 amax = _mm256_setzero_ps();
    for (int i = 0; i < 4; i++) {
      v[i] = _mm256_loadu_ps(xb + 8 * i);
      amax = _mm256_max_ps(amax, _mm256_andnot_ps(sign, v[i]));
    }
    const float d = hmax8(amax) / 127.f;
    const __m256 id = _mm256_set1_ps(d != 0.f ? 1.f / d : 0.f);
    __m256i q[4];
    __m256i sum = _mm256_setzero_si256();
    for (int i = 0; i < 4; i++) {
      q[i] = roundf_epi32(_mm256_mul_ps(v[i], id));
      sum = _mm256_add_epi32(sum, q[i]);
    }
    const __m256i bytes = pack_i8(q);
    if (pairs) {
      int8_t* at = a.qs + (b / 2) * 64 + (b % 2) * 16;
      _mm_storeu_si128(reinterpret_cast<__m128i*>(at), _mm256_castsi256_si128(bytes));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(at + 32), _mm256_extracti128_si256(bytes, 1));
    } else {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(a.qs + b * 32), bytes);
    }
    a.d[b] = d;
    _mm256_storeu_ps(a.d8 + b * 8, _mm256_set1_ps(d));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(a.corr + b * 8),
                        _mm256_set1_epi32(-static_cast<int32_t>(offset / (pairs ? 4 : 8)) * hsum_i32(sum)));
  }
}

// quantize_row_256 with AVX2: nearest(x * iscale) in the default rounding mode (nearest even, as
// nearbyint), the value of largest magnitude the first one of it, as the scalar loop finds it.
void quantize_row_256_avx2(const float* x, int64_t k, ActRow a) {
  const __m256 sign = _mm256_set1_ps(-0.f);
  for (int64_t b = 0; b < k / 256; b++) {
    const float* xb = x + b * 256;
    int8_t* q = a.qs + b * 256;
    __m256 amax8 = _mm256_setzero_ps();
    for (int i = 0; i < 32; i++) amax8 = _mm256_max_ps(amax8, _mm256_andnot_ps(sign, _mm256_loadu_ps(xb + 8 * i)));
    const float amax = hmax8(amax8);
    if (amax == 0.f) {
      a.d[b] = 0.f;
      std::memset(q, 0, 256);
      std::memset(a.s16 + b * 16, 0, 32);
      std::memset(a.s32 + b * 8, 0, 16);
      continue;
    }
    float max = amax;
    for (int j = 0; j < 256; j++)
      if (std::fabs(xb[j]) == amax) {
        max = xb[j];
        break;
      }
    const float iscale = -127.f / max;
    const __m256 is = _mm256_set1_ps(iscale);
    for (int g = 0; g < 8; g++) {  // 32 values: sub-blocks of 16 2g and 2g + 1
      __m256i v[4];
      for (int i = 0; i < 4; i++)
        v[i] = _mm256_min_epi32(_mm256_cvtps_epi32(_mm256_mul_ps(is, _mm256_loadu_ps(xb + 32 * g + 8 * i))),
                                _mm256_set1_epi32(127));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + 32 * g), pack_i8(v));
      const int32_t s0 = hsum_i32(_mm256_add_epi32(v[0], v[1])), s1 = hsum_i32(_mm256_add_epi32(v[2], v[3]));
      a.s16[b * 16 + 2 * g] = static_cast<int16_t>(s0);
      a.s16[b * 16 + 2 * g + 1] = static_cast<int16_t>(s1);
      a.s32[b * 8 + g] = static_cast<int16_t>(s0 + s1);
    }
    a.d[b] = 1.f / iscale;
  }
}

// acc + the sums of each 4 products u[i] * s[i] (u unsigned bytes, s signed), in 8 int32 lanes.
template <int P>
inline __m256i dot_u8s8(__m256i acc, __m256i u, __m256i s) {
#if RKV_QUANT_VNNI
  if constexpr (P == kVnni) return _mm256_dpbusd_epi32(acc, u, s);
#endif
  return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1)));
}

// acc + pairwise sums of p[i] * sc[i] (int16) in 8 int32 lanes.
template <int P>
inline __m256i dot_s16(__m256i acc, __m256i p, __m256i sc) {
#if RKV_QUANT_VNNI
  if constexpr (P == kVnni) return _mm256_dpwssd_epi32(acc, p, sc);
#endif
  return _mm256_add_epi32(acc, _mm256_madd_epi16(p, sc));
}

// Byte i = 0x10 where bit i of the 32 bits at p is set, else 0 (Q5_0's fifth bits).
inline __m256i fifth_bits(const uint8_t* p) {
  uint32_t bits;
  std::memcpy(&bits, p, 4);
  const __m256i spread = _mm256_shuffle_epi8(
      _mm256_set1_epi32(static_cast<int>(bits)),
      _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202, 0x0101010101010101, 0x0000000000000000));
  const __m256i mask = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201ULL));
  return _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(spread, mask), mask), _mm256_set1_epi8(0x10));
}

// The 32 values of a 32-value block as unsigned bytes (Q4_0, Q5_0) or signed ones (Q8_0).
template <int F>
inline __m256i block_bytes_32(const uint8_t* blk) {
  if constexpr (F == RKV_QUANT_Q8_0) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 2));
  } else {
    const uint8_t* qs = blk + (F == RKV_QUANT_Q5_0 ? 6 : 2);
    const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
    const __m128i lo4 = _mm_set1_epi8(0x0F);
    __m256i v = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(q, 4), lo4), _mm_and_si128(q, lo4));
    if constexpr (F == RKV_QUANT_Q5_0) v = _mm256_or_si256(v, fifth_bits(blk + 2));
    return v;
  }
}

template <int P, int F, int MR>
void rows_32(const uint8_t* w, int64_t j0, int64_t j1, int64_t k, const ActRow* a, float* y, int64_t ldy, bool acc) {
  constexpr int64_t bb = F == RKV_QUANT_Q8_0 ? 34 : F == RKV_QUANT_Q4_0 ? 18 : 22;
  const int64_t nb = k / 32;
  for (int64_t j = j0; j < j1; j++) {
    const uint8_t* row = w + j * nb * bb;
    __m256 sum[MR];
    for (int r = 0; r < MR; r++) sum[r] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
      const uint8_t* blk = row + b * bb;
      uint16_t dh;
      std::memcpy(&dh, blk, 2);
      const __m256 dw = _mm256_set1_ps(f16c(dh));
      const __m256i v = block_bytes_32<F>(blk);
      const __m256i u = F == RKV_QUANT_Q8_0 ? _mm256_sign_epi8(v, v) : v;
      for (int r = 0; r < MR; r++) {
        const __m256i xq = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a[r].qs + b * 32));
        __m256i dot;
        if constexpr (F == RKV_QUANT_Q8_0) {
          dot = dot_u8s8<P>(_mm256_setzero_si256(), u, _mm256_sign_epi8(xq, v));
        } else {
          dot = dot_u8s8<P>(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(a[r].corr + b * 8)), u, xq);
        }
        sum[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), _mm256_mul_ps(dw, _mm256_set1_ps(a[r].d[b])), sum[r]);
      }
    }
    for (int r = 0; r < MR; r++) {
      float* out = y + r * ldy + j;
      *out = acc ? *out + hsum(sum[r]) : hsum(sum[r]);
    }
  }
}

#if RKV_QUANT_VNNI
// Q8_0 on AVX-512 VNNI, two blocks per 512-bit step (rows of an even number of blocks): the
// weight bytes of blocks b and b + 1 as unsigned w + 128 in element order, one vpdpbusd per row of
// x from its correction (quant_blocks.h: ActRow), scaled lane by lane by
// [d_w(b) x 8, d_w(b + 1) x 8] * the activations' d8.
// The f16 scales of two 32-value blocks (the first 2 bytes of each): b0's in bits 0-15, b1's in 16-31.
inline uint32_t pair_scales(const uint8_t* b0, const uint8_t* b1) {
  uint16_t h0, h1;
  std::memcpy(&h0, b0, 2);
  std::memcpy(&h1, b1, 2);
  return h0 | static_cast<uint32_t>(h1) << 16;
}

template <int MR>
void rows_q8_0_pairs(const uint8_t* w, int64_t j0, int64_t j1, int64_t k, const ActRow* a, float* y, int64_t ldy,
                     bool acc) {
  constexpr int64_t bb = 34;
  const int64_t nb = k / 32;
  for (int64_t j = j0; j < j1; j++) {
    const uint8_t* row = w + j * nb * bb;
    __m512 sum[MR];
    for (int r = 0; r < MR; r++) sum[r] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; b += 2) {
      const uint8_t* b0 = row + b * bb;
      const uint8_t* b1 = b0 + bb;
      const uint32_t h = pair_scales(b0, b1);
      const __m512 dw = _mm512_insertf32x8(_mm512_set1_ps(f16c(static_cast<uint16_t>(h))),
                                           _mm256_set1_ps(f16c(static_cast<uint16_t>(h >> 16))), 1);
      const __m512i v = _mm512_inserti64x4(
          _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b0 + 2))),
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b1 + 2)), 1);
      const __m512i u = _mm512_xor_si512(v, _mm512_set1_epi8(static_cast<char>(0x80)));
      for (int r = 0; r < MR; r++) {
        const __m512i xq = _mm512_loadu_si512(a[r].qs + b * 32);
        const __m512i dot = _mm512_dpbusd_epi32(_mm512_loadu_si512(a[r].corr + b * 8), u, xq);
        sum[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), _mm512_mul_ps(dw, _mm512_loadu_ps(a[r].d8 + b * 8)), sum[r]);
      }
    }
    for (int r = 0; r < MR; r++) {
      float* out = y + r * ldy + j;
      const float v = _mm512_reduce_add_ps(sum[r]);
      *out = acc ? *out + v : v;
    }
  }
}

// Q4_0 and Q5_0 on AVX-512 VNNI, two blocks per step in 256-bit registers: the 16 bytes of
// blocks b and b + 1 side by side give their low nibbles (values 0-15 of each) and high nibbles
// (values 16-31) with one mask and one shift each, against the activations stored in the same
// order (quantize_row_32_avx2 with pairs), so two vpdpbusd leave block b's sum in lanes 0-3 and
// b + 1's in lanes 4-7 without a lane permute; one conversion, one scale multiply and one FMA
// then serve both blocks. The two f16 scales are widened together from one 32-bit move.
template <int F, int MR>
void rows_nibble_pairs(const uint8_t* w, int64_t j0, int64_t j1, int64_t k, const ActRow* a, float* y, int64_t ldy,
                       bool acc) {
  constexpr int64_t bb = F == RKV_QUANT_Q4_0 ? 18 : 22;
  constexpr int off = F == RKV_QUANT_Q5_0 ? 6 : 2;
  const int64_t nb = k / 32;
  const __m256i lo4 = _mm256_set1_epi8(0x0F);
  const __m128i spread = _mm_setr_epi8(0, 1, 0, 1, 0, 1, 0, 1, 2, 3, 2, 3, 2, 3, 2, 3);  // [h0 x4, h1 x4]
  for (int64_t j = j0; j < j1; j++) {
    const uint8_t* row = w + j * nb * bb;
    __m256 sum[MR];
    for (int r = 0; r < MR; r++) sum[r] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b += 2) {
      const uint8_t* b0 = row + b * bb;
      const uint8_t* b1 = b0 + bb;
      const __m256 dw =
          _mm256_cvtph_ps(_mm_shuffle_epi8(_mm_cvtsi32_si128(static_cast<int>(pair_scales(b0, b1))), spread));
      const __m256i q = _mm256_inserti128_si256(
          _mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b0 + off))),
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(b1 + off)), 1);
      __m256i ulo = _mm256_and_si256(q, lo4);
      __m256i uhi = _mm256_and_si256(_mm256_srli_epi16(q, 4), lo4);
      if constexpr (F == RKV_QUANT_Q5_0) {
        uint32_t q0, q1;
        std::memcpy(&q0, b0 + 2, 4);
        std::memcpy(&q1, b1 + 2, 4);
        const __m256i bit4 = _mm256_set1_epi8(0x10);
        ulo = _mm256_or_si256(ulo, _mm256_maskz_mov_epi8((q0 & 0xFFFF) | (q1 << 16), bit4));
        uhi = _mm256_or_si256(uhi, _mm256_maskz_mov_epi8((q0 >> 16) | (q1 & 0xFFFF0000u), bit4));
      }
      for (int r = 0; r < MR; r++) {
        const int8_t* xq = a[r].qs + b * 32;
        // lanes 4-7 of block b's 8 copies and lanes 0-3 of block b + 1's: [b x4, b + 1 x4]
        __m256i dot = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a[r].corr + b * 8 + 4));
        dot = _mm256_dpbusd_epi32(dot, ulo, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq)));
        dot = _mm256_dpbusd_epi32(dot, uhi, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq + 32)));
        sum[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), _mm256_mul_ps(dw, _mm256_loadu_ps(a[r].d8 + b * 8 + 4)),
                                 sum[r]);
      }
    }
    for (int r = 0; r < MR; r++) {
      float* out = y + r * ldy + j;
      const float v = hsum8(sum[r]);
      *out = acc ? *out + v : v;
    }
  }
}
#endif

// A Q4_K block's 8 six-bit scales (bytes 0-7) and 8 mins (bytes 8-15) in one vector, unpacked
// from its 12 packed bytes with word-wide masks and shifts (get_scale_min_k4 for all 8 at once).
inline __m128i scales_mins_k4(const uint8_t* packed) {
  uint32_t u[4];
  std::memcpy(u, packed, 12);
  const uint32_t m6 = 0x3f3f3f3f, m4 = 0x0f0f0f0f, m2 = 0x03030303;
  const uint32_t sc_hi = (u[2] & m4) | (((u[0] >> 6) & m2) << 4);   // scales 4-7
  const uint32_t mn_hi = ((u[2] >> 4) & m4) | (((u[1] >> 6) & m2) << 4);  // mins 4-7
  return _mm_setr_epi32(static_cast<int>(u[0] & m6), static_cast<int>(sc_hi), static_cast<int>(u[1] & m6),
                        static_cast<int>(mn_hi));
}

template <int P, int MR>
void rows_q4_k(const uint8_t* w, int64_t j0, int64_t j1, int64_t k, const ActRow* a, float* y, int64_t ldy,
               bool acc) {
  const int64_t nb = k / 256;
  const __m256i lo4 = _mm256_set1_epi8(0x0F);
  // int16 word 2c of the scales in every lane (sub-block 2c: the low nibbles of bytes 32c..32c+31),
  // word 2c + 1 likewise (their high nibbles)
  __m256i pick[8];
  for (int s = 0; s < 8; s++) pick[s] = _mm256_set1_epi16(static_cast<int16_t>(0x0100 * (2 * s + 1) + 2 * s));
  for (int64_t j = j0; j < j1; j++) {
    const auto* row = reinterpret_cast<const BlockQ4_K*>(w) + j * nb;
    __m256 sum[MR];
    __m128 mins[MR];
    for (int r = 0; r < MR; r++) {
      sum[r] = _mm256_setzero_ps();
      mins[r] = _mm_setzero_ps();
    }
    for (int64_t b = 0; b < nb; b++) {
      const BlockQ4_K* blk = row + b;
      const __m256i sm = _mm256_cvtepu8_epi16(scales_mins_k4(blk->scales));  // 8 scales, 8 mins as int16
      const __m256i sc = _mm256_permute2x128_si256(sm, sm, 0x00);           // the scales in both halves
      const __m128i mn8 = _mm256_extracti128_si256(sm, 1);
      __m256i isum[MR];
      for (int r = 0; r < MR; r++) isum[r] = _mm256_setzero_si256();
      for (int c = 0; c < 4; c++) {
        const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk->qs + 32 * c));
        const __m256i lo = _mm256_and_si256(q, lo4);
        const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), lo4);
        const __m256i sc_lo = _mm256_shuffle_epi8(sc, pick[2 * c]);
        const __m256i sc_hi = _mm256_shuffle_epi8(sc, pick[2 * c + 1]);
        for (int r = 0; r < MR; r++) {
          const int8_t* xq = a[r].qs + b * 256 + 64 * c;
          const __m256i plo = _mm256_maddubs_epi16(lo, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq)));
          const __m256i phi = _mm256_maddubs_epi16(hi, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq + 32)));
          isum[r] = dot_s16<P>(dot_s16<P>(isum[r], plo, sc_lo), phi, sc_hi);
        }
      }
      const float d = f16c(blk->d), dmin = f16c(blk->dmin);
      for (int r = 0; r < MR; r++) {
        const float dx = a[r].d[b];
        sum[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[r]), _mm256_set1_ps(d * dx), sum[r]);
        const __m128i m4 = _mm_madd_epi16(mn8, _mm_loadu_si128(reinterpret_cast<const __m128i*>(a[r].s32 + b * 8)));
        mins[r] = _mm_fmadd_ps(_mm_cvtepi32_ps(m4), _mm_set1_ps(dmin * dx), mins[r]);
      }
    }
    for (int r = 0; r < MR; r++) {
      const float v = hsum(sum[r]) - hsum(mins[r]);
      float* out = y + r * ldy + j;
      *out = acc ? *out + v : v;
    }
  }
}

template <int P, int MR>
void rows_q6_k(const uint8_t* w, int64_t j0, int64_t j1, int64_t k, const ActRow* a, float* y, int64_t ldy,
               bool acc) {
  const int64_t nb = k / 256;
  const __m256i lo4 = _mm256_set1_epi8(0x0F);
  const __m256i m3 = _mm256_set1_epi8(0x03), m0c = _mm256_set1_epi8(0x0C), m30 = _mm256_set1_epi8(0x30);
  // int16 word 2g of a lane in the low 128-bit lane's words, word 2g + 1 in the high lane's
  __m256i pick[4];
  for (int g = 0; g < 4; g++)
    pick[g] = _mm256_set_m128i(_mm_set1_epi16(static_cast<int16_t>(0x0100 * (4 * g + 3) + 4 * g + 2)),
                               _mm_set1_epi16(static_cast<int16_t>(0x0100 * (4 * g + 1) + 4 * g)));
  for (int64_t j = j0; j < j1; j++) {
    const auto* row = reinterpret_cast<const BlockQ6_K*>(w) + j * nb;
    __m256 sum[MR];
    for (int r = 0; r < MR; r++) sum[r] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
      const BlockQ6_K* blk = row + b;
      const __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk->scales)));
      __m256i isum[MR];
      for (int r = 0; r < MR; r++) {
        // the -32 offset: 32 * sum_s sc[s] * (sum of x over sub-block s)
        const __m256i s16 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a[r].s16 + b * 16));
        isum[r] = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(_mm256_madd_epi16(sc16, s16), 5));
      }
      for (int h = 0; h < 2; h++) {
        const __m256i l0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk->ql + 64 * h));
        const __m256i l1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk->ql + 64 * h + 32));
        const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk->qh + 32 * h));
        __m256i q[4];
        q[0] = _mm256_or_si256(_mm256_and_si256(l0, lo4), _mm256_slli_epi16(_mm256_and_si256(qh, m3), 4));
        q[1] = _mm256_or_si256(_mm256_and_si256(l1, lo4), _mm256_slli_epi16(_mm256_and_si256(qh, m0c), 2));
        q[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), lo4), _mm256_and_si256(qh, m30));
        q[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), lo4),
                               _mm256_and_si256(_mm256_srli_epi16(qh, 2), m30));
        // the half's 8 scales (int16) in both 128-bit lanes
        const __m256i sch = _mm256_permute2x128_si256(sc16, sc16, h == 0 ? 0x00 : 0x11);
        for (int g = 0; g < 4; g++) {
          // int16 lanes 0-7 hold values 0-15 of the group (scale 2g of the half), lanes 8-15 values 16-31
          const __m256i scv = _mm256_shuffle_epi8(sch, pick[g]);
          for (int r = 0; r < MR; r++) {
            const int8_t* xq = a[r].qs + b * 256 + 128 * h + 32 * g;
            const __m256i p = _mm256_maddubs_epi16(q[g], _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq)));
            isum[r] = dot_s16<P>(isum[r], p, scv);
          }
        }
      }
      const float d = f16c(blk->d);
      for (int r = 0; r < MR; r++)
        sum[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[r]), _mm256_set1_ps(d * a[r].d[b]), sum[r]);
    }
    for (int r = 0; r < MR; r++) {
      float* out = y + r * ldy + j;
      *out = acc ? *out + hsum(sum[r]) : hsum(sum[r]);
    }
  }
}

template <int P, int MR>
void rows_vector(int32_t fmt, const uint8_t* w, int64_t j0, int64_t j1, int64_t k, const ActRow* a, float* y,
                 int64_t ldy, bool acc) {
#if RKV_QUANT_VNNI
  if constexpr (P == kVnni) {
    if ((k / 32) % 2 == 0) {
      switch (fmt) {
        case RKV_QUANT_Q8_0: return rows_q8_0_pairs<MR>(w, j0, j1, k, a, y, ldy, acc);
        case RKV_QUANT_Q4_0: return rows_nibble_pairs<RKV_QUANT_Q4_0, MR>(w, j0, j1, k, a, y, ldy, acc);
        case RKV_QUANT_Q5_0: return rows_nibble_pairs<RKV_QUANT_Q5_0, MR>(w, j0, j1, k, a, y, ldy, acc);
        default: break;
      }
    }
  }
#endif
  switch (fmt) {
    case RKV_QUANT_Q8_0: rows_32<P, RKV_QUANT_Q8_0, MR>(w, j0, j1, k, a, y, ldy, acc); break;
    case RKV_QUANT_Q4_0: rows_32<P, RKV_QUANT_Q4_0, MR>(w, j0, j1, k, a, y, ldy, acc); break;
    case RKV_QUANT_Q5_0: rows_32<P, RKV_QUANT_Q5_0, MR>(w, j0, j1, k, a, y, ldy, acc); break;
    case RKV_QUANT_Q4_K: rows_q4_k<P, MR>(w, j0, j1, k, a, y, ldy, acc); break;
    default: rows_q6_k<P, MR>(w, j0, j1, k, a, y, ldy, acc); break;
  }
}

template <int P>
void rows_path(int32_t fmt, const uint8_t* w, int64_t j0, int64_t j1, int64_t k, const ActRow* a, int mr, float* y,
               int64_t ldy, bool acc) {
  switch (mr) {
    case 4: rows_vector<P, 4>(fmt, w, j0, j1, k, a, y, ldy, acc); break;
    case 3: rows_vector<P, 3>(fmt, w, j0, j1, k, a, y, ldy, acc); break;
    case 2: rows_vector<P, 2>(fmt, w, j0, j1, k, a, y, ldy, acc); break;
    default: rows_vector<P, 1>(fmt, w, j0, j1, k, a, y, ldy, acc); break;
  }
}
