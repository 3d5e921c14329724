// The CUDA dense kernels and the cuBLAS GEMM on a real device, against libradixkv's CPU
// kernels on the same inputs. Run by scripts/gpu-check (ctest label "gpu"); exits 77
// (skipped) when no CUDA device is present, so ctest on a GPU-less machine reports a skip.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

#include "radixkv.h"
#include "../rkv_test.h"
#include "cuda_test_util.cuh"


#define OK(call) EXPECT((call) == RKV_OK, "%s: %s", #call, rkv_cuda_last_error())

static std::mt19937 rng(5);

static std::vector<float> randn(size_t n, float scale = 1.f) {
  std::normal_distribution<float> d(0.f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

static void expect_close(const char* what, const std::vector<float>& got, const std::vector<float>& want, float rel,
                         float abs_tol) {
  int bad = 0;
  for (size_t i = 0; i < want.size() && bad < 3; i++) {
    if (!(std::fabs(got[i] - want[i]) <= abs_tol + rel * std::fabs(want[i]))) {
      EXPECT(false, "%s[%zu]: GPU %.9g vs CPU %.9g", what, i, got[i], want[i]);
      bad++;
    }
  }
}

static void test_linear() {
  EXPECT(rkv_cuda_blas_available() == RKV_OK, "cuBLAS: %s", rkv_cuda_last_error());
  for (int32_t wd : {RKV_DTYPE_F32, RKV_DTYPE_BF16}) {
    const int64_t m = 17, n = 300, k = 257;
    auto x = randn(m * k), w = randn(n * k, 0.1f), y0 = randn(m * n);
    std::vector<uint16_t> wb(w.size());
    std::vector<float> w_used = w;
    if (wd == RKV_DTYPE_BF16) {
      OK(rkv_convert(w.data(), RKV_DTYPE_F32, wb.data(), RKV_DTYPE_BF16, (int64_t)w.size(), 1.f));
    }
    const void* wh = wd == RKV_DTYPE_F32 ? (const void*)w.data() : (const void*)wb.data();
    for (int acc : {0, 1}) {
      std::vector<float> want = y0;
      EXPECT(rkv_linear(x.data(), wh, wd, want.data(), m, n, k, acc) == RKV_OK, "%s", rkv_last_error());
      float* dx = to_dev(x);
      void* dw = wd == RKV_DTYPE_F32 ? (void*)to_dev(w) : (void*)to_dev(wb);
      float* dy = to_dev(y0);
      OK(rkv_cuda_linear(dx, dw, wd, dy, m, n, k, acc, g_stream));
      const std::vector<float> got = to_host(dy, m * n);
      if (wd == RKV_DTYPE_F32) {
        expect_close("linear f32", got, want, 1e-4f, 1e-3f);  // only the summation order differs
      } else {
        // cuBLAS rounds x to bf16 (RNE), the CPU may not: the difference is bounded by the
        // rounding of x, |x - bf16(x)| <= 2^-8 |x|, summed over k (plus f32 summation noise)
        int bad = 0;
        for (int64_t i = 0; i < m && bad < 3; i++)
          for (int64_t j = 0; j < n && bad < 3; j++) {
            double bound = 0;
            for (int64_t kk = 0; kk < k; kk++) bound += std::fabs(x[i * k + kk]) * std::fabs(w[j * k + kk]);
            bound = bound * (1.0 / 256) + 1e-6 + 1e-5 * std::fabs(want[i * n + j]);
            const double d = std::fabs((double)got[i * n + j] - want[i * n + j]);
            if (!(d <= bound)) {
              EXPECT(false, "linear bf16 acc=%d [%lld, %lld]: GPU %.9g vs CPU %.9g, |diff| %.3g > bound %.3g", acc,
                     (long long)i, (long long)j, got[i * n + j], want[i * n + j], d, bound);
              bad++;
            }
          }
      }
      cudaFree(dx);
      cudaFree(dw);
      cudaFree(dy);
    }
  }
}

static void test_norm_rope_elementwise() {
  for (float off : {0.f, 1.f}) {
    const int64_t rows = 9;
    const int32_t dim = 1000;
    auto x = randn(rows * dim, 2.f), w = randn(dim, 0.3f);
    std::vector<float> want(x.size());
    EXPECT(rkv_rmsnorm(x.data(), w.data(), want.data(), rows, dim, 1e-6f, off) == RKV_OK, "%s", rkv_last_error());
    float* dx = to_dev(x);
    float* dw = to_dev(w);
    OK(rkv_cuda_rmsnorm(dx, dw, dx, rows, dim, 1e-6f, off, g_stream));  // in place
    expect_close("rmsnorm", to_host(dx, x.size()), want, 1e-5f, 1e-6f);
    cudaFree(dx);
    cudaFree(dw);
  }
  {
    const int64_t n = 6;
    const int32_t hq = 8, hk = 2, d = 128;
    std::vector<double> inv(d / 2);
    for (int i = 0; i < d / 2; i++) inv[i] = std::pow(10000.0, -2.0 * i / d);
    std::vector<int32_t> pos = {0, 3, 100, 4095, 30000, 7};
    auto q = randn(n * hq * d), k = randn(n * hk * d);
    auto qw = q, kw = k;
    EXPECT(rkv_rope_table(qw.data(), kw.data(), pos.data(), n, hq, hk, d, inv.data()) == RKV_OK, "%s",
           rkv_last_error());
    float* dq = to_dev(q);
    float* dk = to_dev(k);
    int32_t* dp = to_dev(pos);
    double* di = to_dev(inv);
    OK(rkv_cuda_rope_table(dq, dk, dp, n, hq, hk, d, di, g_stream));
    expect_close("rope q", to_host(dq, q.size()), qw, 1e-5f, 1e-5f);
    expect_close("rope k", to_host(dk, k.size()), kw, 1e-5f, 1e-5f);
    cudaFree(dq);
    cudaFree(dk);
    cudaFree(dp);
    cudaFree(di);
  }
  {
    const int64_t rows = 5;
    const int32_t inter = 3000;
    auto gu = randn(rows * 2 * inter, 2.f);
    std::vector<float> want(rows * inter);
    float* dg = to_dev(gu);
    float* dout = to_dev(want);
    EXPECT(rkv_silu_mul(gu.data(), want.data(), rows, inter) == RKV_OK, "%s", rkv_last_error());
    OK(rkv_cuda_silu_mul(dg, dout, rows, inter, g_stream));
    expect_close("silu_mul", to_host(dout, want.size()), want, 1e-5f, 1e-6f);
    EXPECT(rkv_gelu_tanh_mul(gu.data(), want.data(), rows, inter) == RKV_OK, "%s", rkv_last_error());
    OK(rkv_cuda_gelu_tanh_mul(dg, dout, rows, inter, g_stream));
    expect_close("gelu_tanh_mul", to_host(dout, want.size()), want, 1e-5f, 1e-6f);
    auto bias = randn(inter), res = randn(rows * inter);
    float* db = to_dev(bias);
    float* dr = to_dev(res);
    EXPECT(rkv_add_bias(want.data(), bias.data(), rows, inter) == RKV_OK, "%s", rkv_last_error());
    OK(rkv_cuda_add_bias(dout, db, rows, inter, g_stream));
    EXPECT(rkv_add_inplace(want.data(), res.data(), rows * inter) == RKV_OK, "%s", rkv_last_error());
    OK(rkv_cuda_add_inplace(dout, dr, rows * inter, g_stream));
    EXPECT(rkv_soft_cap(want.data(), rows * inter, 3.f) == RKV_OK, "%s", rkv_last_error());
    OK(rkv_cuda_soft_cap(dout, rows * inter, 3.f, g_stream));
    EXPECT(rkv_scale(want.data(), rows * inter, 0.7f) == RKV_OK, "%s", rkv_last_error());
    OK(rkv_cuda_scale(dout, rows * inter, 0.7f, g_stream));
    expect_close("bias+add+soft_cap+scale", to_host(dout, want.size()), want, 1e-5f, 1e-6f);
    cudaFree(dg);
    cudaFree(dout);
    cudaFree(db);
    cudaFree(dr);
  }
}

static void test_embedding_argmax() {
  const int32_t vocab = 1000, dim = 64;
  auto table = randn((size_t)vocab * dim);
  std::vector<int32_t> ids = {0, 999, 5, 5, 123};
  const int64_t n = (int64_t)ids.size();
  std::vector<float> want(n * dim);
  EXPECT(rkv_embedding(ids.data(), n, table.data(), RKV_DTYPE_F32, vocab, dim, want.data()) == RKV_OK, "%s",
         rkv_last_error());
  float* dt = to_dev(table);
  int32_t* di = to_dev(ids);
  float* dout = to_dev(want);
  std::vector<int64_t> zero(RKV_CUDA_ERROR_RECORD_SLOTS, 0);
  int64_t* dflag = to_dev(zero);
  OK(rkv_cuda_embedding(di, n, dt, RKV_DTYPE_F32, vocab, dim, dout, dflag, g_stream));
  expect_close("embedding", to_host(dout, want.size()), want, 0.f, 0.f);
  EXPECT(to_host(dflag, 1)[0] == RKV_CUDA_DEVERR_NONE, "valid ids flagged");
  std::vector<int32_t> bad = {1, 1000, 2, 7};
  int32_t* dbad = to_dev(bad);
  OK(rkv_cuda_embedding(dbad, 4, dt, RKV_DTYPE_F32, vocab, dim, dout, dflag, g_stream));
  const std::vector<int64_t> rec = to_host(dflag, RKV_CUDA_ERROR_RECORD_SLOTS);
  EXPECT(rec[0] == RKV_CUDA_DEVERR_BAD_TOKEN && rec[1] == 1 && rec[2] == 1000 && rec[3] == vocab,
         "error record {%lld, %lld, %lld, %lld}, want {%d, 1, 1000, %d}", (long long)rec[0], (long long)rec[1],
         (long long)rec[2], (long long)rec[3], RKV_CUDA_DEVERR_BAD_TOKEN, vocab);
  const std::vector<float> rows_out = to_host(dout, 4 * dim);
  for (int32_t d = 0; d < dim; d++) EXPECT(rows_out[dim + d] == 0.f, "bad token row not zeroed at %d", d);

  const int64_t rows = 4;
  const int32_t v = 50257;
  auto logits = randn(rows * v, 4.f);
  logits[1 * v + 7] = logits[1 * v + 40000] = 100.f;  // tie: first wins
  for (int32_t i = 0; i < v; i++) logits[2 * v + i] = NAN;
  logits[3 * v + 0] = NAN;
  std::vector<int32_t> amax(rows), gmax;
  EXPECT(rkv_argmax(logits.data(), rows, v, amax.data()) == RKV_OK, "%s", rkv_last_error());
  float* dl = to_dev(logits);
  int32_t* dam = to_dev(amax);
  OK(rkv_cuda_argmax(dl, rows, v, dam, g_stream));
  gmax = to_host(dam, rows);
  for (int64_t r = 0; r < rows; r++) EXPECT(gmax[r] == amax[r], "argmax row %lld: GPU %d CPU %d", (long long)r, gmax[r], amax[r]);
  cudaFree(dt);
  cudaFree(di);
  cudaFree(dout);
  cudaFree(dflag);
  cudaFree(dbad);
  cudaFree(dl);
  cudaFree(dam);
}

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("dense_cuda_test: no CUDA device, skipped\n");
    return 77;
  }
  cudaStreamCreate(&g_stream);
  test_linear();
  test_norm_rope_elementwise();
  test_embedding_argmax();
  cudaStreamDestroy(g_stream);
  if (g_failures) {
    std::fprintf(stderr, "%d failure(s)\n", g_failures);
    return 1;
  }
  std::printf("dense_cuda_test: OK\n");
  return 0;
}
