// The per-ISA cores of the CPU attention kernels: attention_cpu_impl.h compiled three times,
// AVX-512 (F/BW/VL/DQ), AVX2+FMA+F16C and scalar, each under its own target pragma (and once
// more for AVX512-VBMI's e4m3 decode, of which only that is instantiated), so a
// portable (x86-64-v3) build still uses AVX-512 where present. The choice is made from
// rkv_isa.h's probe (once per process; RADIXKV_ISA=avx2|scalar lowers it, for tests).
#include <algorithm>
#include <cmath>
#include <cstdint>

#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
// GCC 12's AVX-512 headers build many intrinsics on a self-initialized _mm512_undefined_*
// operand, which -Wmaybe-uninitialized (and, inlined into a function with vector out-parameters,
// -Wuninitialized) reports (GCC bug 105593, fixed in 13).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

#include "attention_cpu.h"
#include "rkv_dtype.h"
#include "rkv_isa.h"
#include "rkv_softmax.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace rkv {
namespace attn {

// ---------------------------------------------------------------- scalar (any CPU)
namespace scalar {
struct I {
  using V = float;
  static constexpr int W = 1;
  static constexpr int kAcc = 1;
  static constexpr int kPvAcc = 1;
  static constexpr int kRegs = 1;
  static V zero() { return 0.f; }
  static V set1(float x) { return x; }
  static V load(const float* p) { return *p; }
  static void store(float* p, V v) { *p = v; }
  // always fused: `a * b + c` was contracted to an FMA in some instantiations and not in others,
  // so a row's result depended on which tile path (packed or not) computed it
  static V fma(V a, V b, V c) { return std::fma(a, b, c); }
  static V mul(V a, V b) { return a * b; }
  static V add(V a, V b) { return a + b; }
  static V sub(V a, V b) { return a - b; }
  static V max(V a, V b) { return a > b ? a : b; }
  static float hmax(V v) { return v; }
  static float hsum(V v) { return v; }
  static V exp2(V x) { return x < -125.f ? 0.f : exp2f(x); }
  static V logit2(V s, float cap) { return logit_base2(s, cap); }
  static V reduce_w(const V* acc) { return acc[0]; }
  static V reduce_max_w(const V* acc) { return acc[0]; }
  template <int DT>
  static V load_cvt(const uint8_t* row, int d) {
    return load_as_float(row, d, DT == kE4M3Finite ? RKV_DTYPE_FP8_E4M3 : DT);
  }
  template <int DT>
  static void load_cvt2(const uint8_t* row, int d, V& a, V& b) {
    a = load_cvt<DT>(row, d);
    b = load_cvt<DT>(row, d + 1);
  }
  static bool has_e4m3_nan(const uint8_t* p, int64_t bytes) {
    for (int64_t i = 0; i < bytes; i++)
      if ((p[i] & 0x7F) == 0x7F) return true;
    return false;
  }
};
#include "attention_cpu_impl.h"
}  // namespace scalar

#if defined(__x86_64__)
// ---------------------------------------------------------------- AVX2 + FMA + F16C
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
namespace avx2 {
#include "rkv_reduce_avx2.h"
struct I {
  using V = __m256;
  static constexpr int W = 8;
  static constexpr int kAcc = 8;
  static constexpr int kPvAcc = 12;  // value tiles: 4 rows x 3 vectors + 3 V + 1 P of 16 registers
  static constexpr int kRegs = 16;
  static V zero() { return _mm256_setzero_ps(); }
  static V set1(float x) { return _mm256_set1_ps(x); }
  static V load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, V v) { _mm256_storeu_ps(p, v); }
  static V fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static V mul(V a, V b) { return _mm256_mul_ps(a, b); }
  static V add(V a, V b) { return _mm256_add_ps(a, b); }
  static V sub(V a, V b) { return _mm256_sub_ps(a, b); }
  static V max(V a, V b) { return _mm256_max_ps(a, b); }
  static float hsum(V v) { return hsum8(v); }
  static float hmax(V v) { return hmax8(v); }
  // 2^x for x <= ~100; lanes below -125 (including -inf) give exactly 0.
  static V exp2(V x) {
    const V lo = _mm256_set1_ps(-125.f);
    V tiny = _mm256_cmp_ps(x, lo, _CMP_LT_OQ);
    x = _mm256_max_ps(lo, x);  // second operand wins on NaN: keeps NaN
    V n = _mm256_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    V f = _mm256_sub_ps(x, n);  // [-0.5, 0.5]
    V p = _mm256_set1_ps(1.5403530393381609e-4f);
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(1.3333558146428443e-3f));
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(9.6181291076284772e-3f));
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(5.5504108664821580e-2f));
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(2.4022650695910071e-1f));
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(6.9314718055994531e-1f));
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(1.f));
    __m256i e = _mm256_slli_epi32(_mm256_cvtps_epi32(n), 23);
    V r = _mm256_castsi256_ps(_mm256_add_epi32(_mm256_castps_si256(p), e));
    return _mm256_andnot_ps(tiny, r);
  }
  static V tanh(V y) {
    y = _mm256_min_ps(_mm256_max_ps(y, _mm256_set1_ps(-9.f)), _mm256_set1_ps(9.f));
    V e = exp2(_mm256_mul_ps(y, _mm256_set1_ps(2.f * kLog2e)));
    V one = _mm256_set1_ps(1.f);
    return _mm256_sub_ps(one, _mm256_div_ps(_mm256_set1_ps(2.f), _mm256_add_ps(e, one)));
  }
  // logit_base2 (rkv_softmax.h) lane-wise
  static V logit2(V s, float cap) { return _mm256_mul_ps(_mm256_set1_ps(cap * kLog2e), tanh(s)); }
  struct Add {
    V operator()(V x, V y) const { return _mm256_add_ps(x, y); }
  };
  struct Max {
    V operator()(V x, V y) const { return _mm256_max_ps(x, y); }
  };
  // lane j of the result = sum (Op = Max: max) of the lanes of acc[j], every lane by the same tree
  template <typename Op = Add>
  static V reduce_w(const V* a) {
    const Op op;
    V b[4], c[2];
    for (int i = 0; i < 4; i++)
      b[i] = op(_mm256_unpacklo_ps(a[2 * i], a[2 * i + 1]), _mm256_unpackhi_ps(a[2 * i], a[2 * i + 1]));
    for (int i = 0; i < 2; i++) {
      __m256d x = _mm256_castps_pd(b[2 * i]), y = _mm256_castps_pd(b[2 * i + 1]);
      c[i] = op(_mm256_castpd_ps(_mm256_unpacklo_pd(x, y)), _mm256_castpd_ps(_mm256_unpackhi_pd(x, y)));
    }
    return op(_mm256_permute2f128_ps(c[0], c[1], 0x20), _mm256_permute2f128_ps(c[0], c[1], 0x31));
  }
  static V reduce_max_w(const V* a) { return reduce_w<Max>(a); }
  template <int DT>
  static V load_cvt(const uint8_t* row, int d) {
    if constexpr (DT == RKV_DTYPE_F32) {
      return _mm256_loadu_ps(reinterpret_cast<const float*>(row) + d);
    } else if constexpr (DT == RKV_DTYPE_F16) {
      return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 2 * d)));
    } else if constexpr (DT == RKV_DTYPE_BF16 || DT == kBf16Pairs) {
      __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 2 * d)));
      return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
    } else if constexpr (DT == RKV_DTYPE_FP8_E5M2) {
      // e5m2 is the high byte of an f16
      __m128i w = _mm_cvtepu8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(row + d)));
      return _mm256_cvtph_ps(_mm_slli_epi16(w, 8));
    } else {
      __m128i w = _mm_cvtepi8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(row + d)));
      return _mm256_cvtph_ps(e4m3_as_f16<DT>(w));
    }
  }
  // e4m3 codes (sign-extended to 16 bits) as f16 bit patterns of value / 256: the byte << 7
  // puts the sign in bits 15 and 14 (14 cleared) and exponent + mantissa in bits 7..13, exact
  // for normals and subnormals (f16's exponent bias is 15, e4m3's 7); code 0x7F (NaN) becomes
  // an f16 NaN unless the block is known to hold none (kE4M3Finite).
  template <int DT>
  static __m128i e4m3_as_f16(__m128i w) {
    __m128i h = _mm_and_si128(_mm_slli_epi16(w, 7), _mm_set1_epi16((short)0xBF80));
    if constexpr (DT == RKV_DTYPE_FP8_E4M3) {
      __m128i nan = _mm_cmpeq_epi16(_mm_and_si128(h, _mm_set1_epi16(0x7FFF)), _mm_set1_epi16(0x3F80));
      h = _mm_blendv_epi8(h, _mm_set1_epi16(0x7E00), nan);
    }
    return h;
  }
  // Two vectors (elements d .. d + 2W). fp8 widens each 8 codes on its own (load_cvt): 16 codes
  // widened together (a lane-crossing 256-bit widening, its integer ops and a 128-bit extract)
  // cost more on Zen 1 than two 128-bit passes. Bit-identical.
  // Measured: docs/measurements/kernel-constants.md#avx2-fp8-widening-8-codes-at-a-time
  template <int DT>
  static void load_cvt2(const uint8_t* row, int d, V& a, V& b) {
    if constexpr (DT == kBf16Pairs) {
      // a = elements d, d + 2, ..., d + 14; b = d + 1, ..., d + 15 (d % 16 == 0)
      const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + 2 * d));
      a = _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
      b = _mm256_castsi256_ps(_mm256_and_si256(w, _mm256_set1_epi32(static_cast<int>(0xFFFF0000u))));
    } else {
      a = load_cvt<DT>(row, d);
      b = load_cvt<DT>(row, d + W);
    }
  }
  // n floats (n % 16 == 0) from natural to kBf16Pairs order (each 16-element chunk: its even
  // elements, then its odd ones), src to dst, or back in place.
  static void to_pairs(const float* src, float* dst, int64_t n) {
    for (int64_t i = 0; i < n; i += 16) {
      const __m256 a = _mm256_loadu_ps(src + i), b = _mm256_loadu_ps(src + i + 8);
      // per 128-bit lane a0 a2 b0 b2 | a4 a6 b4 b6, then the 64-bit pairs reordered
      const __m256 even = _mm256_shuffle_ps(a, b, 0x88), odd = _mm256_shuffle_ps(a, b, 0xDD);
      _mm256_storeu_ps(dst + i, _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(even), 0xD8)));
      _mm256_storeu_ps(dst + i + 8, _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(odd), 0xD8)));
    }
  }
  static void from_pairs(float* p, int64_t n) {
    for (int64_t i = 0; i < n; i += 16) {
      const __m256 even = _mm256_loadu_ps(p + i), odd = _mm256_loadu_ps(p + i + 8);
      // per 128-bit lane: elements 0-3 | 8-11, then 4-7 | 12-15
      const __m256 lo = _mm256_unpacklo_ps(even, odd), hi = _mm256_unpackhi_ps(even, odd);
      _mm256_storeu_ps(p + i, _mm256_permute2f128_ps(lo, hi, 0x20));
      _mm256_storeu_ps(p + i + 8, _mm256_permute2f128_ps(lo, hi, 0x31));
    }
  }
  static bool has_e4m3_nan(const uint8_t* p, int64_t bytes) {
    // per byte position, the largest magnitude code seen: 0x7F only where a NaN was
    const __m256i m7f = _mm256_set1_epi8(0x7F);
    int64_t i = 0;
    __m256i mx = _mm256_setzero_si256();
    for (; i + 32 <= bytes; i += 32)
      mx = _mm256_max_epu8(mx, _mm256_and_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i)), m7f));
    if (_mm256_movemask_epi8(_mm256_cmpeq_epi8(mx, m7f)) != 0) return true;
    for (; i < bytes; i++)
      if ((p[i] & 0x7F) == 0x7F) return true;
    return false;
  }
};
#include "attention_cpu_impl.h"
}  // namespace avx2
#pragma GCC pop_options

// ---------------------------------------------------------------- AVX-512 (F/BW/VL/DQ)
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")
namespace avx512 {
#include "rkv_reduce_avx512.h"
struct I {
  using V = __m512;
  static constexpr int W = 16;
  static constexpr int kAcc = 16;
  // value tiles of 8 rows (prefill, GQA 8) take 3 vectors: 24 accumulators + 2 x 3 V + 2 P of
  // 32 registers (faster than 2 vectors; bit-identical: same per-element order)
  // Measured: docs/measurements/kernel-constants.md#prefill-value-tiles-of-8-rows-gqa-8
  static constexpr int kPvAcc = 24;
  static constexpr int kRegs = 32;
  static V zero() { return _mm512_setzero_ps(); }
  static V set1(float x) { return _mm512_set1_ps(x); }
  static V load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, V v) { _mm512_storeu_ps(p, v); }
  // the four 128-bit lanes of v to p, p + ld, p + 2 ld, p + 3 ld
  static void store_quads(float* p, int64_t ld, V v) {
    _mm_storeu_ps(p, _mm512_castps512_ps128(v));
    _mm_storeu_ps(p + ld, _mm512_extractf32x4_ps(v, 1));
    _mm_storeu_ps(p + 2 * ld, _mm512_extractf32x4_ps(v, 2));
    _mm_storeu_ps(p + 3 * ld, _mm512_extractf32x4_ps(v, 3));
  }
  static V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static V mul(V a, V b) { return _mm512_mul_ps(a, b); }
  static V add(V a, V b) { return _mm512_add_ps(a, b); }
  static V sub(V a, V b) { return _mm512_sub_ps(a, b); }
  static V max(V a, V b) { return _mm512_max_ps(a, b); }
  static float hsum(V v) { return _mm512_reduce_add_ps(v); }
  static float hmax(V v) { return _mm512_reduce_max_ps(v); }
  // 16 x 16 transpose in registers: r[j] lane i = old r[i] lane j (unpack ps, unpack pd, then
  // 128-bit lanes regrouped twice).
  static void transpose_w(V* r) {
    V t[16];
    for (int i = 0; i < 8; i++) {
      t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
      t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    for (int i = 0; i < 4; i++) {
      const __m512d a = _mm512_castps_pd(t[4 * i]), b = _mm512_castps_pd(t[4 * i + 1]);
      const __m512d c = _mm512_castps_pd(t[4 * i + 2]), d = _mm512_castps_pd(t[4 * i + 3]);
      r[4 * i] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, c));      // rows 4i..4i+3, column 4L of lane L
      r[4 * i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, c));  // column 4L + 1
      r[4 * i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(b, d));  // column 4L + 2
      r[4 * i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(b, d));  // column 4L + 3
    }
    V o[16];
    for (int j = 0; j < 4; j++) {
      const V a = _mm512_shuffle_f32x4(r[j], r[4 + j], 0x88), b = _mm512_shuffle_f32x4(r[j], r[4 + j], 0xDD);
      const V c = _mm512_shuffle_f32x4(r[8 + j], r[12 + j], 0x88), d = _mm512_shuffle_f32x4(r[8 + j], r[12 + j], 0xDD);
      o[j] = _mm512_shuffle_f32x4(a, c, 0x88);
      o[8 + j] = _mm512_shuffle_f32x4(a, c, 0xDD);
      o[4 + j] = _mm512_shuffle_f32x4(b, d, 0x88);
      o[12 + j] = _mm512_shuffle_f32x4(b, d, 0xDD);
    }
    for (int j = 0; j < 16; j++) r[j] = o[j];
  }
  static V exp2(V x) {
    const V lo = _mm512_set1_ps(-125.f);
    __mmask16 keep = _mm512_cmp_ps_mask(x, lo, _CMP_NLT_UQ);  // not (x < -125): keeps NaN
    x = _mm512_max_ps(lo, x);  // second operand wins on NaN: keeps NaN
    V n = _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    V f = _mm512_sub_ps(x, n);
    V p = _mm512_set1_ps(1.5403530393381609e-4f);
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.3333558146428443e-3f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(9.6181291076284772e-3f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(5.5504108664821580e-2f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(2.4022650695910071e-1f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(6.9314718055994531e-1f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.f));
    return _mm512_maskz_mov_ps(keep, _mm512_scalef_ps(p, n));
  }
  static V tanh(V y) {
    y = _mm512_min_ps(_mm512_max_ps(y, _mm512_set1_ps(-9.f)), _mm512_set1_ps(9.f));
    V e = exp2(_mm512_mul_ps(y, _mm512_set1_ps(2.f * kLog2e)));
    V one = _mm512_set1_ps(1.f);
    return _mm512_sub_ps(one, _mm512_div_ps(_mm512_set1_ps(2.f), _mm512_add_ps(e, one)));
  }
  // logit_base2 (rkv_softmax.h) lane-wise
  static V logit2(V s, float cap) { return _mm512_mul_ps(_mm512_set1_ps(cap * kLog2e), tanh(s)); }
  // lane j of the result = sum of the lanes of acc[j] (rkv_reduce_avx512.h)
  static V reduce_w(const V* a) { return reduce_16x16(a); }
  static V reduce_max_w(const V* a) { return reduce_16x16<MaxOp>(a); }
  template <int DT>
  static V load_cvt(const uint8_t* row, int d) {
    if constexpr (DT == RKV_DTYPE_F32) {
      return _mm512_loadu_ps(reinterpret_cast<const float*>(row) + d);
    } else if constexpr (DT == RKV_DTYPE_F16) {
      return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + 2 * d)));
    } else if constexpr (DT == RKV_DTYPE_BF16 || DT == kBf16Pairs) {
      __m512i w = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + 2 * d)));
      return _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
    } else if constexpr (DT == RKV_DTYPE_FP8_E5M2) {
      __m256i w = _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + d)));
      return _mm512_cvtph_ps(_mm256_slli_epi16(w, 8));
    } else {
      // sign-extended byte << 7: sign lands in bit 15 (and 14, cleared), magnitude in bits 7..13
      __m256i w = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + d)));
      __m256i h = _mm256_and_si256(_mm256_slli_epi16(w, 7), _mm256_set1_epi16((short)0xBF80));
      if constexpr (DT == RKV_DTYPE_FP8_E4M3) {
        __mmask16 nan =
            _mm256_cmpeq_epi16_mask(_mm256_and_si256(h, _mm256_set1_epi16(0x7FFF)), _mm256_set1_epi16(0x3F80));
        h = _mm256_mask_mov_epi16(h, nan, _mm256_set1_epi16(0x7E00));
      }
      return _mm512_cvtph_ps(h);
    }
  }
  // Two vectors (elements d .. d + 2W): fp8 widens 32 codes with one set of integer ops.
  template <int DT>
  static void load_cvt2(const uint8_t* row, int d, V& a, V& b) {
    if constexpr (DT == RKV_DTYPE_FP8_E4M3 || DT == kE4M3Finite || DT == RKV_DTYPE_FP8_E5M2) {
      __m512i w = _mm512_cvtepi8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + d)));
      __m512i h;
      if constexpr (DT == RKV_DTYPE_FP8_E5M2) {
        h = _mm512_slli_epi16(w, 8);
      } else {
        h = _mm512_and_si512(_mm512_slli_epi16(w, 7), _mm512_set1_epi16((short)0xBF80));
        if constexpr (DT == RKV_DTYPE_FP8_E4M3) {
          __mmask32 nan = _mm512_cmpeq_epi16_mask(_mm512_and_si512(h, _mm512_set1_epi16(0x7FFF)),
                                                  _mm512_set1_epi16(0x3F80));
          h = _mm512_mask_mov_epi16(h, nan, _mm512_set1_epi16(0x7E00));
        }
      }
      a = _mm512_cvtph_ps(_mm512_castsi512_si256(h));
      b = _mm512_cvtph_ps(_mm512_extracti64x4_epi64(h, 1));
    } else if constexpr (DT == kBf16Pairs) {
      // a = elements d, d + 2, ..., d + 30; b = d + 1, ..., d + 31 (d % 32 == 0)
      const __m512i w = _mm512_loadu_si512(row + 2 * d);
      a = _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
      b = _mm512_castsi512_ps(_mm512_and_si512(w, _mm512_set1_epi32(static_cast<int>(0xFFFF0000u))));
    } else {
      a = load_cvt<DT>(row, d);
      b = load_cvt<DT>(row, d + W);
    }
  }
  // n floats (n % 32 == 0) from natural to kBf16Pairs order (each 32-element chunk: its even
  // elements, then its odd ones), src to dst, or back in place.
  static void to_pairs(const float* src, float* dst, int64_t n) {
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    permute_chunks(src, dst, n, even, _mm512_add_epi32(even, _mm512_set1_epi32(1)));
  }
  static void from_pairs(float* p, int64_t n) {
    const __m512i lo = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
    permute_chunks(p, p, n, lo, _mm512_add_epi32(lo, _mm512_set1_epi32(8)));
  }
  // each 32-float chunk (a, b) of src to (permute(a, b) by first, by second) in dst (may be src)
  static void permute_chunks(const float* src, float* dst, int64_t n, __m512i first, __m512i second) {
    for (int64_t i = 0; i < n; i += 32) {
      const __m512 a = _mm512_loadu_ps(src + i), b = _mm512_loadu_ps(src + i + 16);
      _mm512_storeu_ps(dst + i, _mm512_permutex2var_ps(a, first, b));
      _mm512_storeu_ps(dst + i + 16, _mm512_permutex2var_ps(a, second, b));
    }
  }
  // A byte max over whole vectors (two chains), one compare at the end; only the tail is masked.
  // (A masked load, compare and mask-or per 64 bytes was 20% of fp8 decode in cache on Zen 5.)
  static bool has_e4m3_nan(const uint8_t* p, int64_t bytes) {
    const __m512i m7f = _mm512_set1_epi8(0x7F);
    __m512i m0 = _mm512_setzero_si512(), m1 = m0;
    int64_t i = 0;
    for (; i + 128 <= bytes; i += 128) {
      m0 = _mm512_max_epu8(m0, _mm512_and_si512(_mm512_loadu_si512(p + i), m7f));
      m1 = _mm512_max_epu8(m1, _mm512_and_si512(_mm512_loadu_si512(p + i + 64), m7f));
    }
    for (; i < bytes; i += 64) {
      const __mmask64 lm = bytes - i >= 64 ? ~0ULL : ((1ULL << (bytes - i)) - 1);
      m0 = _mm512_max_epu8(m0, _mm512_and_si512(_mm512_maskz_loadu_epi8(lm, p + i), m7f));
    }
    return _mm512_cmpeq_epi8_mask(_mm512_max_epu8(m0, m1), m7f) != 0;
  }
};
#include "attention_cpu_impl.h"
}  // namespace avx512
#pragma GCC pop_options

// ---------------------------------------------------------------- AVX-512 with VBMI: e4m3 decode
// The AVX-512 core plus byte-table widening of e4m3 rows (kE4M3Lut), for decode only: its own
// target (vpermt2b is AVX512-VBMI, which Skylake-X-class AVX-512 CPUs lack). Only
// attend_token_major_vbmi is used from it; the rest of the included core is left uninstantiated.
// The lookups and interleaves cost less than the f16 route's vcvtph2ps.
// Measured: docs/measurements/kernel-constants.md#e4m3-decode-by-byte-tables-avx512-vbmi
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx512vbmi,avx2,fma,f16c")
namespace avx512vbmi {
// bf16 bits of every e4m3 magnitude code m (0..127) at 1/256 of its value, as the f16 route
// gives (Isa::e4m3_factor): normals (exponent e >= 1) 2^(e - 15) (1 + f / 8), subnormals
// f 2^-17, code 127 NaN. Low bytes, then high bytes.
struct E4M3Table {
  alignas(64) uint8_t lo[128], hi[128];
};
constexpr uint16_t e4m3_bf16_bits(int m) {
  const int e = m >> 3, f = m & 7;
  if (m == 127) return 0x7FC0;
  if (e > 0) return (uint16_t)((e + 112) << 7 | f << 4);
  if (f == 0) return 0;
  const int p = f >= 4 ? 2 : f >= 2 ? 1 : 0;  // f = 2^p (1 + frac)
  return (uint16_t)((110 + p) << 7 | ((f << (7 - p)) & 0x7F));
}
constexpr E4M3Table make_e4m3_table() {
  E4M3Table t{};
  for (int m = 0; m < 128; m++) {
    t.lo[m] = (uint8_t)(e4m3_bf16_bits(m) & 0xFF);
    t.hi[m] = (uint8_t)(e4m3_bf16_bits(m) >> 8);
  }
  return t;
}
constexpr E4M3Table kE4M3Table = make_e4m3_table();

struct I : avx512::I {
  // 64 e4m3 codes from row + d (d % 64 == 0) as four vectors: the low and high bytes of each
  // code's bf16 by 128-entry lookups (the code's sign bit then or-ed into the high byte), the two
  // interleaved into words within each 128-bit lane, the words into the top halves of f32 lanes.
  // v[c] lane L holds elements d + 16 L + 4 c .. + 3: the chunk's 4-element groups transposed.
  static void load_cvt4(const uint8_t* row, int d, V* v) {
    const __m512i x = _mm512_loadu_si512(row + d);
    const __m512i lo = _mm512_permutex2var_epi8(_mm512_load_si512(kE4M3Table.lo), x,
                                                _mm512_load_si512(kE4M3Table.lo + 64));
    __m512i hi = _mm512_permutex2var_epi8(_mm512_load_si512(kE4M3Table.hi), x, _mm512_load_si512(kE4M3Table.hi + 64));
    hi = _mm512_ternarylogic_epi32(hi, x, _mm512_set1_epi8((char)0x80), 0xF8);  // hi | (x & 0x80)
    const __m512i w0 = _mm512_unpacklo_epi8(lo, hi), w1 = _mm512_unpackhi_epi8(lo, hi), z = _mm512_setzero_si512();
    v[0] = _mm512_castsi512_ps(_mm512_unpacklo_epi16(z, w0));
    v[1] = _mm512_castsi512_ps(_mm512_unpackhi_epi16(z, w0));
    v[2] = _mm512_castsi512_ps(_mm512_unpacklo_epi16(z, w1));
    v[3] = _mm512_castsi512_ps(_mm512_unpackhi_epi16(z, w1));
  }
  // n floats (n % 64 == 0), src to dst (may be src), each 64-float chunk in load_cvt4's order: its
  // four vectors' 128-bit lanes transposed, which is its own inverse.
  static void to_lut_order(const float* src, float* dst, int64_t n) {
    for (int64_t i = 0; i < n; i += 64) {
      const V a0 = _mm512_loadu_ps(src + i), a1 = _mm512_loadu_ps(src + i + 16);
      const V a2 = _mm512_loadu_ps(src + i + 32), a3 = _mm512_loadu_ps(src + i + 48);
      const V t0 = _mm512_shuffle_f32x4(a0, a1, 0x44), t1 = _mm512_shuffle_f32x4(a0, a1, 0xEE);
      const V t2 = _mm512_shuffle_f32x4(a2, a3, 0x44), t3 = _mm512_shuffle_f32x4(a2, a3, 0xEE);
      _mm512_storeu_ps(dst + i, _mm512_shuffle_f32x4(t0, t2, 0x88));
      _mm512_storeu_ps(dst + i + 16, _mm512_shuffle_f32x4(t0, t2, 0xDD));
      _mm512_storeu_ps(dst + i + 32, _mm512_shuffle_f32x4(t1, t3, 0x88));
      _mm512_storeu_ps(dst + i + 48, _mm512_shuffle_f32x4(t1, t3, 0xDD));
    }
  }
};
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#include "attention_cpu_impl.h"
#pragma GCC diagnostic pop

// Decode: e4m3 KV by table lookup where it fits, everything else as the AVX-512 core.
static void attend_token_major_vbmi(const SeqView& s, int nh, const float* Q, int R, int64_t t0, int64_t t1,
                                    RowLimits lim, float soft_cap, float* O, float* m, float* l, const Scratch& sc) {
  if (s.dtype == RKV_DTYPE_FP8_E4M3 && sc.q_pairs != nullptr && e4m3_lut_fit(R, s.head_dim))
    return attend_e4m3_lut<>(s, nh, Q, R, t0, t1, lim, soft_cap, O, m, l, sc);
  avx512::attend_token_major(s, nh, Q, R, t0, t1, lim, soft_cap, O, m, l, sc);
}
}  // namespace avx512vbmi
#pragma GCC pop_options
#endif  // __x86_64__

// ---------------------------------------------------------------- dispatch

Isa choose_isa(int head_dim) {
  const Isa scalar_isa{"scalar", 1, &scalar::attend_rows, &scalar::attend_token_major, 1.f};
#if defined(__x86_64__)
  const CpuIsa best = cpu_isa();
  if (best >= kIsaAvx512 && head_dim % 16 == 0)
    return Isa{"avx512", 16, &avx512::attend_rows,
               cpu_avx512_vbmi() ? &avx512vbmi::attend_token_major_vbmi : &avx512::attend_token_major, 256.f};
  if (best >= kIsaAvx2 && head_dim % 8 == 0) return Isa{"avx2", 8, &avx2::attend_rows, &avx2::attend_token_major, 256.f};
#else
  (void)head_dim;
#endif
  return scalar_isa;
}

}  // namespace attn
}  // namespace rkv
