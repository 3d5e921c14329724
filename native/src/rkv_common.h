// Shared by every kernel file of both libraries (libradixkv and libradixkv_cuda): error
// reporting with a thread-local message (rkv_error.cpp, compiled into each library, so each
// keeps its own rkv_last_error / rkv_cuda_last_error slot), dtype facts, argument-check
// macros, and the RKV_HD marker for arithmetic helpers compiled for both the CPU and CUDA.
#pragma once

#include <stdint.h>

#include <new>

#include "radixkv.h"

#if defined(__CUDACC__)
#define RKV_HD __host__ __device__ __forceinline__
#else
#define RKV_HD inline
#endif

namespace rkv {

// Stores a printf-style message in the calling thread's error slot and returns code.
int set_error(int code, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
void clear_error();
// The calling thread's last message ("" when none); valid until its next set_error.
const char* last_error();

RKV_HD bool is_valid_dtype(int32_t d) { return d >= RKV_DTYPE_F32 && d <= RKV_DTYPE_FP8_E5M2; }
RKV_HD bool is_fp8(int32_t d) { return d == RKV_DTYPE_FP8_E4M3 || d == RKV_DTYPE_FP8_E5M2; }
// Bytes per element, -1 for an unknown dtype (constexpr: also a template's compile-time constant).
RKV_HD constexpr int dtype_size(int32_t d) {
  switch (d) {
    case RKV_DTYPE_F32: return 4;
    case RKV_DTYPE_F16:
    case RKV_DTYPE_BF16: return 2;
    case RKV_DTYPE_FP8_E4M3:
    case RKV_DTYPE_FP8_E5M2: return 1;
    default: return -1;
  }
}
const char* dtype_name(int32_t d);

// True when the byte ranges [a, a + abytes) and [b, b + bbytes) share a byte (empty ranges never do).
inline bool overlaps(const void* a, int64_t abytes, const void* b, int64_t bbytes) {
  auto pa = reinterpret_cast<uintptr_t>(a), pb = reinterpret_cast<uintptr_t>(b);
  return abytes > 0 && bbytes > 0 && pa < pb + static_cast<uintptr_t>(bbytes) &&
         pb < pa + static_cast<uintptr_t>(abytes);
}

// Runs the body of an entry point that allocates (int body()), returning RKV_ERR_OUT_OF_MEMORY
// with a message naming `what` when an allocation fails: an exception must not cross the C ABI
// (the Java downcall would take the process down with it).
template <typename F>
int no_throw(const char* what, F&& body) noexcept {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return set_error(RKV_ERR_OUT_OF_MEMORY, "%s: out of memory", what);
  }
}

}  // namespace rkv

// Early-return helpers for argument validation inside extern "C" entry points.
#define RKV_CHECK(cond, ...)                                                     \
  do {                                                                           \
    if (!(cond)) return ::rkv::set_error(RKV_ERR_INVALID_ARGUMENT, __VA_ARGS__); \
  } while (0)
#define RKV_CHECK_PTR(p) RKV_CHECK((p) != nullptr, "%s must not be NULL", #p)
