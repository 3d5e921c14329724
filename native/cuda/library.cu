// libradixkv_cuda library-wide entry points (the error slot itself is rkv_error.cpp).
#include "rkv_cuda_common.cuh"

extern "C" {

RKV_API const char* rkv_cuda_last_error(void) { return rkv::last_error(); }

RKV_API int32_t rkv_cuda_abi_version(void) { return RKV_ABI_VERSION; }

RKV_API int rkv_cuda_device_count(void) {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) return rkv::set_error(RKV_ERR_CUDA, "cudaGetDeviceCount: %s", cudaGetErrorString(e));
  return n;
}

}  // extern "C"
