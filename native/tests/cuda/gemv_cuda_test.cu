// rkv_cuda_linear's small-m GEMV kernel (native/cuda/gemv.cu) on a device: for m <= kGemvMaxRows
// the result must equal gemv_math.h's reference_dot (the kernel's documented summation order,
// run on the CPU) bit for bit, and a double-precision dot product within the f32 error bound
// of that order; shapes cover the vectorized and scalar (odd k, offset views) loads, one and
// several warps per row, partial last blocks, accumulate on and off. m = kGemvMaxRows + 1 must
// go through cuBLAS (bf16: x rounded to bf16) and agree with its own double reference.
// Run by scripts/gpu-check (ctest label "gpu"); exits 77 (skipped) without a CUDA device.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "gemv_math.h"
#include "radixkv.h"
#include "../rkv_test.h"
#include "cuda_test_util.cuh"



static std::mt19937 rng(11);

static const char* dt_name(int32_t d) { return d == RKV_DTYPE_F32 ? "f32" : "bf16"; }

static std::vector<float> randn(size_t n, float scale) {
  std::normal_distribution<float> d(0.f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

struct Case {
  int64_t m, n, k;
  size_t x_offset;  // elements: an offset view of x (misaligned for 1)
  // (warps per row and rows per warp follow from m and n: gemv_math.h)
};

static void check_gemv(int32_t wd, const Case& c) {
  const int64_t m = c.m, n = c.n, k = c.k;
  const auto x = randn(m * k, 1.f), w = randn(n * k, 0.05f), y0 = randn(m * n, 1.f);
  std::vector<uint16_t> wb(w.size());
  for (size_t i = 0; i < w.size(); i++) wb[i] = rkv::float_to_bf16(w[i]);
  float* dx_base = to_dev(x, c.x_offset);
  const float* dx = dx_base + c.x_offset;
  void* dw = wd == RKV_DTYPE_F32 ? (void*)to_dev(w) : (void*)to_dev(wb);
  const int vec = rkv_gemv::vec_elems(wd, (uintptr_t)dx, (uintptr_t)dw, k);
  const int wpr = rkv_gemv::warps_per_row((int)m, n);
  // the kernel's order on the CPU, and the exact dot products
  std::vector<float> dot(m * n);
  std::vector<double> exact(m * n), mag(m * n);
  for (int64_t r = 0; r < m; r++)
    for (int64_t j = 0; j < n; j++) {
      dot[r * n + j] = wd == RKV_DTYPE_F32
                           ? rkv_gemv::reference_dot<RKV_DTYPE_F32>(&x[r * k], &w[j * k], k, vec, wpr)
                           : rkv_gemv::reference_dot<RKV_DTYPE_BF16>(&x[r * k], &wb[j * k], k, vec, wpr);
      double e = 0, a = 0;
      for (int64_t i = 0; i < k; i++) {
        const double wv = wd == RKV_DTYPE_F32 ? (double)w[j * k + i] : (double)rkv::bf16_to_float(wb[j * k + i]);
        e += (double)x[r * k + i] * wv;
        a += std::fabs((double)x[r * k + i] * wv);
      }
      exact[r * n + j] = e;
      mag[r * n + j] = a;
    }
  const double chain = (double)rkv_gemv::rounding_chain(k, vec, wpr) * std::ldexp(1.0, -24);
  for (int acc : {0, 1}) {
    float* dy = to_dev(y0);
    const int rc = rkv_cuda_linear(dx, dw, wd, dy, m, n, k, acc, g_stream);
    EXPECT(rc == RKV_OK, "rkv_cuda_linear: %s", rkv_cuda_last_error());
    const std::vector<float> got = to_host(dy, m * n);
    int bad = 0;
    for (int64_t i = 0; i < m * n && bad < 3; i++) {
      const float want = acc ? rkv_gemv::combine(y0[i], dot[i]) : dot[i];
      const double ex = acc ? exact[i] + y0[i] : exact[i];
      const double bound = chain * (mag[i] + (acc ? std::fabs(y0[i]) : 0.0));
      const bool same = got[i] == want, close = std::fabs(got[i] - ex) <= bound;
      if (!same || !close) {
        EXPECT(false,
               "%s m=%lld n=%lld k=%lld x+%zu vec=%d wpr=%d acc=%d [%lld, %lld]: GPU %.9g, order %.9g, exact %.12g "
               "(bound %.3g)",
               dt_name(wd), (long long)m, (long long)n, (long long)k, c.x_offset, vec, wpr, acc,
               (long long)(i / n), (long long)(i % n), got[i], want, ex, bound);
        bad++;
      }
    }
    cudaFree(dy);
  }
  cudaFree(dx_base);
  cudaFree(dw);
}

// m = kGemvMaxRows + 1: cuBLAS. With bf16 weights it rounds x to bf16, so it must agree with the
// rounded-x reference, and its distance to the unrounded-x result (~2^-9 relative per term)
// must dwarf its distance to the rounded one (f32 noise): the dispatch really went to cuBLAS.
static void check_cublas_above_threshold(int32_t wd) {
  EXPECT(rkv_cuda_blas_available() == RKV_OK, "cuBLAS: %s", rkv_cuda_last_error());
  const int64_t m = rkv_gemv::kGemvMaxRows + 1, n = 300, k = 1024;
  const auto x = randn(m * k, 1.f), w = randn(n * k, 0.05f);
  std::vector<uint16_t> wb(w.size());
  for (size_t i = 0; i < w.size(); i++) wb[i] = rkv::float_to_bf16(w[i]);
  float* dx = to_dev(x);
  void* dw = wd == RKV_DTYPE_F32 ? (void*)to_dev(w) : (void*)to_dev(wb);
  float* dy = to_dev(std::vector<float>(m * n, 0.f));
  EXPECT(rkv_cuda_linear(dx, dw, wd, dy, m, n, k, 0, g_stream) == RKV_OK, "%s", rkv_cuda_last_error());
  const std::vector<float> got = to_host(dy, m * n);
  int bad = 0;
  double dist_rounded = 0, dist_unrounded = 0;
  for (int64_t r = 0; r < m; r++)
    for (int64_t j = 0; j < n; j++) {
      double e = 0, eu = 0, a = 0;
      for (int64_t i = 0; i < k; i++) {
        const float xi = x[r * k + i];
        const double wv = wd == RKV_DTYPE_F32 ? (double)w[j * k + i] : (double)rkv::bf16_to_float(wb[j * k + i]);
        const double xr = wd == RKV_DTYPE_F32 ? (double)xi : (double)rkv::bf16_to_float(rkv::float_to_bf16(xi));
        e += xr * wv;
        eu += (double)xi * wv;
        a += std::fabs(xr * wv);
      }
      // 2^-23: tensor-core accumulation may truncate instead of rounding to nearest
      const double bound = (double)(k + 8) * std::ldexp(1.0, -23) * a;
      const double g = got[r * n + j];
      if (!(std::fabs(g - e) <= bound) && bad < 3) {
        EXPECT(false, "cuBLAS %s m=%lld [%lld, %lld]: GPU %.9g vs exact %.12g (bound %.3g)", dt_name(wd),
               (long long)m, (long long)r, (long long)j, got[r * n + j], e, bound);
        bad++;
      }
      dist_rounded += std::fabs(g - e);
      dist_unrounded += std::fabs(g - eu);
    }
  if (wd == RKV_DTYPE_BF16)
    EXPECT(dist_unrounded > 100 * dist_rounded,
           "m=%lld bf16: sum |y - rounded-x result| %.3g, sum |y - unrounded-x result| %.3g: not the cuBLAS path?",
           (long long)m, dist_rounded, dist_unrounded);
  cudaFree(dx);
  cudaFree(dw);
  cudaFree(dy);
}

// Argument errors are reported (code + message), never launched, on the GEMV path too.
static void check_errors() {
  float* d = to_dev(std::vector<float>(64, 0.f));
  EXPECT(rkv_cuda_linear(d, d, RKV_DTYPE_F16, d + 32, 1, 4, 4, 0, g_stream) == RKV_ERR_INVALID_ARGUMENT,
         "f16 weights accepted");
  EXPECT(rkv_cuda_linear(d, d, RKV_DTYPE_F32, d + 32, 1, 0, 4, 0, g_stream) == RKV_ERR_INVALID_ARGUMENT,
         "n = 0 accepted");
  EXPECT(rkv_cuda_linear(nullptr, d, RKV_DTYPE_F32, d + 32, 1, 4, 4, 0, g_stream) == RKV_ERR_INVALID_ARGUMENT,
         "x = NULL accepted");
  EXPECT(rkv_cuda_linear(d, d, RKV_DTYPE_F32, d + 32, 0, 4, 4, 0, g_stream) == RKV_OK, "m = 0: %s",
         rkv_cuda_last_error());
  cudaFree(d);
}

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("gemv_cuda_test: no CUDA device, skipped\n");
    return 77;
  }
  cudaStreamCreate(&g_stream);
  const Case cases[] = {
      {1, 33, 4097, 0},    // scalar loads (odd k), 4 warps per row, partial block
      {2, 33, 4097, 0},    //
      {3, 300, 3072, 0},   // vectorized, 4 warps per row
      {8, 300, 3072, 0},   //
      {8, 33, 4097, 0},    // m = 8, scalar, last block mostly past n
      {1, 2051, 256, 0},   // one warp per row, partial last block
      {3, 2051, 256, 0},   //
      {8, 2051, 256, 0},   //
      {2, 2048, 1004, 0},  // one warp per row, k % 8 == 4: bf16 scalar, f32 vectorized
      {1, 300, 3072, 1},   // x at an odd float offset: scalar loads
      {8, 64, 4, 0},       // k smaller than a warp's lanes
      {3, 4097, 64, 0},    // 2 rows per warp, one warp per row, partial last block
      {8, 8195, 64, 0},    // 4 rows per warp, one warp per row, partial last block
      {5, 8195, 66, 0},    // the same with scalar loads
  };
  for (int32_t wd : {RKV_DTYPE_F32, RKV_DTYPE_BF16})
    for (const Case& c : cases) check_gemv(wd, c);
  check_cublas_above_threshold(RKV_DTYPE_F32);
  check_cublas_above_threshold(RKV_DTYPE_BF16);
  check_errors();
  cudaStreamDestroy(g_stream);
  if (g_failures) {
    std::fprintf(stderr, "%d failure(s)\n", g_failures);
    return 1;
  }
  std::printf("gemv_cuda_test: OK\n");
  return 0;
}
