// The thread-local error message behind rkv_last_error (libradixkv) and rkv_cuda_last_error
// (libradixkv_cuda): this file is compiled into both libraries, each with its own slot.
#include <cstdarg>
#include <cstdio>

#include "rkv_common.h"

namespace rkv {

// A fixed buffer, not a std::string: reporting an allocation failure must not allocate.
static thread_local char g_last_error[1024];

int set_error(int code, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(g_last_error, sizeof g_last_error, fmt, ap);
  va_end(ap);
  return code;
}

void clear_error() { g_last_error[0] = '\0'; }

const char* last_error() { return g_last_error; }

const char* dtype_name(int32_t d) {
  switch (d) {
    case RKV_DTYPE_F32: return "f32";
    case RKV_DTYPE_F16: return "f16";
    case RKV_DTYPE_BF16: return "bf16";
    case RKV_DTYPE_FP8_E4M3: return "fp8_e4m3";
    case RKV_DTYPE_FP8_E5M2: return "fp8_e5m2";
    default: return "unknown";
  }
}

}  // namespace rkv
