// A stand-in libcublas for cublas_loader_test: exports the four functions the loader
// resolves, so the success path (every symbol found, calls reaching the library) is tested
// on machines without cuBLAS. Only the call plumbing is faked; no GEMM result is claimed.
extern "C" {
__attribute__((visibility("default"))) int cublasCreate_v2(void** h) {
  static int token;
  *h = &token;
  return 0;
}
__attribute__((visibility("default"))) int cublasSetStream_v2(void*, void*) { return 0; }
__attribute__((visibility("default"))) int cublasDestroy_v2(void*) { return 0; }
// Returns m * 1000000 + n * 1000 + k so the test sees the arguments arrive in order.
__attribute__((visibility("default"))) int cublasGemmEx(void*, int, int, int m, int n, int k, const void*, const void*,
                                                        int, int, const void*, int, int, const void*, void*, int, int,
                                                        int, int) {
  return m * 1000000 + n * 1000 + k;
}
}
