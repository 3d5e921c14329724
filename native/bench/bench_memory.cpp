// Memory-bandwidth baselines for the benchmarks: a streaming read and a copy over the same
// OpenMP threads the kernels use, so kernel GB/s can be compared with what the machine
// delivers in the same run; and the read of a decode GEMV's weights with exactly its
// arithmetic (rkv_bench_read_gemv), the most such a GEMV can reach on the CPU.
#include <omp.h>

#include <cstring>
#include <utility>

#include "dense_gemv.h"
#include "rkv_dtype.h"
#include "rkv_isa.h"

#if defined(__x86_64__)
#include <immintrin.h>
// GCC 12 false positive on the undefined pass-through operands inside AVX-512 intrinsics.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

#include "radixkv_bench.h"
#include "rkv_common.h"

namespace rkv {
namespace {

// [begin, end) of thread t's share of `bytes`, in 64-byte lines.
void share(int64_t bytes, int t, int nt, int64_t* begin, int64_t* end) {
  int64_t lines = (bytes + 63) / 64;
  int64_t per = lines / nt, extra = lines % nt;
  int64_t b = t * per + (t < extra ? t : extra);
  int64_t e = b + per + (t < extra ? 1 : 0);
  *begin = b * 64 < bytes ? b * 64 : bytes;
  *end = e * 64 < bytes ? e * 64 : bytes;
}

uint64_t read_scalar(const char* p, int64_t n) {
  uint64_t s = 0;
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);
    s += w;
  }
  for (; i < n; ++i) s += (unsigned char)p[i];
  return s;
}

#if defined(__x86_64__)
__attribute__((target("avx512f"))) uint64_t read_avx512(const char* p, int64_t n) {
  __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0;
  int64_t i = 0;
  for (; i + 256 <= n; i += 256) {
    a0 = _mm512_add_epi64(a0, _mm512_loadu_si512(p + i));
    a1 = _mm512_add_epi64(a1, _mm512_loadu_si512(p + i + 64));
    a2 = _mm512_add_epi64(a2, _mm512_loadu_si512(p + i + 128));
    a3 = _mm512_add_epi64(a3, _mm512_loadu_si512(p + i + 192));
  }
  for (; i + 64 <= n; i += 64) a0 = _mm512_add_epi64(a0, _mm512_loadu_si512(p + i));
  uint64_t s = (uint64_t)_mm512_reduce_add_epi64(_mm512_add_epi64(_mm512_add_epi64(a0, a1), _mm512_add_epi64(a2, a3)));
  for (; i < n; ++i) s += (unsigned char)p[i];
  return s;
}

bool has_avx512() {
  static const bool h = [] {
    __builtin_cpu_init();
    return (bool)__builtin_cpu_supports("avx512f");
  }();
  return h;
}
#endif

// ---- rkv_bench_read_gemv: whole steps of kLinesPerStep(R) 64-byte lines, each line's weights
// times R rows of x held in registers (x in 4 registers: the values do not change the cost),
// into 16 accumulator chains (12 with AVX2's 16 registers), enough to cover the latency of
// the FMA (4 cycles x 2 pipes) and of vdpbf16ps (6 cycles measured on Zen 5). Returns the byte
// offset where the arithmetic stopped (a tail shorter than a step is only read).

// Lines per step: enough multiply-adds per step to touch every chain at least once.
constexpr int64_t lines_per_step(int products_per_line) {
  return products_per_line >= 16 ? 1 : 16 / products_per_line;
}

double read_gemv_scalar(const char* p, int64_t bytes, int32_t dtype, int rows, int64_t* done) {
  const int64_t es = dtype == RKV_DTYPE_F32 ? 4 : 2, count = bytes / es;
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  for (int64_t i = 0; i < count; i++) {
    float w;
    if (dtype == RKV_DTYPE_F32) {
      std::memcpy(&w, p + 4 * i, 4);
    } else {
      uint16_t h;
      std::memcpy(&h, p + 2 * i, 2);
      w = dtype == RKV_DTYPE_BF16 ? bf16_to_float(h) : f16_to_float(h);
    }
    for (int r = 0; r < rows; r++) acc[r & 7] += w * (0.25f * (r & 3) + 0.5f);
  }
  *done = count * es;
  float s = 0;
  for (float a : acc) s += a;
  return s;
}

#if defined(__x86_64__)
template <int DT, int R>
__attribute__((target("avx512f,avx512bw,f16c"))) double read_gemv_avx512(const char* p, int64_t bytes, int64_t pf,
                                                                            int64_t* done) {
  constexpr int kVecs = DT == RKV_DTYPE_F32 ? 1 : 2;  // f32 vectors per 64-byte line
  constexpr int64_t kLines = lines_per_step(R * kVecs);
  __m512 acc[16];
  for (auto& a : acc) a = _mm512_setzero_ps();
  const __m512 xv[4] = {_mm512_set1_ps(0.5f), _mm512_set1_ps(0.75f), _mm512_set1_ps(1.f), _mm512_set1_ps(1.25f)};
  int64_t i = 0;
  for (; i + kLines * 64 <= bytes; i += kLines * 64) {
    if (pf)
      for (int64_t l = 0; l < kLines; l++) __builtin_prefetch(p + i + 64 * l + pf, 0, dense::kWeightPrefetchLocality);
    for (int64_t l = 0; l < kLines; l++) {
      __m512 w[kVecs];
      if constexpr (DT == RKV_DTYPE_F32) {
        w[0] = _mm512_loadu_ps(p + i + 64 * l);
      } else {
        // two 32-byte loads, each widened as it loads (as the GEMV does)
        for (int v = 0; v < 2; v++) {
          const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i + 64 * l + 32 * v));
          if constexpr (DT == RKV_DTYPE_BF16) {
            w[v] = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
          } else {
            w[v] = _mm512_cvtph_ps(h);
          }
        }
      }
      for (int v = 0; v < kVecs; v++)
        for (int r = 0; r < R; r++) {
          const int c = static_cast<int>((l * kVecs * R + v * R + r) % 16);
          acc[c] = _mm512_fmadd_ps(w[v], xv[r & 3], acc[c]);
        }
    }
  }
  *done = i;
  __m512 s = acc[0];
  for (int c = 1; c < 16; c++) s = _mm512_add_ps(s, acc[c]);
  return _mm512_reduce_add_ps(s);
}

// bf16 weights where the GEMV uses vdpbf16ps (x rounded to bf16): one instruction per row per line.
template <int R>
__attribute__((target("avx512f,avx512bw,avx512bf16"))) double read_gemv_bf16_dot(const char* p, int64_t bytes, int64_t pf,
                                                                                   int64_t* done) {
  constexpr int64_t kLines = lines_per_step(R);
  __m512 acc[16];
  for (auto& a : acc) a = _mm512_setzero_ps();
  const __m512bh xv[4] = {(__m512bh)_mm512_set1_epi32(0x3F003F00), (__m512bh)_mm512_set1_epi32(0x3F403F40),
                          (__m512bh)_mm512_set1_epi32(0x3F803F80), (__m512bh)_mm512_set1_epi32(0x3FA03FA0)};
  int64_t i = 0;
  for (; i + kLines * 64 <= bytes; i += kLines * 64) {
    if (pf)
      for (int64_t l = 0; l < kLines; l++) __builtin_prefetch(p + i + 64 * l + pf, 0, dense::kWeightPrefetchLocality);
    for (int64_t l = 0; l < kLines; l++) {
      const __m512bh w = (__m512bh)_mm512_loadu_si512(p + i + 64 * l);
      for (int r = 0; r < R; r++) {
        const int c = static_cast<int>((l * R + r) % 16);
        acc[c] = _mm512_dpbf16_ps(acc[c], w, xv[r & 3]);
      }
    }
  }
  *done = i;
  __m512 s = acc[0];
  for (int c = 1; c < 16; c++) s = _mm512_add_ps(s, acc[c]);
  return _mm512_reduce_add_ps(s);
}

template <int DT, int R>
__attribute__((target("avx2,fma,f16c"))) double read_gemv_avx2(const char* p, int64_t bytes, int64_t pf, int64_t* done) {
  constexpr int kVecs = DT == RKV_DTYPE_F32 ? 2 : 4;  // 8-lane vectors per 64-byte line
  constexpr int kChains = 12;
  constexpr int64_t kLines = lines_per_step(R * kVecs);
  __m256 acc[kChains];
  for (auto& a : acc) a = _mm256_setzero_ps();
  const __m256 xv[2] = {_mm256_set1_ps(0.5f), _mm256_set1_ps(0.75f)};
  int64_t i = 0;
  for (; i + kLines * 64 <= bytes; i += kLines * 64) {
    if (pf)
      for (int64_t l = 0; l < kLines; l++) __builtin_prefetch(p + i + 64 * l + pf, 0, dense::kWeightPrefetchLocality);
    for (int64_t l = 0; l < kLines; l++)
      for (int v = 0; v < kVecs; v++) {
        const char* q = p + i + 64 * l + (64 / kVecs) * v;
        __m256 w;
        if constexpr (DT == RKV_DTYPE_F32) {
          w = _mm256_loadu_ps(reinterpret_cast<const float*>(q));
        } else if constexpr (DT == RKV_DTYPE_BF16) {
          const __m256i e = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q)));
          w = _mm256_castsi256_ps(_mm256_slli_epi32(e, 16));
        } else {
          w = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q)));
        }
        for (int r = 0; r < R; r++) {
          const int c = static_cast<int>((l * kVecs * R + v * R + r) % kChains);
          acc[c] = _mm256_fmadd_ps(w, xv[r & 1], acc[c]);
        }
      }
  }
  *done = i;
  __m256 s = acc[0];
  for (int c = 1; c < kChains; c++) s = _mm256_add_ps(s, acc[c]);
  alignas(32) float t[8];
  _mm256_store_ps(t, s);
  return t[0] + t[1] + t[2] + t[3] + t[4] + t[5] + t[6] + t[7];
}
#endif

using ReadGemvFn = double (*)(const char* p, int64_t bytes, int64_t pf, int64_t* done);

#if defined(__x86_64__)
template <int DT, int R>
ReadGemvFn pick_read_gemv(CpuIsa isa) {
  if (dense::gemv_uses_bf16_dot(DT, R)) return &read_gemv_bf16_dot<R>;
  if (isa == kIsaAvx512) return &read_gemv_avx512<DT, R>;
  if (isa == kIsaAvx2) return &read_gemv_avx2<DT, R>;
  return nullptr;
}

template <int DT, int... Rs>
ReadGemvFn pick_rows(int32_t rows, CpuIsa isa, std::integer_sequence<int, Rs...>) {
  ReadGemvFn fn = nullptr;
  ((rows == Rs + 1 ? (fn = pick_read_gemv<DT, Rs + 1>(isa), 0) : 0), ...);
  return fn;
}

// The vector variant for dtype and rows (1..kGemvMaxRows) on this CPU, or null (scalar).
ReadGemvFn read_gemv_fn(int32_t dtype, int32_t rows) {
  const CpuIsa isa = cpu_isa();
  const auto all = std::make_integer_sequence<int, static_cast<int>(dense::kGemvMaxRows)>{};
  if (dtype == RKV_DTYPE_F32) return pick_rows<RKV_DTYPE_F32>(rows, isa, all);
  if (dtype == RKV_DTYPE_BF16) return pick_rows<RKV_DTYPE_BF16>(rows, isa, all);
  return pick_rows<RKV_DTYPE_F16>(rows, isa, all);
}
#else
ReadGemvFn read_gemv_fn(int32_t, int32_t) { return nullptr; }
#endif

}  // namespace
}  // namespace rkv

extern "C" {

RKV_API int rkv_bench_read(const void* src, int64_t bytes, double* sink) {
  RKV_CHECK(bytes >= 0, "rkv_bench_read: bytes must not be negative, got %lld", (long long)bytes);
  RKV_CHECK_PTR(sink);
  if (bytes > 0) RKV_CHECK_PTR(src);
  const char* p = (const char*)src;
  double total = 0;
#pragma omp parallel reduction(+ : total)
  {
    int64_t b, e;
    rkv::share(bytes, omp_get_thread_num(), omp_get_num_threads(), &b, &e);
    uint64_t s;
#if defined(__x86_64__)
    s = rkv::has_avx512() ? rkv::read_avx512(p + b, e - b) : rkv::read_scalar(p + b, e - b);
#else
    s = rkv::read_scalar(p + b, e - b);
#endif
    total += (double)s;
  }
  *sink = total;
  return RKV_OK;
}

RKV_API int rkv_bench_copy(void* dst, const void* src, int64_t bytes) {
  RKV_CHECK(bytes >= 0, "rkv_bench_copy: bytes must not be negative, got %lld", (long long)bytes);
  if (bytes == 0) return RKV_OK;
  RKV_CHECK_PTR(dst);
  RKV_CHECK_PTR(src);
#pragma omp parallel
  {
    int64_t b, e;
    rkv::share(bytes, omp_get_thread_num(), omp_get_num_threads(), &b, &e);
    if (e > b) std::memcpy((char*)dst + b, (const char*)src + b, (size_t)(e - b));
  }
  return RKV_OK;
}

RKV_API int rkv_bench_read_gemv(const void* w, int64_t bytes, int32_t w_dtype, int32_t rows, int64_t prefetch_bytes,
                                double* sink) {
  RKV_CHECK(bytes >= 0, "rkv_bench_read_gemv: bytes must not be negative, got %lld", (long long)bytes);
  RKV_CHECK(w_dtype == RKV_DTYPE_F32 || w_dtype == RKV_DTYPE_BF16 || w_dtype == RKV_DTYPE_F16,
            "rkv_bench_read_gemv: weight dtype %s (%d) is not supported (f32, bf16 or f16)", rkv::dtype_name(w_dtype),
            w_dtype);
  RKV_CHECK(rows >= 1 && rows <= rkv::dense::kGemvMaxRows, "rkv_bench_read_gemv: rows must be in [1, %d], got %d",
            static_cast<int>(rkv::dense::kGemvMaxRows), rows);
  RKV_CHECK(prefetch_bytes >= 0, "rkv_bench_read_gemv: prefetch_bytes must not be negative, got %lld",
            (long long)prefetch_bytes);
  RKV_CHECK_PTR(sink);
  if (bytes > 0) RKV_CHECK_PTR(w);
  const char* p = (const char*)w;
  const rkv::ReadGemvFn fn = rkv::read_gemv_fn(w_dtype, rows);
  double total = 0;
#pragma omp parallel reduction(+ : total)
  {
    int64_t b, e, done = 0;
    rkv::share(bytes, omp_get_thread_num(), omp_get_num_threads(), &b, &e);
    double s = fn ? fn(p + b, e - b, prefetch_bytes, &done) : rkv::read_gemv_scalar(p + b, e - b, w_dtype, rows, &done);
    s += (double)rkv::read_scalar(p + b + done, e - b - done);
    total += s;
  }
  *sink = total;
  return RKV_OK;
}

}  // extern "C"
