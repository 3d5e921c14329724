// Streaming copies (see stream_store.h): 32-byte non-temporal stores (AVX2) with ordinary
// stores for the unaligned head and tail of the destination.
#include "stream_store.h"

#include <cstring>

#include "rkv_isa.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace rkv {
namespace {

#if defined(__x86_64__)
__attribute__((target("avx2"))) void stream_copy_avx2(char* d, const char* s, int64_t bytes) {
  const int64_t head = (int64_t)((32 - (reinterpret_cast<uintptr_t>(d) & 31)) & 31);
  if (bytes < head + 128) {
    std::memcpy(d, s, (size_t)bytes);
    return;
  }
  std::memcpy(d, s, (size_t)head);
  int64_t i = head;
  for (; i + 128 <= bytes; i += 128) {
    __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i));
    __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i + 32));
    __m256i c = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i + 64));
    __m256i e = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i + 96));
    _mm256_stream_si256(reinterpret_cast<__m256i*>(d + i), a);
    _mm256_stream_si256(reinterpret_cast<__m256i*>(d + i + 32), b);
    _mm256_stream_si256(reinterpret_cast<__m256i*>(d + i + 64), c);
    _mm256_stream_si256(reinterpret_cast<__m256i*>(d + i + 96), e);
  }
  for (; i + 32 <= bytes; i += 32)
    _mm256_stream_si256(reinterpret_cast<__m256i*>(d + i), _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i)));
  std::memcpy(d + i, s + i, (size_t)(bytes - i));
}
#endif

}  // namespace

void stream_copy(void* dst, const void* src, int64_t bytes) {
#if defined(__x86_64__)
  static const bool avx2 = cpu_isa() >= kIsaAvx2;
  if (avx2) {
    stream_copy_avx2(static_cast<char*>(dst), static_cast<const char*>(src), bytes);
    return;
  }
#endif
  std::memcpy(dst, src, (size_t)bytes);
}

void stream_convert(const RowConverter& c, bool copy, const void* src, int ss, void* dst, int ds, int64_t n) {
  if (copy) {
    stream_copy(dst, src, n * ds);
    return;
  }
  constexpr int64_t kBounceBytes = 8192;  // stays in L1 between the conversion and the copy
  alignas(64) char buf[kBounceBytes];
  const int64_t per = kBounceBytes / ds;
  const char* s = static_cast<const char*>(src);
  char* d = static_cast<char*>(dst);
  for (int64_t i = 0; i < n; i += per) {
    const int64_t len = n - i < per ? n - i : per;
    c.fn(s + i * ss, buf, len, c.scale);
    stream_copy(d + i * ds, buf, len * ds);
  }
}

void stream_fence() {
#if defined(__x86_64__)
  _mm_sfence();
#endif
}

}  // namespace rkv
