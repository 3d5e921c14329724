// The CUDA dense kernels' arithmetic on the CPU: every per-element body of rkv_dense_elem.h
// (what native/cuda/dense_*.cu run on the device), driven in the device kernels' index order
// and, for the reductions, in their exact reduction order (256 threads, warp xor-shuffles,
// per-warp partials), compared with the CPU kernels of libradixkv.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "radixkv.h"
#include "rkv_dense_elem.h"
#include "rkv_test.h"



namespace de = rkv::dense_elem;
static std::mt19937 rng(77);
constexpr int kThreads = 256;  // the dense kernels' block size (dense_launch.cuh)

static std::vector<float> randn(size_t n, float scale = 1.f) {
  std::normal_distribution<float> d(0.f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

static bool close(float a, float b, float rel = 2e-6f, float abs_tol = 1e-6f) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  if (a == b) return true;  // equal infinities too
  return std::fabs(a - b) <= abs_tol + rel * std::fabs(b);
}

static void expect_close(const char* what, const std::vector<float>& got, const std::vector<float>& want,
                         float rel = 2e-6f) {
  EXPECT(got.size() == want.size(), "%s: size", what);
  int bad = 0;
  for (size_t i = 0; i < got.size() && bad < 3; i++) {
    if (!close(got[i], want[i], rel)) {
      EXPECT(false, "%s[%zu]: device arithmetic %.9g vs CPU kernel %.9g", what, i, got[i], want[i]);
      bad++;
    }
  }
}

// Gated activations: bit for bit (NaN as NaN), naming the gate value of a mismatch.
static void expect_same_bits(const char* what, const std::vector<float>& got, const std::vector<float>& want,
                             const std::vector<float>& gate_up, int32_t inter) {
  int bad = 0;
  for (size_t i = 0; i < got.size() && bad < 3; i++) {
    if (std::isnan(got[i]) && std::isnan(want[i])) continue;
    if (std::memcmp(&got[i], &want[i], sizeof(float)) != 0) {
      EXPECT(false, "%s[%zu] (gate %.9g): element function %.9g vs CPU kernel %.9g", what, i,
             gate_up[(i / inter) * 2 * inter + i % inter], got[i], want[i]);
      bad++;
    }
  }
}

// The device block reduction of rmsnorm_kernel: per-thread strided sums, xor-shuffle within
// each warp of 32, then the 8 warp partials in order.
static float block_sum_sq(const float* x, int32_t dim) {
  float lane[kThreads];
  for (int t = 0; t < kThreads; t++) {
    float ss = 0.f;
    for (int32_t i = t; i < dim; i += kThreads) ss += x[i] * x[i];
    lane[t] = ss;
  }
  for (int w = 0; w < kThreads / 32; w++) {
    float* l = lane + 32 * w;
    for (int off = 16; off > 0; off >>= 1) {
      float next[32];
      for (int t = 0; t < 32; t++) next[t] = l[t] + l[t ^ off];
      std::memcpy(l, next, sizeof next);
    }
  }
  float total = 0.f;
  for (int w = 0; w < kThreads / 32; w++) total += lane[32 * w];
  return total;
}

static void test_rmsnorm() {
  for (float offset : {0.f, 1.f}) {
    for (int32_t dim : {1, 64, 100, 768, 3000}) {
      // eps 0.1 on small activations: a formula that drops or misplaces eps shows
      const float eps = dim == 100 ? 0.1f : 1e-6f;
      const int64_t rows = 5;
      auto x = randn((size_t)(rows * dim), dim == 100 ? 0.3f : 3.f);
      auto w = randn((size_t)dim, 0.5f);
      std::vector<float> want(x.size()), got(x.size());
      EXPECT(rkv_rmsnorm(x.data(), w.data(), want.data(), rows, dim, eps, offset) == RKV_OK, "%s", rkv_last_error());
      for (int64_t r = 0; r < rows; r++) {
        const float inv = de::rms_inv(block_sum_sq(x.data() + r * dim, dim), dim, eps);
        for (int32_t i = 0; i < dim; i++) de::rmsnorm_elem(x.data(), w.data(), got.data(), r, dim, i, inv, offset);
      }
      expect_close(offset == 0.f ? "rmsnorm x.w" : "rmsnorm x.(1+w)", got, want, 1e-5f);
    }
  }
}

static void test_rope() {
  const int64_t n = 7;
  const int32_t hq = 4, hk = 2, d = 64;
  std::vector<double> inv_freq(d / 2);
  for (int i = 0; i < d / 2; i++) inv_freq[i] = std::pow(500000.0, -2.0 * i / d) * (i % 3 == 0 ? 0.125 : 1.0);
  std::vector<int32_t> pos = {0, 1, 5, 17, 1000, 8191, 131000};
  auto q = randn((size_t)(n * hq * d)), k = randn((size_t)(n * hk * d));
  auto qw = q, kw = k, qg = q, kg = k;
  EXPECT(rkv_rope_table(qw.data(), kw.data(), pos.data(), n, hq, hk, d, inv_freq.data()) == RKV_OK, "%s",
         rkv_last_error());
  // rope_kernel's index decomposition: idx -> (token, head over q then k, pair).
  const int32_t half = d / 2, heads = hq + hk;
  for (int64_t idx = 0; idx < n * heads * half; idx++) {
    const int32_t i = (int32_t)(idx % half);
    const int64_t th = idx / half;
    const int32_t h = (int32_t)(th % heads);
    const int64_t t = th / heads;
    float c, s;
    de::rope_cos_sin(pos[t], inv_freq[i], &c, &s);
    if (h < hq) de::rope_pair(qg.data(), t * hq + h, d, i, c, s);
    else de::rope_pair(kg.data(), t * hk + (h - hq), d, i, c, s);
  }
  expect_close("rope q", qg, qw, 1e-5f);
  expect_close("rope k", kg, kw, 1e-5f);
}

// exp_approx (SiLU's exponential on every path) against double exp: every 997th float of its
// range within 2 ulp, and the edges.
static void test_exp_approx() {
  double worst = 0;
  float worst_x = 0;
  auto bits = [](float f) {
    uint32_t b;
    std::memcpy(&b, &f, sizeof b);
    return b;
  };
  const uint32_t sign = 0x80000000u;
  for (uint32_t b = 0; b <= bits(rkv::dense::kExpHi) + bits(-rkv::dense::kExpLo); b += 997) {
    // non-negative floats up to kExpHi, then the negative ones down to kExpLo
    uint32_t xb = b <= bits(rkv::dense::kExpHi) ? b : (b - bits(rkv::dense::kExpHi)) | sign;
    float x;
    std::memcpy(&x, &xb, sizeof x);
    const double ref = std::exp((double)x);
    const double ulp = std::ldexp(1.0, std::ilogb((float)ref) - 23);
    const double err = std::fabs((double)rkv::dense::exp_approx(x) - ref) / ulp;
    if (err > worst) {
      worst = err;
      worst_x = x;
    }
  }
  EXPECT(worst <= 2.0, "exp_approx: %.3f ulp from exp at x = %.9g", worst, worst_x);
  using rkv::dense::exp_approx;
  EXPECT(std::isnan(exp_approx(NAN)), "exp_approx(NaN) is not NaN");
  EXPECT(exp_approx(INFINITY) == INFINITY && exp_approx(89.f) == INFINITY, "exp_approx: no +inf above the range");
  EXPECT(exp_approx(-INFINITY) == 0.f && exp_approx(-90.f) == 0.f, "exp_approx: not 0 below the range");
  EXPECT(exp_approx(0.f) == 1.f && exp_approx(-0.f) == 1.f, "exp_approx(0) = %.9g", exp_approx(0.f));
}

static void test_gated_and_elementwise() {
  const int64_t rows = 3;
  const int32_t inter = 1003;  // not a multiple of the vector width: the kernel's scalar tail too
  auto gu = randn((size_t)(rows * 2 * inter), 2.f);
  // edges of SiLU's exponential in vector lanes and in the tail
  const float edge[] = {NAN, INFINITY, -INFINITY, 100.f, -100.f, 88.f, -88.f, 0.f, -0.f, 1e-30f, -1e-30f};
  for (size_t j = 0; j < sizeof edge / sizeof edge[0]; j++) {
    gu[j * 7] = edge[j];
    gu[2 * inter + inter - 1 - j] = edge[j];
  }
  std::vector<float> want(rows * inter), got(rows * inter);
  EXPECT(rkv_silu_mul(gu.data(), want.data(), rows, inter) == RKV_OK, "%s", rkv_last_error());
  for (int64_t idx = 0; idx < rows * inter; idx++) de::silu_mul_elem(gu.data(), got.data(), inter, idx);
  // the CPU kernel's vector form computes exp_approx operation for operation: the same bits
  expect_same_bits("silu_mul", got, want, gu, inter);
  EXPECT(rkv_gelu_tanh_mul(gu.data(), want.data(), rows, inter) == RKV_OK, "%s", rkv_last_error());
  for (int64_t idx = 0; idx < rows * inter; idx++) de::gelu_tanh_mul_elem(gu.data(), got.data(), inter, idx);
  expect_same_bits("gelu_tanh_mul", got, want, gu, inter);

  auto y0 = randn(rows * inter), bias = randn(inter), x = randn(rows * inter);
  auto yw = y0, yg = y0;
  EXPECT(rkv_add_bias(yw.data(), bias.data(), rows, inter) == RKV_OK, "%s", rkv_last_error());
  for (int64_t idx = 0; idx < rows * inter; idx++) de::add_bias_elem(yg.data(), bias.data(), inter, idx);
  expect_close("add_bias", yg, yw, 0.f);
  EXPECT(rkv_add_inplace(yw.data(), x.data(), rows * inter) == RKV_OK, "%s", rkv_last_error());
  for (int64_t idx = 0; idx < rows * inter; idx++) de::add_elem(yg.data(), x.data(), idx);
  expect_close("add_inplace", yg, yw, 0.f);
  auto logits = randn(5000, 40.f);
  auto lw = logits, lg = logits;
  EXPECT(rkv_soft_cap(lw.data(), (int64_t)lw.size(), 30.f) == RKV_OK, "%s", rkv_last_error());
  for (int64_t idx = 0; idx < (int64_t)lg.size(); idx++) de::soft_cap_elem(lg.data(), 30.f, idx);
  expect_close("soft_cap", lg, lw);
  EXPECT(rkv_scale(lw.data(), (int64_t)lw.size(), 27.7128f) == RKV_OK, "%s", rkv_last_error());
  for (int64_t idx = 0; idx < (int64_t)lg.size(); idx++) de::scale_elem(lg.data(), 27.7128f, idx);
  expect_close("scale", lg, lw);
}

static void test_embedding() {
  const int32_t vocab = 50, dim = 33;
  auto table = randn((size_t)vocab * dim);
  std::vector<uint16_t> table_bf16(table.size());
  for (size_t i = 0; i < table.size(); i++) table_bf16[i] = rkv::float_to_bf16(table[i]);
  std::vector<int32_t> ids = {0, 49, 7, 7, 23};
  const int64_t n = (int64_t)ids.size();
  for (int32_t dtype : {RKV_DTYPE_F32, RKV_DTYPE_BF16}) {
    const void* t = dtype == RKV_DTYPE_F32 ? (const void*)table.data() : (const void*)table_bf16.data();
    std::vector<float> want(n * dim), got(n * dim);
    EXPECT(rkv_embedding(ids.data(), n, t, dtype, vocab, dim, want.data()) == RKV_OK, "%s", rkv_last_error());
    bool all_ok = true;
    for (int64_t idx = 0; idx < n * dim; idx++) all_ok &= de::embedding_elem(ids.data(), t, dtype, vocab, dim, got.data(), idx);
    EXPECT(all_ok, "valid ids reported bad");
    expect_close(dtype == RKV_DTYPE_F32 ? "embedding f32" : "embedding bf16", got, want, 0.f);
  }
  // A bad id: the CPU kernel refuses; the device body writes zeros and reports it (the flag).
  std::vector<int32_t> bad = {3, 50, -1};
  std::vector<float> out(3 * dim, 9.f);
  EXPECT(rkv_embedding(bad.data(), 3, table.data(), RKV_DTYPE_F32, vocab, dim, out.data()) == RKV_ERR_INVALID_ARGUMENT,
         "CPU accepted id 50");
  int first_bad = -1;
  for (int64_t idx = 0; idx < 3 * dim; idx++) {
    if (!de::embedding_elem(bad.data(), table.data(), RKV_DTYPE_F32, vocab, dim, out.data(), idx) && first_bad < 0)
      first_bad = (int)(idx / dim);
  }
  EXPECT(first_bad == 1, "first bad token %d, want 1", first_bad);
  EXPECT(out[dim] == 0.f && out[2 * dim + 5] == 0.f, "bad rows not zeroed");
}

// argmax_kernel's order: 256 strided scans, xor shuffles per warp, then warps in order.
static int32_t device_argmax(const float* l, int32_t vocab) {
  float bv[kThreads];
  int32_t bi[kThreads];
  for (int t = 0; t < kThreads; t++) {
    bv[t] = std::numeric_limits<float>::quiet_NaN();
    bi[t] = vocab;
    for (int32_t i = t; i < vocab; i += kThreads)
      if (de::argmax_takes(l[i], i, bv[t], bi[t])) { bv[t] = l[i]; bi[t] = i; }
  }
  for (int w = 0; w < kThreads / 32; w++) {
    for (int off = 16; off > 0; off >>= 1) {
      float nv[32];
      int32_t ni[32];
      for (int t = 0; t < 32; t++) {
        int a = 32 * w + t, b = 32 * w + (t ^ off);
        nv[t] = bv[a];
        ni[t] = bi[a];
        if (de::argmax_takes(bv[b], bi[b], nv[t], ni[t])) { nv[t] = bv[b]; ni[t] = bi[b]; }
      }
      for (int t = 0; t < 32; t++) { bv[32 * w + t] = nv[t]; bi[32 * w + t] = ni[t]; }
    }
  }
  float v = bv[0];
  int32_t i = bi[0];
  for (int w = 1; w < kThreads / 32; w++)
    if (de::argmax_takes(bv[32 * w], bi[32 * w], v, i)) { v = bv[32 * w]; i = bi[32 * w]; }
  return i < vocab ? i : 0;
}

static void test_argmax() {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<std::vector<float>> cases;
  cases.push_back(randn(32000, 5.f));
  auto ties = randn(1000);
  ties[700] = ties[300] = ties[999] = 50.f;  // first maximum: 300, in another thread than 700
  cases.push_back(ties);
  auto with_nan = randn(777);
  with_nan[0] = nan;
  with_nan[400] = nan;
  cases.push_back(with_nan);
  cases.push_back(std::vector<float>(300, nan));  // all NaN: 0
  cases.push_back({-3.f});
  std::vector<float> inf_case(600, -std::numeric_limits<float>::infinity());
  inf_case[513] = 1.f;
  cases.push_back(inf_case);
  cases.push_back(std::vector<float>(513, -std::numeric_limits<float>::infinity()));  // all -inf: 0
  // The CPU kernel's vector passes (a max, then the first index equal to it) against the rule's
  // scalar loop: maxima in the vector body and in the tail, ties inside one vector and across
  // vectors, -0 against +0, +inf, NaN before and after the maximum, rows of only -inf and NaN.
  std::mt19937 g(11);
  const float inf = std::numeric_limits<float>::infinity();
  for (int32_t n : {1, 7, 15, 16, 17, 23, 31, 32, 33, 40, 64, 100, 257, 1000}) {
    for (int rep = 0; rep < 40; rep++) {
      std::vector<float> row(n);
      // few distinct values, so that ties are common
      for (auto& x : row) x = (float)(int)(g() % 7) - 3.f;
      const int kind = rep % 8;
      if (kind == 1) row[g() % n] = nan;
      if (kind == 2) for (auto& x : row) if (g() % 3 == 0) x = nan;
      if (kind == 3) row[n - 1] = 9.f;  // the maximum in the tail
      if (kind == 4) { for (auto& x : row) x = (g() % 2) ? 0.f : -0.f; }
      if (kind == 5) { row[g() % n] = inf; row[g() % n] = inf; }
      if (kind == 6) for (auto& x : row) x = (g() % 2) ? -inf : nan;
      if (kind == 7) for (auto& x : row) x = -inf;
      cases.push_back(row);
    }
  }
  for (size_t c = 0; c < cases.size(); c++) {
    int32_t want = -1;
    const int32_t n = (int32_t)cases[c].size();
    EXPECT(rkv_argmax(cases[c].data(), 1, n, &want) == RKV_OK, "%s", rkv_last_error());
    const int32_t rule = rkv::dense::first_argmax(cases[c].data(), n);
    EXPECT(want == rule, "argmax case %zu (%d ids): CPU kernel %d, the scalar rule %d", c, n, want, rule);
    int32_t got = device_argmax(cases[c].data(), n);
    EXPECT(got == want, "argmax case %zu: device order %d, CPU kernel %d", c, got, want);
  }
}

int main() {
  test_exp_approx();
  test_rmsnorm();
  test_rope();
  test_gated_and_elementwise();
  test_embedding();
  test_argmax();
  if (g_failures) {
    std::fprintf(stderr, "%d failure(s)\n", g_failures);
    return 1;
  }
  std::printf("dense_elem_test: OK\n");
  return 0;
}
