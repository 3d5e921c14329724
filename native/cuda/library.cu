// libradixkv_cuda library-wide entry points.
#include <cstdarg>
#include <cstdio>
#include <string>

#include "rkv_cuda_common.cuh"

namespace rkv_cuda {
static thread_local std::string g_last_error;

int set_error(int code, const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  g_last_error = buf;
  return code;
}

cudaStream_t current_stream() { return 0; }
}  // namespace rkv_cuda

extern "C" {

RKV_API const char* rkv_cuda_last_error(void) { return rkv_cuda::g_last_error.c_str(); }

RKV_API int rkv_cuda_device_count(void) {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) return rkv_cuda::set_error(RKV_ERR_CUDA, "cudaGetDeviceCount: %s", cudaGetErrorString(e));
  return n;
}

}  // extern "C"
