// cuBLAS loaded at run time: libcublas is not part of the toolkit on the build machines, so
// libradixkv_cuda is built without its headers and finds the library of the user's CUDA
// installation with dlopen. Only the few functions radixkv calls are declared, with the
// types and enum values of cuBLAS's public ABI (cublas_api.h, stable since CUDA 11).
// Plain C++ with no CUDA include: the native tests compile this file on the CPU.
#pragma once

#include <stdint.h>

namespace rkv_cublas {

using Handle = void*;  // cublasHandle_t
using Status = int;    // cublasStatus_t
constexpr Status kStatusSuccess = 0;
constexpr int kOpN = 0, kOpT = 1;            // cublasOperation_t
constexpr int kComputeF32 = 68;              // CUBLAS_COMPUTE_32F (full f32, no TF32)
constexpr int kDataF32 = 0, kDataBf16 = 14;  // cudaDataType: CUDA_R_32F, CUDA_R_16BF
constexpr int kGemmDefault = -1;             // CUBLAS_GEMM_DEFAULT

struct Api {
  Status (*create)(Handle*);                  // cublasCreate_v2
  Status (*set_stream)(Handle, void*);        // cublasSetStream_v2 (cudaStream_t)
  Status (*destroy)(Handle);                  // cublasDestroy_v2
  Status (*gemm_ex)(Handle, int transa, int transb, int m, int n, int k, const void* alpha, const void* a,
                    int a_type, int lda, const void* b, int b_type, int ldb, const void* beta, void* c, int c_type,
                    int ldc, int compute_type, int algo);  // cublasGemmEx
  const char* library;                        // the file that was loaded
};

// The loaded API, or nullptr with rkv::last_error() naming the missing library or symbol.
// The first call decides (thread-safe); later calls return the same result. The search
// order is $RADIXKV_CUBLAS (a file path), then libcublas.so.13/.12/.11/libcublas.so through
// the dynamic loader's path, then $CUDA_HOME/lib64, /usr/local/cuda/lib64.
const Api* api();
// The status name for messages ("CUBLAS_STATUS_NOT_INITIALIZED", ...).
const char* status_name(Status s);

}  // namespace rkv_cublas
