// Element-wise dtype conversion and FP8 quantize/dequantize on the CPU.
//
// The vector code (AVX-512, compiled per function with target attributes and chosen at run
// time, so a portable x86-64-v3 build still uses it) reimplements the scalar helpers of
// rkv_dtype.h lane-wise in integer arithmetic and must agree with them bit for bit; the
// native tests check this on every dtype pair with random bit patterns.
#include <omp.h>

#include <cmath>
#include <cstdlib>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#define RKV_HAVE_X86 1
#endif
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
// GCC 12's AVX-512 headers build many intrinsics on a self-initialized _mm512_undefined_*
// operand, which -W(maybe-)uninitialized reports once inlined (GCC bug 105593, fixed in 13).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

#include "kv_convert.h"
#include "rkv_common.h"
#include "rkv_isa.h"
#include "rkv_kv.h"
#include "rkv_parallel.h"
#include "stream_store.h"

namespace rkv {
namespace {

// ---- scalar path: the reference helpers in a loop ----

template <int SD, int DD, int MODE>
void row_scalar(const void* src, void* dst, int64_t n, float scale) {
  for (int64_t i = 0; i < n; ++i) convert_element(src, SD, i, dst, DD, i, MODE, scale);
}

void row_copy(const void* src, void* dst, int64_t n, float) { std::memcpy(dst, src, (size_t)n); }
void row_copy2(const void* src, void* dst, int64_t n, float) { std::memcpy(dst, src, (size_t)n * 2); }
void row_copy4(const void* src, void* dst, int64_t n, float) { std::memcpy(dst, src, (size_t)n * 4); }

// Quantizing to fp8 is compute-heavy enough that the out-of-order window covers only a few
// source lines, so the vector paths request misses kFp8PrefetchBytes ahead (prefetcht0; past
// the end of the row is harmless, prefetches never fault); 2 KiB helped most consistently.
// Measured: docs/measurements/kernel-constants.md#fp8-conversion-prefetch-distance
constexpr int64_t kFp8PrefetchBytes = 2048;
// Where far_prefetch_l2() (Intel CPUs), the vector paths also prefetch kFp8FarPrefetchBytes
// ahead into L2 (prefetcht1): faster on Intel, slower on Zen 5.
// Measured: docs/measurements/kernel-constants.md#fp8-conversion-far-prefetch-into-l2
constexpr int64_t kFp8FarPrefetchBytes = 8192;
// The distance the rows use (0: none), decided once at load: a scatter's rows are 1-2 KiB, too
// short to ask per row.
// Measured: docs/measurements/kernel-constants.md#fp8-conversion-far-prefetch-decided-once
const int64_t g_fp8_far_prefetch = far_prefetch_l2() ? kFp8FarPrefetchBytes : 0;

// The constants the vector fp8 encoders round with: mantissa bits, exponent bias, and as f32
// bits the largest finite value and the smallest normal.
template <int DD>
struct Fp8Format;
template <>
struct Fp8Format<RKV_DTYPE_FP8_E4M3> {
  static constexpr int kMantissaBits = 3, kBias = 7;
  static constexpr uint32_t kMaxBits = 0x43E00000u, kMinNormalBits = 0x3C800000u;  // 448, 2^-6
};
template <>
struct Fp8Format<RKV_DTYPE_FP8_E5M2> {
  static constexpr int kMantissaBits = 2, kBias = 15;
  static constexpr uint32_t kMaxBits = 0x47600000u, kMinNormalBits = 0x38800000u;  // 57344, 2^-14
};

// The constants the vector encoders round with, for lanes holding the top bits of an f32 with
// SrcMantissa mantissa bits (23: f32 lanes, 7: bf16 lanes): the bits dropped, the largest finite
// value and the smallest normal in lane units, the normal range's round-to-nearest-even add with
// the exponent rebias folded in, and the subnormal range's addend for the FP adder (an f32
// 2^(24 - bias - mbits), whose ulp is the smallest subnormal).
template <int DD, int SrcMantissa>
struct Fp8Rounding {
  static constexpr int kDrop = SrcMantissa - Fp8Format<DD>::kMantissaBits;
  static constexpr uint32_t kMax = Fp8Format<DD>::kMaxBits >> (23 - SrcMantissa);
  static constexpr uint32_t kMinNormal = Fp8Format<DD>::kMinNormalBits >> (23 - SrcMantissa);
  static constexpr uint32_t kRoundRebias =
      ((1u << (kDrop - 1)) - 1u) - ((uint32_t)(127 - Fp8Format<DD>::kBias) << SrcMantissa);
  static constexpr uint32_t kSubnormalMagic =
      (uint32_t)(23 + 1 - Fp8Format<DD>::kBias - Fp8Format<DD>::kMantissaBits + 127) << 23;
};

#if RKV_HAVE_X86
#define RKV_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,f16c,fma")))
#define RKV_AVX512_INLINE RKV_AVX512 __attribute__((always_inline)) inline

RKV_AVX512_INLINE __m512i set1(uint32_t v) { return _mm512_set1_epi32((int)v); }

// f16 -> f32. vcvtph2ps is exact; NaN lanes are rebuilt without quieting, like f16_to_float.
RKV_AVX512_INLINE __m512 load_f16(const uint16_t* p) {
  __m256i h = _mm256_loadu_si256((const __m256i*)p);
  __m512 f = _mm512_cvtph_ps(h);
  __m512i w = _mm512_cvtepu16_epi32(h);
  __mmask16 nan = _mm512_cmpgt_epi32_mask(_mm512_and_si512(w, set1(0x7FFF)), set1(0x7C00));
  if (nan) {
    __m512i bits = _mm512_or_si512(_mm512_slli_epi32(_mm512_and_si512(w, set1(0x8000)), 16),
                                   _mm512_or_si512(set1(0x7F800000u), _mm512_slli_epi32(_mm512_and_si512(w, set1(0x3FF)), 13)));
    f = _mm512_mask_mov_ps(f, nan, _mm512_castsi512_ps(bits));
  }
  return f;
}

RKV_AVX512_INLINE __m512 load_bf16(const uint16_t* p) {
  __m512i w = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i*)p));
  return _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
}

// e4m3 -> f32: normal codes rebias the exponent (7 -> 127), subnormals are man * 2^-9,
// S.1111.111 is NaN (the format has no infinities).
RKV_AVX512_INLINE __m512 load_e4m3(const uint8_t* p) {
  __m512i c = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i*)p));
  __m512i sign = _mm512_slli_epi32(_mm512_and_si512(c, set1(0x80)), 24);
  __m512i m7 = _mm512_and_si512(c, set1(0x7F));
  __m512i bits = _mm512_add_epi32(_mm512_slli_epi32(m7, 20), set1(120u << 23));
  __mmask16 sub = _mm512_cmplt_epi32_mask(m7, set1(8));
  __m512 subv = _mm512_mul_ps(_mm512_cvtepi32_ps(m7), _mm512_set1_ps(0.001953125f));
  bits = _mm512_mask_mov_epi32(bits, sub, _mm512_castps_si512(subv));
  bits = _mm512_mask_mov_epi32(bits, _mm512_cmpeq_epi32_mask(m7, set1(0x7F)), set1(0x7FC00000u));
  return _mm512_castsi512_ps(_mm512_or_si512(bits, sign));
}

// e5m2 -> f32: rebias 15 -> 127, subnormals man * 2^-16, exponent 31 is inf / NaN.
RKV_AVX512_INLINE __m512 load_e5m2(const uint8_t* p) {
  __m512i c = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i*)p));
  __m512i sign = _mm512_slli_epi32(_mm512_and_si512(c, set1(0x80)), 24);
  __m512i m7 = _mm512_and_si512(c, set1(0x7F));
  __m512i bits = _mm512_add_epi32(_mm512_slli_epi32(m7, 21), set1(112u << 23));
  __mmask16 sub = _mm512_cmplt_epi32_mask(m7, set1(4));
  __m512 subv = _mm512_mul_ps(_mm512_cvtepi32_ps(m7), _mm512_set1_ps(1.52587890625e-05f));
  bits = _mm512_mask_mov_epi32(bits, sub, _mm512_castps_si512(subv));
  __m512i special = _mm512_or_si512(set1(0x7F800000u), _mm512_slli_epi32(_mm512_and_si512(c, set1(3)), 21));
  bits = _mm512_mask_mov_epi32(bits, _mm512_cmpge_epi32_mask(m7, set1(0x7C)), special);
  return _mm512_castsi512_ps(_mm512_or_si512(bits, sign));
}

template <int SD>
RKV_AVX512_INLINE __m512 load16(const void* src, int64_t i) {
  if constexpr (SD == RKV_DTYPE_F32) return _mm512_loadu_ps((const float*)src + i);
  else if constexpr (SD == RKV_DTYPE_F16) return load_f16((const uint16_t*)src + i);
  else if constexpr (SD == RKV_DTYPE_BF16) return load_bf16((const uint16_t*)src + i);
  else if constexpr (SD == RKV_DTYPE_FP8_E4M3) return load_e4m3((const uint8_t*)src + i);
  else return load_e5m2((const uint8_t*)src + i);
}

// f32 -> f16 with vcvtps2ph (IEEE round to nearest even; NaN -> quiet NaN keeping the top
// payload bits, which is what float_to_f16 computes).
RKV_AVX512_INLINE void store_f16(uint16_t* p, __m512 v) {
  _mm256_storeu_si256((__m256i*)p, _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}

// f32 -> bf16 in integers (vcvtneps2bf16 would flush subnormals): RNE on the top 16 bits,
// NaN -> quiet NaN.
RKV_AVX512_INLINE void store_bf16(uint16_t* p, __m512 v) {
  __m512i u = _mm512_castps_si512(v);
  __mmask16 nan = _mm512_cmpgt_epi32_mask(_mm512_and_si512(u, set1(0x7FFFFFFFu)), set1(0x7F800000u));
  __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), set1(1));
  __m512i r = _mm512_srli_epi32(_mm512_add_epi32(u, _mm512_add_epi32(lsb, set1(0x7FFF))), 16);
  r = _mm512_mask_mov_epi32(r, nan, _mm512_or_si512(_mm512_srli_epi32(u, 16), set1(0x40)));
  _mm256_storeu_si256((__m256i*)p, _mm512_cvtepi32_epi16(r));
}

// |x| -> fp8 magnitude codes in 16 int32 lanes, a2_fp8_magnitude_codes's algorithm: |x|
// clamped to the largest finite value, an integer round-to-nearest-even with the rebias
// folded in for the normal range, the FP adder's rounding for the subnormal range. The clamp
// is vminps with |x| second, which returns its second operand when one is a NaN: a NaN stays
// a NaN and comes out as a code above 0xFF (its exponent is all ones), which the
// unsigned-saturating packs turn into 0xFF. (vrangeps would drop a quiet NaN.)
template <int DD>
RKV_AVX512_INLINE __m512i fp8_magnitude_codes(__m512 x) {
  using R = Fp8Rounding<DD, 23>;
  constexpr uint32_t MAXF = R::kMax, MINN = R::kMinNormal, magic = R::kSubnormalMagic, round_rebias = R::kRoundRebias;
  constexpr int drop = R::kDrop;
  __m512 ax = _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(x), set1(0x7FFFFFFFu)));
  __m512i c = _mm512_castps_si512(_mm512_min_ps(_mm512_castsi512_ps(set1(MAXF)), ax));
  __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(c, drop), set1(1));
  __m512i rn = _mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(c, lsb), set1(round_rebias)), drop);
  __m512 fs = _mm512_add_ps(_mm512_castsi512_ps(c), _mm512_castsi512_ps(set1(magic)));
  __m512i rs = _mm512_sub_epi32(_mm512_castps_si512(fs), set1(magic));
  return _mm512_mask_mov_epi32(rs, _mm512_cmpge_epu32_mask(c, set1(MINN)), rn);
}

// 16 fp8 codes (the tails of a row): sign or'ed in, NaN (a magnitude code above 0xFF) -> 0x7F.
template <int DD>
RKV_AVX512_INLINE void store_fp8(uint8_t* p, __m512 v) {
  __m512i u = _mm512_castps_si512(v);
  // codes | ((u >> 24) & 0x80)
  __m512i r = _mm512_ternarylogic_epi32(fp8_magnitude_codes<DD>(v), _mm512_srli_epi32(u, 24),
                                        set1(0x80), 0xF8);
  __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, set1(0x7FFFFFFFu)), set1(0x7F800000u));
  _mm_storeu_si128((__m128i*)p, _mm512_cvtepi32_epi8(_mm512_mask_mov_epi32(r, nan, set1(0x7F))));
}

// 64 fp8 codes from four vectors of 16 in one 64-byte store: magnitudes packed to bytes,
// signs packed with the same signed-saturating packs (a saturated int32 keeps its sign) and
// or'ed in once per 64 values. Finite codes are at most 0x7E | 0x80, so a byte of 0xFF is a
// NaN of either sign: it becomes 0x7F.
// Measured: docs/measurements/kernel-constants.md#fp8-conversion-64-codes-a-store
template <int DD>
RKV_AVX512_INLINE void store_fp8x64(uint8_t* p, __m512 v0, __m512 v1, __m512 v2, __m512 v3) {
  __m512i codes = _mm512_packus_epi16(
      _mm512_packus_epi32(fp8_magnitude_codes<DD>(v0), fp8_magnitude_codes<DD>(v1)),
      _mm512_packus_epi32(fp8_magnitude_codes<DD>(v2), fp8_magnitude_codes<DD>(v3)));
  __m512i signs = _mm512_packs_epi16(_mm512_packs_epi32(_mm512_castps_si512(v0), _mm512_castps_si512(v1)),
                                     _mm512_packs_epi32(_mm512_castps_si512(v2), _mm512_castps_si512(v3)));
  // codes | (signs & 0x80)
  __m512i b = _mm512_ternarylogic_epi32(codes, signs, _mm512_set1_epi8((char)0x80), 0xF8);
  b = _mm512_mask_mov_epi8(b, _mm512_cmpeq_epi8_mask(b, _mm512_set1_epi8(-1)), _mm512_set1_epi8(0x7F));
  // per 128-bit lane L, dword j holds vector j's elements 4L..4L+3: back to element order
  b = _mm512_permutexvar_epi32(_mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15), b);
  _mm512_storeu_si512((void*)p, b);
}

// bf16 -> fp8 at scale 1 in 16-bit lanes, 32 values a vector: AVX2's a2_bf16_fp8_magnitudes
// (below) on 512 bits, with compare masks, twice the values a vector of the f32 route. Returns the
// magnitude codes in 16-bit lanes.
// Measured: docs/measurements/kernel-constants.md#bf16-to-fp8-in-16-bit-lanes-avx-512
template <int DD>
RKV_AVX512_INLINE __m512i bf16_fp8_magnitudes(__m512i x) {
  using R = Fp8Rounding<DD, 7>;
  constexpr short kMax = (short)R::kMax, kMinNormal = (short)R::kMinNormal, round_rebias = (short)R::kRoundRebias;
  constexpr uint32_t magic = R::kSubnormalMagic;
  constexpr int drop = R::kDrop;
  __m512i c = _mm512_min_epu16(_mm512_and_si512(x, _mm512_set1_epi16(0x7FFF)), _mm512_set1_epi16(kMax));
  __m512i lsb = _mm512_and_si512(_mm512_srli_epi16(c, drop), _mm512_set1_epi16(1));
  __m512i rn = _mm512_srli_epi16(_mm512_add_epi16(_mm512_add_epi16(c, lsb), _mm512_set1_epi16(round_rebias)), drop);
  const __m512i zero = _mm512_setzero_si512();
  const __m512 vmagic = _mm512_castsi512_ps(set1(magic));
  __m512i lo = _mm512_sub_epi32(_mm512_castps_si512(_mm512_add_ps(_mm512_castsi512_ps(_mm512_unpacklo_epi16(zero, c)), vmagic)), set1(magic));
  __m512i hi = _mm512_sub_epi32(_mm512_castps_si512(_mm512_add_ps(_mm512_castsi512_ps(_mm512_unpackhi_epi16(zero, c)), vmagic)), set1(magic));
  __m512i rs = _mm512_packus_epi32(lo, hi);  // undoes the interleave (per 128-bit lane); normal lanes are replaced next
  return _mm512_mask_blend_epi16(_mm512_cmpgt_epu16_mask(c, _mm512_set1_epi16((short)(kMinNormal - 1))), rs, rn);
}

// 64 bf16 values -> 64 fp8 codes (scale 1) in one 64-byte store. The byte pack interleaves the
// two vectors by qword per 128-bit lane; one permute puts them back in order, after which the
// sign and NaN masks of the two vectors (one bit per element) are the bytes' masks as they are.
// NaN -> 0x7F, as the f32 route gives.
template <int DD>
RKV_AVX512_INLINE void bf16_to_fp8x64(const uint16_t* s, uint8_t* p) {
  __m512i x0 = _mm512_loadu_si512((const void*)s), x1 = _mm512_loadu_si512((const void*)(s + 32));
  __m512i b = _mm512_packus_epi16(bf16_fp8_magnitudes<DD>(x0), bf16_fp8_magnitudes<DD>(x1));
  b = _mm512_permutexvar_epi64(_mm512_setr_epi64(0, 2, 4, 6, 1, 3, 5, 7), b);
  const __m512i abs_mask = _mm512_set1_epi16(0x7FFF), inf = _mm512_set1_epi16(0x7F80);
  const __mmask64 sign = _mm512_kunpackd(_mm512_movepi16_mask(x1), _mm512_movepi16_mask(x0));
  const __mmask64 nan = _mm512_kunpackd(_mm512_cmpgt_epi16_mask(_mm512_and_si512(x1, abs_mask), inf),
                                        _mm512_cmpgt_epi16_mask(_mm512_and_si512(x0, abs_mask), inf));
  b = _mm512_mask_mov_epi8(b, sign, _mm512_or_si512(b, _mm512_set1_epi8((char)0x80)));
  _mm512_storeu_si512((void*)p, _mm512_mask_mov_epi8(b, nan, _mm512_set1_epi8(0x7F)));
}

template <int DD>
RKV_AVX512_INLINE void store16(void* dst, int64_t i, __m512 v) {
  if constexpr (DD == RKV_DTYPE_F32) _mm512_storeu_ps((float*)dst + i, v);
  else if constexpr (DD == RKV_DTYPE_F16) store_f16((uint16_t*)dst + i, v);
  else if constexpr (DD == RKV_DTYPE_BF16) store_bf16((uint16_t*)dst + i, v);
  else store_fp8<DD>((uint8_t*)dst + i, v);
}

template <int SD, int DD, int MODE>
RKV_AVX512 void row_avx512(const void* src, void* dst, int64_t n, float scale) {
  const __m512 vs = _mm512_set1_ps(scale);
  int64_t i = 0;
  if constexpr (DD == RKV_DTYPE_FP8_E4M3 || DD == RKV_DTYPE_FP8_E5M2) {
    constexpr int ss = dtype_size(SD);
    const int64_t far = g_fp8_far_prefetch;  // read once: the row's stores may alias it
    for (; i + 64 <= n; i += 64) {
      prefetch_stream(static_cast<const char*>(src) + i * ss, 64 * ss, kFp8PrefetchBytes, far);
      if constexpr (SD == RKV_DTYPE_BF16 && MODE == kScaleNone) {
        bf16_to_fp8x64<DD>((const uint16_t*)src + i, (uint8_t*)dst + i);
      } else {
        __m512 x[4];
        for (int j = 0; j < 4; j++) {
          x[j] = load16<SD>(src, i + 16 * j);
          if constexpr (MODE == kScaleMul) x[j] = _mm512_mul_ps(x[j], vs);
          else if constexpr (MODE == kScaleDiv) x[j] = _mm512_div_ps(x[j], vs);
        }
        store_fp8x64<DD>((uint8_t*)dst + i, x[0], x[1], x[2], x[3]);
      }
    }
  }
  for (; i + 32 <= n; i += 32) {
    __m512 x0 = load16<SD>(src, i);
    __m512 x1 = load16<SD>(src, i + 16);
    if constexpr (MODE == kScaleMul) {
      x0 = _mm512_mul_ps(x0, vs);
      x1 = _mm512_mul_ps(x1, vs);
    } else if constexpr (MODE == kScaleDiv) {
      x0 = _mm512_div_ps(x0, vs);
      x1 = _mm512_div_ps(x1, vs);
    }
    store16<DD>(dst, i, x0);
    store16<DD>(dst, i + 16, x1);
  }
  for (; i + 16 <= n; i += 16) {
    __m512 x = load16<SD>(src, i);
    if constexpr (MODE == kScaleMul) x = _mm512_mul_ps(x, vs);
    else if constexpr (MODE == kScaleDiv) x = _mm512_div_ps(x, vs);
    store16<DD>(dst, i, x);
  }
  for (; i < n; ++i) convert_element(src, SD, i, dst, DD, i, MODE, scale);
}


// ---- AVX2 (+F16C): the same lane-wise algorithm on 8 lanes, compare masks as vectors ----
#define RKV_AVX2 __attribute__((target("avx2,f16c,fma")))
#define RKV_AVX2_INLINE RKV_AVX2 __attribute__((always_inline)) inline

RKV_AVX2_INLINE __m256i s1(uint32_t v) { return _mm256_set1_epi32((int)v); }
// a >= b for non-negative int32 lanes
RKV_AVX2_INLINE __m256i ge(__m256i a, uint32_t b) { return _mm256_cmpgt_epi32(a, s1(b - 1)); }
RKV_AVX2_INLINE __m256i sel(__m256i mask, __m256i yes, __m256i no) { return _mm256_blendv_epi8(no, yes, mask); }

RKV_AVX2_INLINE __m256 a2_load_f16(const uint16_t* p) {
  __m128i h = _mm_loadu_si128((const __m128i*)p);
  __m256 f = _mm256_cvtph_ps(h);
  __m256i w = _mm256_cvtepu16_epi32(h);
  __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(w, s1(0x7FFF)), s1(0x7C00));
  __m256i bits = _mm256_or_si256(_mm256_slli_epi32(_mm256_and_si256(w, s1(0x8000)), 16),
                                 _mm256_or_si256(s1(0x7F800000u), _mm256_slli_epi32(_mm256_and_si256(w, s1(0x3FF)), 13)));
  return _mm256_castsi256_ps(sel(nan, bits, _mm256_castps_si256(f)));
}

RKV_AVX2_INLINE __m256 a2_load_bf16(const uint16_t* p) {
  __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i*)p));
  return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
}

template <int MB, int BIAS>
RKV_AVX2_INLINE __m256 a2_load_fp8(const uint8_t* p) {
  __m256i c = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i*)p));
  __m256i sign = _mm256_slli_epi32(_mm256_and_si256(c, s1(0x80)), 24);
  __m256i m7 = _mm256_and_si256(c, s1(0x7F));
  __m256i bits = _mm256_add_epi32(_mm256_slli_epi32(m7, 23 - MB), s1((uint32_t)(127 - BIAS) << 23));
  __m256i sub = _mm256_cmpgt_epi32(s1(1u << MB), m7);
  const float min_sub = MB == 3 ? 0.001953125f : 1.52587890625e-05f;
  __m256 subv = _mm256_mul_ps(_mm256_cvtepi32_ps(m7), _mm256_set1_ps(min_sub));
  bits = sel(sub, _mm256_castps_si256(subv), bits);
  if constexpr (MB == 3) {
    bits = sel(_mm256_cmpeq_epi32(m7, s1(0x7F)), s1(0x7FC00000u), bits);
  } else {
    __m256i special = _mm256_or_si256(s1(0x7F800000u), _mm256_slli_epi32(_mm256_and_si256(c, s1(3)), 21));
    bits = sel(ge(m7, 0x7C), special, bits);
  }
  return _mm256_castsi256_ps(_mm256_or_si256(bits, sign));
}

template <int SD>
RKV_AVX2_INLINE __m256 a2_load8(const void* src, int64_t i) {
  if constexpr (SD == RKV_DTYPE_F32) return _mm256_loadu_ps((const float*)src + i);
  else if constexpr (SD == RKV_DTYPE_F16) return a2_load_f16((const uint16_t*)src + i);
  else if constexpr (SD == RKV_DTYPE_BF16) return a2_load_bf16((const uint16_t*)src + i);
  else if constexpr (SD == RKV_DTYPE_FP8_E4M3) return a2_load_fp8<3, 7>((const uint8_t*)src + i);
  else return a2_load_fp8<2, 15>((const uint8_t*)src + i);
}

// 8 int32 lanes holding values <= 0xFFFF -> 8 uint16
RKV_AVX2_INLINE __m128i a2_pack16(__m256i r) {
  __m256i p = _mm256_packus_epi32(r, r);  // per 128-bit lane: r0..3 r0..3 | r4..7 r4..7
  return _mm256_castsi256_si128(_mm256_permute4x64_epi64(p, 0x08));
}

RKV_AVX2_INLINE void a2_store_bf16(uint16_t* p, __m256 v) {
  __m256i u = _mm256_castps_si256(v);
  __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, s1(0x7FFFFFFFu)), s1(0x7F800000u));
  __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), s1(1));
  __m256i r = _mm256_srli_epi32(_mm256_add_epi32(u, _mm256_add_epi32(lsb, s1(0x7FFF))), 16);
  r = sel(nan, _mm256_or_si256(_mm256_srli_epi32(u, 16), s1(0x40)), r);
  _mm_storeu_si128((__m128i*)p, a2_pack16(r));
}

// |x| -> fp8 magnitude codes (fp8_encode lane-wise, without sign and NaN) in 8 int32 lanes.
// Saturation is a clamp of |x| to the largest finite value (every |x| >= max rounds or
// saturates to it: ties at max + half ulp go to the even max); the normal range rounds the
// dropped mantissa bits to nearest even with an integer add, the exponent rebias folded into
// the add's constant (valid for |x| >= the smallest normal, the lanes it is kept for); the
// subnormal range adds 2^(24 - bias - mbits), whose ulp is the smallest subnormal, so the
// FP adder rounds |x| to a multiple of it (RNE, exact: the sum's bits minus the constant's
// are the code). The clamp is vminps with |x| second, which returns its second operand when
// one is a NaN: a NaN lane comes out as a code above 0xFF (its exponent is all ones), which
// the unsigned-saturating packs turn into 0xFF, a byte no finite value gives; callers replace it.
template <int DD>
RKV_AVX2_INLINE __m256i a2_fp8_magnitude_codes(__m256i a) {
  using R = Fp8Rounding<DD, 23>;
  constexpr uint32_t MAXF = R::kMax, MINN = R::kMinNormal, magic = R::kSubnormalMagic, round_rebias = R::kRoundRebias;
  constexpr int drop = R::kDrop;
  __m256i c = _mm256_castps_si256(_mm256_min_ps(_mm256_castsi256_ps(s1(MAXF)), _mm256_castsi256_ps(a)));
  __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(c, drop), s1(1));
  __m256i rn = _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(c, lsb), s1(round_rebias)), drop);
  __m256 fs = _mm256_add_ps(_mm256_castsi256_ps(c), _mm256_castsi256_ps(s1(magic)));
  __m256i rs = _mm256_sub_epi32(_mm256_castps_si256(fs), s1(magic));
  return sel(ge(c, MINN), rn, rs);
}

// f32 -> fp8 codes in 8 int32 lanes: sign or'ed in, NaN -> 0x7F.
template <int DD>
RKV_AVX2_INLINE __m256i a2_fp8_codes(__m256 v) {
  __m256i u = _mm256_castps_si256(v);
  __m256i sign = _mm256_and_si256(_mm256_srli_epi32(u, 24), s1(0x80));
  __m256i a = _mm256_and_si256(u, s1(0x7FFFFFFFu));
  __m256i r = _mm256_or_si256(a2_fp8_magnitude_codes<DD>(a), sign);
  return sel(_mm256_cmpgt_epi32(a, s1(0x7F800000u)), s1(0x7F), r);
}

template <int DD>
RKV_AVX2_INLINE void a2_store_fp8(uint8_t* p, __m256 v) {
  __m256i r = a2_fp8_codes<DD>(v);
  __m256i p16 = _mm256_packus_epi32(r, r);
  __m256i p8 = _mm256_packus_epi16(p16, p16);  // lane 0: r0..3 repeated, lane 1: r4..7 repeated
  __m128i lo = _mm256_castsi256_si128(p8), hi = _mm256_extracti128_si256(p8, 1);
  _mm_storel_epi64((__m128i*)p, _mm_unpacklo_epi32(lo, hi));
}

// 32 fp8 codes from four vectors of 8 in one 32-byte store. Signs are packed to bytes with
// the same signed-saturating packs as the codes (a saturated int32 keeps its sign) and or'ed in
// once per 32 values; finite codes are at most 0x7E | 0x80, so a byte of 0xFF is a NaN of
// either sign: it becomes 0x7F.
template <int DD>
RKV_AVX2_INLINE void a2_store_fp8x32(uint8_t* p, __m256 v0, __m256 v1, __m256 v2, __m256 v3) {
  const __m256i abs_mask = s1(0x7FFFFFFFu);
  __m256i u0 = _mm256_castps_si256(v0), u1 = _mm256_castps_si256(v1);
  __m256i u2 = _mm256_castps_si256(v2), u3 = _mm256_castps_si256(v3);
  __m256i a0 = _mm256_and_si256(u0, abs_mask), a1 = _mm256_and_si256(u1, abs_mask);
  __m256i a2 = _mm256_and_si256(u2, abs_mask), a3 = _mm256_and_si256(u3, abs_mask);
  __m256i codes = _mm256_packus_epi16(
      _mm256_packus_epi32(a2_fp8_magnitude_codes<DD>(a0), a2_fp8_magnitude_codes<DD>(a1)),
      _mm256_packus_epi32(a2_fp8_magnitude_codes<DD>(a2), a2_fp8_magnitude_codes<DD>(a3)));
  __m256i signs = _mm256_packs_epi16(_mm256_packs_epi32(u0, u1), _mm256_packs_epi32(u2, u3));
  __m256i b = _mm256_or_si256(codes, _mm256_and_si256(signs, _mm256_set1_epi8((char)0x80)));
  b = _mm256_blendv_epi8(b, _mm256_set1_epi8(0x7F), _mm256_cmpeq_epi8(b, _mm256_set1_epi8(-1)));
  // dwords: v0[0..3] v1[0..3] v2[0..3] v3[0..3] | v0[4..7] v1[4..7] v2[4..7] v3[4..7]
  b = _mm256_permutevar8x32_epi32(b, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
  _mm256_storeu_si256((__m256i*)p, b);
}

// bf16 -> fp8 at scale 1 in 16-bit lanes, 16 values a vector (the f32 route above takes 8 and
// widens them first): |x| clamped to the largest finite value (vpminuw; NaN lanes are flagged
// before the clamp), the normal range rounded to nearest even on the bf16 bits with the exponent
// rebias folded into the add (as a2_fp8_magnitude_codes), the subnormal range through the FP
// adder as there, on the two halves placed in f32 lanes by interleaving with zero (exact: a bf16
// is the top half of an f32) and packed back in order. Returns the magnitude codes in 16-bit
// lanes and the NaN lanes in `nan`.
template <int DD>
RKV_AVX2_INLINE __m256i a2_bf16_fp8_magnitudes(__m256i x, __m256i& nan) {
  using R = Fp8Rounding<DD, 7>;
  constexpr short kMax = (short)R::kMax, kMinNormal = (short)R::kMinNormal, round_rebias = (short)R::kRoundRebias;
  constexpr uint32_t magic = R::kSubnormalMagic;
  constexpr int drop = R::kDrop;
  __m256i a = _mm256_and_si256(x, _mm256_set1_epi16(0x7FFF));
  nan = _mm256_cmpgt_epi16(a, _mm256_set1_epi16(0x7F80));
  __m256i c = _mm256_min_epu16(a, _mm256_set1_epi16(kMax));
  __m256i lsb = _mm256_and_si256(_mm256_srli_epi16(c, drop), _mm256_set1_epi16(1));
  __m256i rn = _mm256_srli_epi16(_mm256_add_epi16(_mm256_add_epi16(c, lsb), _mm256_set1_epi16(round_rebias)), drop);
  const __m256i zero = _mm256_setzero_si256();
  const __m256 vmagic = _mm256_castsi256_ps(s1(magic));
  __m256i lo = _mm256_sub_epi32(_mm256_castps_si256(_mm256_add_ps(_mm256_castsi256_ps(_mm256_unpacklo_epi16(zero, c)), vmagic)), s1(magic));
  __m256i hi = _mm256_sub_epi32(_mm256_castps_si256(_mm256_add_ps(_mm256_castsi256_ps(_mm256_unpackhi_epi16(zero, c)), vmagic)), s1(magic));
  __m256i rs = _mm256_packus_epi32(lo, hi);  // undoes the interleave; normal lanes saturate (replaced next)
  return _mm256_blendv_epi8(rs, rn, _mm256_cmpgt_epi16(c, _mm256_set1_epi16((short)(kMinNormal - 1))));
}

// 32 bf16 values -> 32 fp8 codes (scale 1): signs and NaN lanes packed to bytes with the same
// signed-saturating packs, NaN -> 0x7F as the f32 route gives.
template <int DD>
RKV_AVX2_INLINE void a2_bf16_to_fp8x32(const uint16_t* s, uint8_t* p) {
  __m256i x0 = _mm256_loadu_si256((const __m256i*)s), x1 = _mm256_loadu_si256((const __m256i*)(s + 16));
  __m256i n0, n1;
  __m256i m0 = a2_bf16_fp8_magnitudes<DD>(x0, n0), m1 = a2_bf16_fp8_magnitudes<DD>(x1, n1);
  __m256i b = _mm256_or_si256(_mm256_packus_epi16(m0, m1),
                              _mm256_and_si256(_mm256_packs_epi16(x0, x1), _mm256_set1_epi8((char)0x80)));
  b = _mm256_blendv_epi8(b, _mm256_set1_epi8(0x7F), _mm256_packs_epi16(n0, n1));
  // qwords: x0[0..7] x1[0..7] | x0[8..15] x1[8..15]
  _mm256_storeu_si256((__m256i*)p, _mm256_permute4x64_epi64(b, 0xD8));
}

template <int DD>
RKV_AVX2_INLINE void a2_store8(void* dst, int64_t i, __m256 v) {
  if constexpr (DD == RKV_DTYPE_F32) _mm256_storeu_ps((float*)dst + i, v);
  else if constexpr (DD == RKV_DTYPE_F16)
    _mm_storeu_si128((__m128i*)((uint16_t*)dst + i), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  else if constexpr (DD == RKV_DTYPE_BF16) a2_store_bf16((uint16_t*)dst + i, v);
  else a2_store_fp8<DD>((uint8_t*)dst + i, v);
}

template <int SD, int DD, int MODE>
RKV_AVX2 void row_avx2(const void* src, void* dst, int64_t n, float scale) {
  const __m256 vs = _mm256_set1_ps(scale);
  int64_t i = 0;
  if constexpr (DD == RKV_DTYPE_FP8_E4M3 || DD == RKV_DTYPE_FP8_E5M2) {
    constexpr int ss = dtype_size(SD);
    const int64_t far = g_fp8_far_prefetch;  // read once: the row's stores may alias it
    for (; i + 32 <= n; i += 32) {
      prefetch_stream(static_cast<const char*>(src) + i * ss, 32 * ss, kFp8PrefetchBytes, far);
      if constexpr (SD == RKV_DTYPE_BF16 && MODE == kScaleNone) {
        a2_bf16_to_fp8x32<DD>((const uint16_t*)src + i, (uint8_t*)dst + i);
      } else {
        __m256 x[4];
        for (int j = 0; j < 4; j++) {
          x[j] = a2_load8<SD>(src, i + 8 * j);
          if constexpr (MODE == kScaleMul) x[j] = _mm256_mul_ps(x[j], vs);
          else if constexpr (MODE == kScaleDiv) x[j] = _mm256_div_ps(x[j], vs);
        }
        a2_store_fp8x32<DD>((uint8_t*)dst + i, x[0], x[1], x[2], x[3]);
      }
    }
  }
  for (; i + 8 <= n; i += 8) {
    __m256 x = a2_load8<SD>(src, i);
    if constexpr (MODE == kScaleMul) x = _mm256_mul_ps(x, vs);
    else if constexpr (MODE == kScaleDiv) x = _mm256_div_ps(x, vs);
    a2_store8<DD>(dst, i, x);
  }
  for (; i < n; ++i) convert_element(src, SD, i, dst, DD, i, MODE, scale);
}

#endif  // RKV_HAVE_X86

constexpr int kNumDtypes = 5;
struct Table {
  RowConvertFn fn[kNumDtypes][kNumDtypes][3];
};

enum Isa { kScalar = kIsaScalar, kAvx2 = kIsaAvx2, kAvx512 = kIsaAvx512 };

template <int SD, int DD, int MODE>
void fill(Table& t, int isa) {
#if RKV_HAVE_X86
  t.fn[SD][DD][MODE] = isa == kAvx512 ? &row_avx512<SD, DD, MODE>
                       : isa == kAvx2 ? &row_avx2<SD, DD, MODE>
                                      : &row_scalar<SD, DD, MODE>;
#else
  (void)isa;
  t.fn[SD][DD][MODE] = &row_scalar<SD, DD, MODE>;
#endif
}

template <int SD, int DD>
void fill_modes(Table& t, int vec) {
  fill<SD, DD, kScaleNone>(t, vec);
  fill<SD, DD, kScaleMul>(t, vec);
  fill<SD, DD, kScaleDiv>(t, vec);
}

template <int SD>
void fill_src(Table& t, int vec) {
  fill_modes<SD, RKV_DTYPE_F32>(t, vec);
  fill_modes<SD, RKV_DTYPE_F16>(t, vec);
  fill_modes<SD, RKV_DTYPE_BF16>(t, vec);
  fill_modes<SD, RKV_DTYPE_FP8_E4M3>(t, vec);
  fill_modes<SD, RKV_DTYPE_FP8_E5M2>(t, vec);
}

Table make_table(int vec) {
  Table t{};
  fill_src<RKV_DTYPE_F32>(t, vec);
  fill_src<RKV_DTYPE_F16>(t, vec);
  fill_src<RKV_DTYPE_BF16>(t, vec);
  fill_src<RKV_DTYPE_FP8_E4M3>(t, vec);
  fill_src<RKV_DTYPE_FP8_E5M2>(t, vec);
  return t;
}

const Table& table() {
  static const Table t = make_table(cpu_isa());
  return t;
}

// Elements per OpenMP chunk: large enough that a chunk is a few hundred KiB of traffic.
constexpr int64_t kChunk = 1 << 16;

int check_scale(const char* name, float scale) {
  if (!(scale > 0.0f) || std::isinf(scale))
    return set_error(RKV_ERR_INVALID_ARGUMENT, "%s must be positive and finite, got %g", name, (double)scale);
  return RKV_OK;
}

int convert_impl(const void* src, int32_t sd, void* dst, int32_t dd, int64_t n, float scale) {
  if (n == 0) return RKV_OK;
  RowConverter rc = row_converter(sd, dd, scale);
  const char* s = (const char*)src;
  char* d = (char*)dst;
  const int ss = dtype_size(sd), ds = dtype_size(dd);
  const int64_t chunks = (n + kChunk - 1) / kChunk;
  // Outputs larger than the caches are streamed (no read-for-ownership of the destination).
  const bool stream = n * ds > kStreamBytes;
  rkv::parallel_region(chunks > 1, [&] {
#pragma omp for schedule(static) nowait
    for (int64_t c = 0; c < chunks; ++c) {
      int64_t b = c * kChunk;
      int64_t len = n - b < kChunk ? n - b : kChunk;
      if (stream) stream_convert(rc, sd == dd, s + b * ss, ss, d + b * ds, ds, len);
      else rc.fn(s + b * ss, d + b * ds, len, rc.scale);
    }
    if (stream) stream_fence();
  });
  return RKV_OK;
}

}  // namespace

RowConverter row_converter(int32_t src_dtype, int32_t dst_dtype, float scale) {
  if (src_dtype == dst_dtype) {
    int b = dtype_size(src_dtype);
    return {b == 4 ? &row_copy4 : b == 2 ? &row_copy2 : &row_copy, 1.0f};
  }
  int mode = scale_mode(src_dtype, dst_dtype);
  if (mode == kScaleDiv) {
    // x / s == x * (1 / s) bit for bit when 1 / s is exact (s a power of two): both are the
    // correctly rounded value of the same real number. A multiply is much cheaper.
    float r = 1.0f / scale;
    if (r == 1.0f) return {table().fn[src_dtype][dst_dtype][kScaleNone], 1.0f};  // x / 1 == x (the engine's default)
    if (std::isfinite(r) && r != 0.0f && (double)r * (double)scale == 1.0) return {table().fn[src_dtype][dst_dtype][kScaleMul], r};
  }
  return {table().fn[src_dtype][dst_dtype][mode], scale};
}

}  // namespace rkv

using rkv::dtype_name;

extern "C" {

RKV_API int rkv_convert(const void* src, int32_t src_dtype, void* dst, int32_t dst_dtype, int64_t n, float scale) {
  RKV_CHECK(rkv::is_valid_dtype(src_dtype), "rkv_convert: unknown src_dtype %d", src_dtype);
  RKV_CHECK(rkv::is_valid_dtype(dst_dtype), "rkv_convert: unknown dst_dtype %d", dst_dtype);
  RKV_CHECK(n >= 0, "rkv_convert: n must not be negative, got %lld", (long long)n);
  if (n > 0) {
    RKV_CHECK_PTR(src);
    RKV_CHECK_PTR(dst);
  }
  if (int e = rkv::check_scale("rkv_convert: scale", scale)) return e;
  bool sf = rkv::is_fp8(src_dtype), df = rkv::is_fp8(dst_dtype);
  RKV_CHECK(sf || df || scale == 1.0f, "rkv_convert: scale must be 1 for %s -> %s, got %g", dtype_name(src_dtype),
            dtype_name(dst_dtype), (double)scale);
  return rkv::convert_impl(src, src_dtype, dst, dst_dtype, n, scale);
}

RKV_API int rkv_fp8_quantize(const float* src, uint8_t* dst, int64_t n, int32_t fp8_dtype, float scale) {
  RKV_CHECK(rkv::is_fp8(fp8_dtype), "rkv_fp8_quantize: fp8_dtype must be %d (e4m3) or %d (e5m2), got %d",
            RKV_DTYPE_FP8_E4M3, RKV_DTYPE_FP8_E5M2, fp8_dtype);
  RKV_CHECK(n >= 0, "rkv_fp8_quantize: n must not be negative, got %lld", (long long)n);
  if (n > 0) {
    RKV_CHECK_PTR(src);
    RKV_CHECK_PTR(dst);
  }
  if (int e = rkv::check_scale("rkv_fp8_quantize: scale", scale)) return e;
  return rkv::convert_impl(src, RKV_DTYPE_F32, dst, fp8_dtype, n, scale);
}

RKV_API int rkv_fp8_dequantize(const uint8_t* src, float* dst, int64_t n, int32_t fp8_dtype, float scale) {
  RKV_CHECK(rkv::is_fp8(fp8_dtype), "rkv_fp8_dequantize: fp8_dtype must be %d (e4m3) or %d (e5m2), got %d",
            RKV_DTYPE_FP8_E4M3, RKV_DTYPE_FP8_E5M2, fp8_dtype);
  RKV_CHECK(n >= 0, "rkv_fp8_dequantize: n must not be negative, got %lld", (long long)n);
  if (n > 0) {
    RKV_CHECK_PTR(src);
    RKV_CHECK_PTR(dst);
  }
  if (int e = rkv::check_scale("rkv_fp8_dequantize: scale", scale)) return e;
  return rkv::convert_impl(src, fp8_dtype, dst, RKV_DTYPE_F32, n, scale);
}

}  // extern "C"
