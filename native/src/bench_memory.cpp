// Memory-bandwidth baselines for the benchmarks: a streaming read and a copy over the same
// OpenMP threads the kernels use, so kernel GB/s can be compared with what the machine
// delivers in the same run.
#include <omp.h>

#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
// GCC 12 false positive on the undefined pass-through operands inside AVX-512 intrinsics.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

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

}  // extern "C"
