// CPU paged attention: decode, append prefill (right-aligned causal, optional bidirectional
// regions) and merge_state, over FlashInfer CSR page tables and K/V pools of any cache dtype.
//
// Structure
//  - Argument validation (every pointer, dtype, shape and CSR entry) before any work.
//  - Planning: decode is split into work items (sequence, kv head, KV chunk); long sequences
//    are split across threads only when there are too few items for the threads (split-KV),
//    and the chunk results are combined with the merge_state arithmetic. Prefill items are
//    (sequence, kv head, query tile).
//  - The per-item core (attention_cpu_impl.h) is compiled three times: AVX-512 (F/BW/VL),
//    AVX2+FMA+F16C and scalar, each under its own target pragma, chosen at run time with
//    __builtin_cpu_supports, so a portable (x86-64-v3) build still uses AVX-512 where present
//    and a native build runs the AVX2 path if forced (RADIXKV_ATTN_ISA=avx2|scalar, for tests).
//
// Dequantization folding: vector loaders may return the cache value times a power of two
// (fp8 e4m3 is widened through f16 bit patterns, which yields value/256). The factor, the fp8
// scale and sm_scale are folded into q (for K) and into the final normalization (for V), so the
// inner loops never multiply by a scale.
#include <omp.h>

// GCC 12 reports false -Wmaybe-uninitialized inside the AVX-512 conversion intrinsics.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "rkv_common.h"
#include "rkv_dtype.h"
#include "rkv_softmax.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace rkv {
namespace attn {

constexpr int kBlock = 32;  // tokens per online-softmax block
// Pseudo cache dtype for e4m3 blocks known to hold no NaN code: the vector loaders then skip
// the NaN fix-up (blocks are scanned once, 64 bytes at a time, in attend_rows_t).
constexpr int kE4M3Finite = 103;

// One sequence's pages seen from one KV head.
struct SeqView {
  const uint8_t* k_base;
  const uint8_t* v_base;
  const int32_t* pages;  // this sequence's page ids
  int32_t page_size;
  int32_t num_kv_heads;
  int32_t kv_head;
  int32_t head_dim;
  int32_t row_bytes;  // head_dim * element size
  int32_t dtype;
};

using AttendFn = void (*)(const SeqView&, int, const float*, int, int64_t, int64_t, const int64_t*, float, float*,
                          float*, float*, float*, float*, float*);

using AttendTokenMajorFn = void (*)(const SeqView&, int, const float*, int, int64_t, int64_t, const int64_t*, float,
                                    float*, float*, float*, float*, float*, const float*);

struct Isa {
  const char* name;
  int width;  // head_dim must be a multiple of it
  AttendFn attend;
  AttendTokenMajorFn attend_token_major;
  float e4m3_factor;  // value returned by the loader = real / factor
};

// ---------------------------------------------------------------- scalar (any CPU)
namespace scalar {
struct I {
  using V = float;
  static constexpr int W = 1;
  static constexpr int kAcc = 1;
  static V zero() { return 0.f; }
  static V set1(float x) { return x; }
  static V load(const float* p) { return *p; }
  static void store(float* p, V v) { *p = v; }
  static V fma(V a, V b, V c) { return a * b + c; }
  static V mul(V a, V b) { return a * b; }
  static V add(V a, V b) { return a + b; }
  static V sub(V a, V b) { return a - b; }
  static V max(V a, V b) { return a > b ? a : b; }
  static float hmax(V v) { return v; }
  static float hsum(V v) { return v; }
  static V exp2(V x) { return x < -125.f ? 0.f : exp2f(x); }
  static V tanh(V x) { return tanhf(x); }
  static V reduce_w(const V* acc) { return acc[0]; }
  template <int DT>
  static V load_cvt(const uint8_t* row, int d) {
    return load_as_float(row, d, DT == kE4M3Finite ? RKV_DTYPE_FP8_E4M3 : DT);
  }
  static bool has_e4m3_nan(const uint8_t* p, int bytes) {
    for (int i = 0; i < bytes; i++)
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
struct I {
  using V = __m256;
  static constexpr int W = 8;
  static constexpr int kAcc = 8;
  static V zero() { return _mm256_setzero_ps(); }
  static V set1(float x) { return _mm256_set1_ps(x); }
  static V load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, V v) { _mm256_storeu_ps(p, v); }
  static V fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static V mul(V a, V b) { return _mm256_mul_ps(a, b); }
  static V add(V a, V b) { return _mm256_add_ps(a, b); }
  static V sub(V a, V b) { return _mm256_sub_ps(a, b); }
  static V max(V a, V b) { return _mm256_max_ps(a, b); }
  static float hsum(V v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
  static float hmax(V v) {
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
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
  // lane j of the result = sum of the lanes of acc[j]
  static V reduce_w(const V* a) {
    V b[4], c[2];
    for (int i = 0; i < 4; i++)
      b[i] = _mm256_add_ps(_mm256_unpacklo_ps(a[2 * i], a[2 * i + 1]), _mm256_unpackhi_ps(a[2 * i], a[2 * i + 1]));
    for (int i = 0; i < 2; i++) {
      __m256d x = _mm256_castps_pd(b[2 * i]), y = _mm256_castps_pd(b[2 * i + 1]);
      c[i] = _mm256_add_ps(_mm256_castpd_ps(_mm256_unpacklo_pd(x, y)), _mm256_castpd_ps(_mm256_unpackhi_pd(x, y)));
    }
    return _mm256_add_ps(_mm256_permute2f128_ps(c[0], c[1], 0x20), _mm256_permute2f128_ps(c[0], c[1], 0x31));
  }
  template <int DT>
  static V load_cvt(const uint8_t* row, int d) {
    if constexpr (DT == RKV_DTYPE_F32) {
      return _mm256_loadu_ps(reinterpret_cast<const float*>(row) + d);
    } else if constexpr (DT == RKV_DTYPE_F16) {
      return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 2 * d)));
    } else if constexpr (DT == RKV_DTYPE_BF16) {
      __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 2 * d)));
      return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
    } else if constexpr (DT == RKV_DTYPE_FP8_E5M2) {
      // e5m2 is the high byte of an f16
      __m128i w = _mm_cvtepu8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(row + d)));
      return _mm256_cvtph_ps(_mm_slli_epi16(w, 8));
    } else {
      // e4m3 magnitude bits shifted into an f16 (exponent bias 15 vs 7): value / 256, exact
      // for normals and subnormals; code 0x7F (NaN) mapped to an f16 NaN.
      __m128i w = _mm_cvtepu8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(row + d)));
      __m128i mag = _mm_and_si128(w, _mm_set1_epi16(0x7F));
      __m128i h = _mm_or_si128(_mm_slli_epi16(mag, 7), _mm_slli_epi16(_mm_and_si128(w, _mm_set1_epi16(0x80)), 8));
      if constexpr (DT == RKV_DTYPE_FP8_E4M3) {
        __m128i nan = _mm_cmpeq_epi16(mag, _mm_set1_epi16(0x7F));
        h = _mm_blendv_epi8(h, _mm_set1_epi16(0x7E00), nan);
      }
      return _mm256_cvtph_ps(h);
    }
  }
  static bool has_e4m3_nan(const uint8_t* p, int bytes) {
    const __m256i m7f = _mm256_set1_epi8(0x7F);
    int i = 0;
    __m256i any = _mm256_setzero_si256();
    for (; i + 32 <= bytes; i += 32) {
      __m256i x = _mm256_and_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i)), m7f);
      any = _mm256_or_si256(any, _mm256_cmpeq_epi8(x, m7f));
    }
    if (!_mm256_testz_si256(any, any)) return true;
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
struct I {
  using V = __m512;
  static constexpr int W = 16;
  static constexpr int kAcc = 16;
  static V zero() { return _mm512_setzero_ps(); }
  static V set1(float x) { return _mm512_set1_ps(x); }
  static V load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, V v) { _mm512_storeu_ps(p, v); }
  static V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static V mul(V a, V b) { return _mm512_mul_ps(a, b); }
  static V add(V a, V b) { return _mm512_add_ps(a, b); }
  static V sub(V a, V b) { return _mm512_sub_ps(a, b); }
  static V max(V a, V b) { return _mm512_max_ps(a, b); }
  static float hsum(V v) { return _mm512_reduce_add_ps(v); }
  static float hmax(V v) { return _mm512_reduce_max_ps(v); }
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
  // lane j of the result = sum of the lanes of acc[j] (transpose-reduction, 45 instructions
  // for 16 dot products instead of 16 horizontal reductions)
  static V reduce_w(const V* a) {
    V b[8], c[4], e[2];
    for (int i = 0; i < 8; i++)
      b[i] = _mm512_add_ps(_mm512_unpacklo_ps(a[2 * i], a[2 * i + 1]), _mm512_unpackhi_ps(a[2 * i], a[2 * i + 1]));
    for (int i = 0; i < 4; i++) {
      __m512d x = _mm512_castps_pd(b[2 * i]), y = _mm512_castps_pd(b[2 * i + 1]);
      c[i] = _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(x, y)), _mm512_castpd_ps(_mm512_unpackhi_pd(x, y)));
    }
    // c[i]: 128-bit lane k holds partial sums of a[4i..4i+3] over that lane's elements
    for (int i = 0; i < 2; i++)
      e[i] = _mm512_add_ps(_mm512_shuffle_f32x4(c[2 * i], c[2 * i + 1], 0x88),
                           _mm512_shuffle_f32x4(c[2 * i], c[2 * i + 1], 0xDD));
    return _mm512_add_ps(_mm512_shuffle_f32x4(e[0], e[1], 0x88), _mm512_shuffle_f32x4(e[0], e[1], 0xDD));
  }
  template <int DT>
  static V load_cvt(const uint8_t* row, int d) {
    if constexpr (DT == RKV_DTYPE_F32) {
      return _mm512_loadu_ps(reinterpret_cast<const float*>(row) + d);
    } else if constexpr (DT == RKV_DTYPE_F16) {
      return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + 2 * d)));
    } else if constexpr (DT == RKV_DTYPE_BF16) {
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
  static bool has_e4m3_nan(const uint8_t* p, int bytes) {
    const __m512i m7f = _mm512_set1_epi8(0x7F);
    __mmask64 any = 0;
    for (int i = 0; i < bytes; i += 64) {
      __mmask64 lm = bytes - i >= 64 ? ~0ULL : ((1ULL << (bytes - i)) - 1);
      __m512i x = _mm512_and_si512(_mm512_maskz_loadu_epi8(lm, p + i), m7f);
      any |= _mm512_mask_cmpeq_epi8_mask(lm, x, m7f);
    }
    return any != 0;
  }
};
#include "attention_cpu_impl.h"
}  // namespace avx512
#pragma GCC pop_options
#endif  // __x86_64__

// ---------------------------------------------------------------- dispatch

static Isa choose_isa(int head_dim) {
  const Isa scalar_isa{"scalar", 1, &scalar::attend_rows, &scalar::attend_token_major, 1.f};
#if defined(__x86_64__)
  const char* force = std::getenv("RADIXKV_ATTN_ISA");
  bool allow512 = !force || !std::strcmp(force, "avx512");
  bool allow2 = !force || !std::strcmp(force, "avx512") || !std::strcmp(force, "avx2");
  __builtin_cpu_init();
  if (allow512 && head_dim % 16 == 0 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))
    return Isa{"avx512", 16, &avx512::attend_rows, &avx512::attend_token_major, 256.f};
  if (allow2 && head_dim % 8 == 0 && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    return Isa{"avx2", 8, &avx2::attend_rows, &avx2::attend_token_major, 256.f};
#else
  (void)head_dim;
#endif
  return scalar_isa;
}

// ---------------------------------------------------------------- validation

struct Common {
  int64_t num_pages;
  int32_t page_size, num_qo_heads, num_kv_heads, head_dim, batch;
  int32_t cache_dtype, q_dtype, out_dtype;
  float sm_scale, soft_cap, k_scale, v_scale;
};

static bool is_io_dtype(int32_t d) { return d == RKV_DTYPE_F32 || d == RKV_DTYPE_F16 || d == RKV_DTYPE_BF16; }

static int validate_common(const Common& c, const void* q, const void* out, const void* k_cache, const void* v_cache,
                           const int32_t* kv_indptr, const int32_t* kv_indices, const int32_t* kv_last_page_len,
                           std::vector<int64_t>& lens) {
  RKV_CHECK(c.batch >= 0, "batch_size must be >= 0, got %d", c.batch);
  RKV_CHECK(c.num_qo_heads > 0 && c.num_kv_heads > 0, "num_qo_heads (%d) and num_kv_heads (%d) must be positive",
            c.num_qo_heads, c.num_kv_heads);
  RKV_CHECK(c.num_qo_heads % c.num_kv_heads == 0, "num_qo_heads (%d) must be a multiple of num_kv_heads (%d)",
            c.num_qo_heads, c.num_kv_heads);
  RKV_CHECK(c.head_dim > 0 && c.head_dim <= 1024, "head_dim must be in 1..1024, got %d", c.head_dim);
  RKV_CHECK(c.page_size > 0, "page_size must be positive, got %d", c.page_size);
  RKV_CHECK(c.num_pages >= 0, "num_pages must be >= 0, got %lld", (long long)c.num_pages);
  RKV_CHECK(is_valid_dtype(c.cache_dtype), "unknown cache dtype %d", c.cache_dtype);
  RKV_CHECK(is_io_dtype(c.q_dtype), "q dtype must be f32, f16 or bf16, got %s (%d)", dtype_name(c.q_dtype), c.q_dtype);
  RKV_CHECK(is_io_dtype(c.out_dtype), "out dtype must be f32, f16 or bf16, got %s (%d)", dtype_name(c.out_dtype),
            c.out_dtype);
  RKV_CHECK(std::isfinite(c.sm_scale) && c.sm_scale > 0.f, "sm_scale must be positive and finite, got %g",
            (double)c.sm_scale);
  RKV_CHECK(std::isfinite(c.soft_cap), "logits_soft_cap must be finite, got %g", (double)c.soft_cap);
  RKV_CHECK(std::isfinite(c.k_scale) && c.k_scale > 0.f && std::isfinite(c.v_scale) && c.v_scale > 0.f,
            "k_scale (%g) and v_scale (%g) must be positive and finite", (double)c.k_scale, (double)c.v_scale);
  if (c.batch == 0) return RKV_OK;
  RKV_CHECK_PTR(kv_indptr);
  RKV_CHECK_PTR(kv_last_page_len);
  RKV_CHECK(kv_indptr[0] == 0, "kv_indptr[0] must be 0, got %d", kv_indptr[0]);
  for (int b = 0; b < c.batch; b++)
    RKV_CHECK(kv_indptr[b + 1] >= kv_indptr[b], "kv_indptr is not monotone at %d: %d < %d", b + 1, kv_indptr[b + 1],
              kv_indptr[b]);
  int32_t nnz = kv_indptr[c.batch];
  if (nnz > 0) {
    RKV_CHECK_PTR(kv_indices);
    RKV_CHECK_PTR(k_cache);
    RKV_CHECK_PTR(v_cache);
  }
  for (int32_t i = 0; i < nnz; i++)
    RKV_CHECK(kv_indices[i] >= 0 && kv_indices[i] < c.num_pages, "kv_indices[%d] = %d is outside [0, %lld)", i,
              kv_indices[i], (long long)c.num_pages);
  lens.assign(c.batch, 0);
  for (int b = 0; b < c.batch; b++) {
    int32_t pages = kv_indptr[b + 1] - kv_indptr[b];
    if (pages == 0) continue;
    int32_t last = kv_last_page_len[b];
    RKV_CHECK(last >= 1 && last <= c.page_size, "kv_last_page_len[%d] = %d is outside 1..%d", b, last, c.page_size);
    lens[b] = (int64_t)c.page_size * (pages - 1) + last;
  }
  RKV_CHECK_PTR(q);
  RKV_CHECK_PTR(out);
  return RKV_OK;
}

// ---------------------------------------------------------------- shared helpers

struct Scales {
  float q_mul;     // multiplies q: sm_scale * k_scale * factor, and log2(e) or 1/cap
  float soft_cap;  // > 0: soft cap active
  float v_mul;     // multiplies the normalized output: v_scale * factor
};

static Scales make_scales(const Common& c, const Isa& isa) {
  float kf = c.cache_dtype == RKV_DTYPE_FP8_E4M3 ? isa.e4m3_factor : 1.f;
  float ks = is_fp8(c.cache_dtype) ? c.k_scale : 1.f;
  float vs = is_fp8(c.cache_dtype) ? c.v_scale : 1.f;
  Scales s;
  s.soft_cap = c.soft_cap > 0.f ? c.soft_cap : 0.f;
  s.q_mul = c.sm_scale * ks * kf * (s.soft_cap > 0.f ? 1.f / s.soft_cap : kLog2e);
  s.v_mul = vs * kf;
  return s;
}

static SeqView seq_view(const Common& c, const void* k_cache, const void* v_cache, const int32_t* kv_indptr,
                        const int32_t* kv_indices, int b, int h) {
  SeqView s;
  s.k_base = static_cast<const uint8_t*>(k_cache);
  s.v_base = static_cast<const uint8_t*>(v_cache);
  s.pages = kv_indices + kv_indptr[b];
  s.page_size = c.page_size;
  s.num_kv_heads = c.num_kv_heads;
  s.kv_head = h;
  s.head_dim = c.head_dim;
  s.row_bytes = c.head_dim * dtype_size(c.cache_dtype);
  s.dtype = c.cache_dtype;
  return s;
}

// Loads `rows` consecutive q rows of head_dim (starting at element index `base`) into f32, scaled.
static void load_q(const void* q, int32_t dtype, int64_t base, int64_t n, float mul, float* dst) {
  for (int64_t i = 0; i < n; i++) dst[i] = load_as_float(q, base + i, dtype) * mul;
}

static void store_out(void* out, int32_t dtype, int64_t base, const float* src, int64_t n) {
  if (dtype == RKV_DTYPE_F32) {
    std::memcpy(static_cast<float*>(out) + base, src, n * sizeof(float));
    return;
  }
  for (int64_t i = 0; i < n; i++) store_from_float(out, base + i, dtype, src[i]);
}

// Normalizes one row in place: O / l * v_mul (zeros for an empty row); returns the LSE.
static float finish_row(float* o, int hd, float m, float l, float v_mul) {
  SoftmaxState st{m, l};
  if (l == 0.f) {  // empty row (a NaN l propagates instead)
    std::fill(o, o + hd, 0.f);
    return -INFINITY;
  }
  float f = v_mul / l;
  for (int d = 0; d < hd; d++) o[d] *= f;
  return softmax_lse(st);
}

// a = merge(a, b) over head_dim elements with natural-log LSEs.
static void merge_into(float* va, float* sa, const float* vb, float sb, int hd) {
  MergeWeights w = merge_weights(*sa, sb);
  for (int d = 0; d < hd; d++) va[d] = w.wa * va[d] + w.wb * vb[d];
  *sa = w.lse;
}

static int threads_for(int64_t items) {
  int nt = omp_get_max_threads();
  return (int)std::max<int64_t>(1, std::min<int64_t>(nt, items));
}

}  // namespace attn
}  // namespace rkv

using namespace rkv;
using namespace rkv::attn;

extern "C" {

RKV_API int rkv_decode_attention(const void* q, int32_t q_dtype, void* out, int32_t out_dtype, float* lse,
                                 const void* k_cache, const void* v_cache, int32_t cache_dtype, int64_t num_pages,
                                 int32_t page_size, int32_t num_qo_heads, int32_t num_kv_heads, int32_t head_dim,
                                 const int32_t* kv_indptr, const int32_t* kv_indices, const int32_t* kv_last_page_len,
                                 int32_t batch_size, float sm_scale, float logits_soft_cap, float k_scale,
                                 float v_scale) {
  Common c{num_pages, page_size, num_qo_heads, num_kv_heads, head_dim, batch_size, cache_dtype, q_dtype, out_dtype,
           sm_scale, logits_soft_cap, k_scale, v_scale};
  std::vector<int64_t> lens;
  int rc = validate_common(c, q, out, k_cache, v_cache, kv_indptr, kv_indices, kv_last_page_len, lens);
  if (rc != RKV_OK || batch_size == 0) return rc;

  const Isa isa = choose_isa(head_dim);
  const Scales sc = make_scales(c, isa);
  const int G = num_qo_heads / num_kv_heads;
  const int hd = head_dim;

  // Plan: one item per sequence covering all its KV heads (the K/V bytes of a token block are
  // one contiguous region per page). With several threads, sequences longer than the chunk
  // length are split so that there are about 4 items per thread (split-KV); the chunks are
  // merged afterwards with the merge_state arithmetic.
  const int nt = omp_get_max_threads();
  int64_t total = 0;
  for (int64_t len : lens) total += len;
  int64_t chunk = INT64_MAX;
  if (nt > 1) {
    chunk = std::max<int64_t>(256, (total + 4 * nt - 1) / (4 * nt));
    chunk = (chunk + kBlock - 1) / kBlock * kBlock;
  }
  struct Item {
    int32_t b;
    int64_t t0, t1;
    int64_t part;  // index of the partial result, -1 when the item writes the output directly
  };
  struct Group {
    int32_t b;
    int64_t part0, nparts;
  };
  std::vector<Item> items;
  std::vector<Group> groups;
  int64_t nparts = 0;
  for (int b = 0; b < batch_size; b++) {
    int64_t len = lens[b];
    int64_t nch = len <= chunk ? 1 : (len + chunk - 1) / chunk;
    if (nch == 1) {
      items.push_back({b, 0, len, -1});
    } else {
      groups.push_back({b, nparts, nch});
      for (int64_t k = 0; k < nch; k++) items.push_back({b, k * chunk, std::min(len, (k + 1) * chunk), nparts++});
    }
  }
  const int64_t row_elems = (int64_t)num_qo_heads * hd;  // one sequence's output
  std::vector<float> part_o, part_s;
  try {
    part_o.resize((size_t)(nparts * row_elems));
    part_s.resize((size_t)(nparts * num_qo_heads));
  } catch (const std::bad_alloc&) {
    return set_error(RKV_ERR_OUT_OF_MEMORY, "decode attention: cannot allocate split-KV scratch");
  }
  const int64_t n_items = (int64_t)items.size();

#pragma omp parallel num_threads(threads_for(n_items))
  {
    std::vector<float> Q(row_elems), O(row_elems), m(num_qo_heads), l(num_qo_heads),
        S((size_t)num_qo_heads * kBlock), scale(num_qo_heads), ones(G, 1.f);
    std::vector<int64_t> lim(G);
#pragma omp for schedule(dynamic, 1)
    for (int64_t it = 0; it < n_items; it++) {
      const Item& w = items[it];
      const int64_t qrow = (int64_t)w.b * num_qo_heads;  // first q head row of this sequence
      load_q(q, q_dtype, qrow * hd, row_elems, sc.q_mul, Q.data());
      std::fill(O.begin(), O.end(), 0.f);
      std::fill(m.begin(), m.end(), -INFINITY);
      std::fill(l.begin(), l.end(), 0.f);
      std::fill(lim.begin(), lim.end(), w.t1);
      if (w.t1 > w.t0) {
        SeqView s = seq_view(c, k_cache, v_cache, kv_indptr, kv_indices, w.b, 0);
        isa.attend_token_major(s, num_kv_heads, Q.data(), G, w.t0, w.t1, lim.data(), sc.soft_cap, O.data(), m.data(),
                               l.data(), S.data(), scale.data(), ones.data());
      }
      for (int g = 0; g < num_qo_heads; g++) {
        float row_lse = finish_row(O.data() + (int64_t)g * hd, hd, m[g], l[g], sc.v_mul);
        if (w.part < 0) {
          if (lse) lse[qrow + g] = row_lse;
        } else {
          part_s[(size_t)(w.part * num_qo_heads + g)] = row_lse;
        }
      }
      if (w.part < 0) {
        store_out(out, out_dtype, qrow * hd, O.data(), row_elems);
      } else {
        std::memcpy(&part_o[(size_t)(w.part * row_elems)], O.data(), row_elems * sizeof(float));
      }
    }
    // split-KV: combine each sequence's chunks (in KV order) with merge_state arithmetic
#pragma omp for schedule(static)
    for (int64_t gi = 0; gi < (int64_t)groups.size(); gi++) {
      const Group& gr = groups[gi];
      const int64_t qrow = (int64_t)gr.b * num_qo_heads;
      for (int g = 0; g < num_qo_heads; g++) {
        float* acc = O.data() + (int64_t)g * hd;
        float s = part_s[(size_t)(gr.part0 * num_qo_heads + g)];
        std::memcpy(acc, &part_o[(size_t)(gr.part0 * row_elems + (int64_t)g * hd)], hd * sizeof(float));
        for (int64_t k = 1; k < gr.nparts; k++) {
          int64_t p = gr.part0 + k;
          merge_into(acc, &s, &part_o[(size_t)(p * row_elems + (int64_t)g * hd)],
                     part_s[(size_t)(p * num_qo_heads + g)], hd);
        }
        if (lse) lse[qrow + g] = s;
      }
      store_out(out, out_dtype, qrow * hd, O.data(), row_elems);
    }
  }
  return RKV_OK;
}

RKV_API int rkv_append_prefill_attention(const void* q, int32_t q_dtype, void* out, int32_t out_dtype, float* lse,
                                         const int32_t* qo_indptr, const void* k_cache, const void* v_cache,
                                         int32_t cache_dtype, int64_t num_pages, int32_t page_size,
                                         int32_t num_qo_heads, int32_t num_kv_heads, int32_t head_dim,
                                         const int32_t* kv_indptr, const int32_t* kv_indices,
                                         const int32_t* kv_last_page_len, int32_t batch_size,
                                         const int32_t* bidir_indptr, const int32_t* bidir_regions, float sm_scale,
                                         float logits_soft_cap, float k_scale, float v_scale) {
  Common c{num_pages, page_size, num_qo_heads, num_kv_heads, head_dim, batch_size, cache_dtype, q_dtype, out_dtype,
           sm_scale, logits_soft_cap, k_scale, v_scale};
  std::vector<int64_t> lens;
  int rc = validate_common(c, q, out, k_cache, v_cache, kv_indptr, kv_indices, kv_last_page_len, lens);
  if (rc != RKV_OK || batch_size == 0) return rc;
  RKV_CHECK_PTR(qo_indptr);
  RKV_CHECK(qo_indptr[0] == 0, "qo_indptr[0] must be 0, got %d", qo_indptr[0]);
  for (int b = 0; b < batch_size; b++) {
    int32_t ql = qo_indptr[b + 1] - qo_indptr[b];
    RKV_CHECK(ql >= 0, "qo_indptr is not monotone at %d: %d < %d", b + 1, qo_indptr[b + 1], qo_indptr[b]);
    RKV_CHECK(ql <= lens[b], "sequence %d has q_len %d > kv_len %lld", b, ql, (long long)lens[b]);
  }
  RKV_CHECK(!(bidir_indptr == nullptr && bidir_regions != nullptr),
            "bidir_regions is set but bidir_indptr is NULL");
  if (bidir_indptr != nullptr) {
    RKV_CHECK(bidir_indptr[0] == 0, "bidir_indptr[0] must be 0, got %d", bidir_indptr[0]);
    for (int b = 0; b < batch_size; b++) {
      RKV_CHECK(bidir_indptr[b + 1] >= bidir_indptr[b], "bidir_indptr is not monotone at %d", b + 1);
      if (bidir_indptr[b + 1] > bidir_indptr[b]) RKV_CHECK_PTR(bidir_regions);
      for (int32_t r = bidir_indptr[b]; r < bidir_indptr[b + 1]; r++) {
        int32_t s = bidir_regions[2 * r], e = bidir_regions[2 * r + 1];
        RKV_CHECK(s >= 0 && s < e && e <= lens[b], "bidirectional region %d of sequence %d is [%d, %d), not inside [0, %lld)",
                  r, b, s, e, (long long)lens[b]);
      }
    }
  }

  const Isa isa = choose_isa(head_dim);
  const Scales sc = make_scales(c, isa);
  const int G = num_qo_heads / num_kv_heads;
  const int hd = head_dim;
  // Query tile: about 64 rows (q tokens x GQA heads) reuse each K/V block.
  const int qt = std::max(1, 64 / G);
  const int Rmax = qt * G;

  struct Item {
    int32_t b, h, i0, i1;
  };
  std::vector<Item> items;
  for (int b = 0; b < batch_size; b++) {
    int32_t ql = qo_indptr[b + 1] - qo_indptr[b];
    // later tiles see more KV: schedule them first
    for (int32_t i0 = ((ql - 1) / qt) * qt; i0 >= 0 && ql > 0; i0 -= qt)
      for (int h = 0; h < num_kv_heads; h++) items.push_back({b, h, i0, std::min(ql, i0 + qt)});
  }
  const int64_t n_items = (int64_t)items.size();

#pragma omp parallel num_threads(threads_for(n_items))
  {
    std::vector<float> Q((size_t)Rmax * hd), O((size_t)Rmax * hd), m(Rmax), l(Rmax), S((size_t)Rmax * kBlock),
        scale(Rmax), pack((size_t)2 * kBlock * hd);
    std::vector<int64_t> lim(Rmax);
#pragma omp for schedule(dynamic, 1)
    for (int64_t it = 0; it < n_items; it++) {
      const Item& w = items[it];
      const int64_t kv_len = lens[w.b];
      const int32_t q_len = qo_indptr[w.b + 1] - qo_indptr[w.b];
      const int64_t off = kv_len - q_len;  // global position of query 0
      const int nq = w.i1 - w.i0;
      const int R = nq * G;
      int64_t kv_end = 0;
      for (int i = 0; i < nq; i++) {
        int64_t p = off + w.i0 + i;
        int64_t ext = p;  // last visible position
        if (bidir_indptr != nullptr) {
          for (int32_t r = bidir_indptr[w.b]; r < bidir_indptr[w.b + 1]; r++) {
            int64_t s = bidir_regions[2 * r], e = bidir_regions[2 * r + 1];
            if (s <= p && p < e && e - 1 > ext) ext = e - 1;
          }
        }
        int64_t row = qo_indptr[w.b] + w.i0 + i;
        for (int g = 0; g < G; g++) {
          lim[i * G + g] = ext + 1;
          load_q(q, q_dtype, (row * num_qo_heads + w.h * G + g) * hd, hd, sc.q_mul, Q.data() + (size_t)(i * G + g) * hd);
        }
        kv_end = std::max(kv_end, ext + 1);
      }
      std::fill(O.begin(), O.begin() + (size_t)R * hd, 0.f);
      std::fill(m.begin(), m.begin() + R, -INFINITY);
      std::fill(l.begin(), l.begin() + R, 0.f);
      SeqView s = seq_view(c, k_cache, v_cache, kv_indptr, kv_indices, w.b, w.h);
      isa.attend(s, 1, Q.data(), R, 0, kv_end, lim.data(), sc.soft_cap, O.data(), m.data(), l.data(), S.data(),
                 scale.data(), R >= 16 ? pack.data() : nullptr);
      for (int i = 0; i < nq; i++) {
        int64_t row = qo_indptr[w.b] + w.i0 + i;
        for (int g = 0; g < G; g++) {
          int r = i * G + g;
          float row_lse = finish_row(O.data() + (size_t)r * hd, hd, m[r], l[r], sc.v_mul);
          int64_t orow = row * num_qo_heads + w.h * G + g;
          store_out(out, out_dtype, orow * hd, O.data() + (size_t)r * hd, hd);
          if (lse) lse[orow] = row_lse;
        }
      }
    }
  }
  return RKV_OK;
}

RKV_API int rkv_merge_state(const float* v_a, const float* s_a, const float* v_b, const float* s_b, float* v_out,
                            float* s_out, int64_t num_tokens, int32_t num_heads, int32_t head_dim) {
  RKV_CHECK(num_tokens >= 0, "num_tokens must be >= 0, got %lld", (long long)num_tokens);
  RKV_CHECK(num_heads > 0 && head_dim > 0, "num_heads (%d) and head_dim (%d) must be positive", num_heads, head_dim);
  if (num_tokens == 0) return RKV_OK;
  RKV_CHECK_PTR(v_a);
  RKV_CHECK_PTR(s_a);
  RKV_CHECK_PTR(v_b);
  RKV_CHECK_PTR(s_b);
  RKV_CHECK_PTR(v_out);
  RKV_CHECK_PTR(s_out);
  const int64_t rows = num_tokens * num_heads;
  const int hd = head_dim;
#pragma omp parallel for schedule(static) num_threads(threads_for(rows / 64 + 1))
  for (int64_t r = 0; r < rows; r++) {
    MergeWeights w = merge_weights(s_a[r], s_b[r]);
    const float* a = v_a + r * hd;
    const float* b = v_b + r * hd;
    float* o = v_out + r * hd;
    if (w.lse == -INFINITY) {
      for (int d = 0; d < hd; d++) o[d] = 0.f;  // both empty: +0, never -0 or NaN
    } else {
      for (int d = 0; d < hd; d++) o[d] = w.wa * a[d] + w.wb * b[d];
    }
    s_out[r] = w.lse;
  }
  return RKV_OK;
}

}  // extern "C"
