// Decode-GEMV benchmark for scripts/gpu-check: rkv_cuda_linear at m = 1 and m = kGemvMaxRows
// (the GEMV kernel, gemv.cu) and m = kGemvMaxRows + 1 (cuBLAS) on a Llama-3.2-3B gate/up
// shape (n 8192, k 3072), f32 and bf16 weights, as GB/s of weight bytes and its ratio to the
// device copy bandwidth measured in the same run; plus the host time to issue one call.
// Each timed call reads a different weight buffer (8 of them, 400 / 800 MiB in all) so that
// the 50 MB L2 cannot serve repeated reads. Prints one "bench" line each:
//   bench <name> <value> <unit> <ratio-or-dash>
// Exits 77 without a device.
#include <cuda_runtime.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "radixkv.h"

static const char* const kBenchName = "gemv_bench";
#include "bench_util.cuh"

int main() {
  cudaStream_t s;
  double copy_gbs;
  if (int rc = bench_start("gemv_copy_d2d", &s, &copy_gbs)) return rc;

  const int64_t n = 8192, k = 3072, max_m = 16;
  const int kBuffers = 8;
  float *x, *y;
  CK(cudaMalloc(&x, max_m * k * 4));
  CK(cudaMalloc(&y, max_m * n * 4));
  CK(cudaMemset(x, 0, max_m * k * 4));
  const bool have_blas = rkv_cuda_blas_available() == RKV_OK;
  if (!have_blas) std::fprintf(stderr, "gemv_bench: no cuBLAS (%s): m > 8 not measured\n", rkv_cuda_last_error());
  for (int32_t wd : {RKV_DTYPE_BF16, RKV_DTYPE_F32}) {
    const char* dn = wd == RKV_DTYPE_F32 ? "f32" : "bf16";
    const size_t wbytes = (size_t)(n * k) * (wd == RKV_DTYPE_F32 ? 4 : 2);
    std::vector<void*> w(kBuffers);
    for (auto& p : w) {
      CK(cudaMalloc(&p, wbytes));
      CK(cudaMemset(p, 0, wbytes));
    }
    for (int64_t m : {int64_t{1}, int64_t{8}, int64_t{9}}) {
      if (m > 8 && !have_blas) continue;
      int st = RKV_OK;
      const float ms = time_ms(s, 64, [&](int i) {
        const int r = rkv_cuda_linear(x, w[i % kBuffers], wd, y, m, n, k, 0, s);
        if (r != RKV_OK) st = r;
      });
      if (st != RKV_OK) {
        std::fprintf(stderr, "gemv_bench: rkv_cuda_linear m=%lld %s: %s\n", (long long)m, dn, rkv_cuda_last_error());
        return 1;
      }
      const double gbs = wbytes / (ms * 1e6);
      std::printf("bench %s_%s_m%lld_8192x3072 %.1f GB/s %.2f\n", m <= 8 ? "gemv" : "gemm_cublas", dn, (long long)m,
                  gbs, gbs / copy_gbs);
    }
    // host time to issue one m = 1 call (no synchronization inside rkv_cuda_linear)
    const int calls = 256;
    CK(cudaStreamSynchronize(s));
    const auto t0 = std::chrono::steady_clock::now();
    int st = RKV_OK;
    for (int i = 0; i < calls; i++) {
      const int r = rkv_cuda_linear(x, w[i % kBuffers], wd, y, 1, n, k, 0, s);
      if (r != RKV_OK) st = r;
    }
    const auto t1 = std::chrono::steady_clock::now();
    CK(cudaStreamSynchronize(s));
    if (st != RKV_OK) return 1;
    std::printf("bench gemv_%s_m1_issue %.2f us/call -\n", dn,
                std::chrono::duration<double, std::micro>(t1 - t0).count() / calls);
    for (auto p : w) CK(cudaFree(p));
  }
  CK(cudaFree(x));
  CK(cudaFree(y));
  return 0;
}
