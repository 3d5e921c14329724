// Native checks of the dense ops against scalar double-precision references, on odd shapes,
// plus the error paths (every bad argument returns a code and leaves outputs untouched).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "isa_rerun.h"
#include "radixkv.h"
#include "rkv_dtype.h"
#include "rkv_test.h"


static const char* rkv_dtype_label(int32_t d) {
  return d == RKV_DTYPE_F32 ? "f32" : d == RKV_DTYPE_BF16 ? "bf16" : "f16";
}


static std::mt19937 rng(1234);

static std::vector<float> randn(size_t n, float scale = 1.f) {
  std::normal_distribution<float> d(0.f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

static float bf16_to_f(uint16_t h) {
  uint32_t u = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
static uint16_t f_to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u += 0x7fffu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}

static uint16_t f_to_f16(float f) { return rkv::float_to_f16(f); }
static float f16_to_f(uint16_t h) { return rkv::f16_to_float(h); }

// wdt: RKV_DTYPE_F32, _BF16 or _F16. The reference uses the weights as the kernel sees them
// (rounded to the weight dtype), in double.
static void test_linear(int64_t m, int64_t n, int64_t k, int32_t wdt, bool accumulate) {
  auto x = randn(size_t(m * k));
  auto wf = randn(size_t(n * k), 0.1f);
  std::vector<uint16_t> wh(wf.size());
  for (size_t i = 0; i < wf.size(); i++) {
    if (wdt == RKV_DTYPE_BF16) {
      wh[i] = f_to_bf16(wf[i]);
      wf[i] = bf16_to_f(wh[i]);
    } else if (wdt == RKV_DTYPE_F16) {
      wh[i] = f_to_f16(wf[i]);
      wf[i] = f16_to_f(wh[i]);
    }
  }
  auto y0 = randn(size_t(m * n));
  std::vector<float> y = y0;
  int st = rkv_linear(x.data(), wdt == RKV_DTYPE_F32 ? static_cast<const void*>(wf.data()) : wh.data(), wdt,
                      y.data(), m, n, k, accumulate);
  EXPECT(st == RKV_OK, "rkv_linear m=%lld n=%lld k=%lld: %s", (long long)m, (long long)n, (long long)k,
         rkv_last_error());
  // bf16 weights from 8 rows of x on may round x to bf16 (RNE) where the CPU has bf16 dot
  // products (AVX512-BF16 in dense_gemv.cpp, oneDNN past 16 rows): the whole call must then match
  // the reference on the rounded x as tightly as the others match it on the exact one.
  std::vector<float> xr(x);
  if (wdt == RKV_DTYPE_BF16 && m >= 8)
    for (auto& v : xr) v = bf16_to_f(f_to_bf16(v));
  double worst = 0, worst_r = 0;
  for (int64_t i = 0; i < m; i++) {
    for (int64_t j = 0; j < n; j++) {
      double ref = accumulate ? y0[i * n + j] : 0.0, mag = accumulate ? std::fabs(y0[i * n + j]) : 0.0;
      double ref_r = ref, mag_r = mag;
      for (int64_t kk = 0; kk < k; kk++) {
        ref += double(x[i * k + kk]) * wf[j * k + kk];
        mag += std::fabs(double(x[i * k + kk]) * wf[j * k + kk]);
        ref_r += double(xr[i * k + kk]) * wf[j * k + kk];
        mag_r += std::fabs(double(xr[i * k + kk]) * wf[j * k + kk]);
      }
      worst = std::max(worst, std::fabs(ref - y[i * n + j]) / (mag + 1e-30));
      worst_r = std::max(worst_r, std::fabs(ref_r - y[i * n + j]) / (mag_r + 1e-30));
    }
  }
  const double tol = 1e-5;
  EXPECT(worst <= tol || worst_r <= tol,
         "rkv_linear %s m=%lld n=%lld k=%lld acc=%d: error %g against exact x, %g against x rounded to bf16 "
         "(relative to sum |x*w|) > %g",
         rkv_dtype_label(wdt), (long long)m, (long long)n, (long long)k, int(accumulate), worst, worst_r, tol);
}

static void test_rmsnorm(float w_offset) {
  const int64_t rows = 37;
  const int dim = 77;
  auto x = randn(size_t(rows * dim), 3.f);
  auto w = randn(size_t(dim));
  std::vector<float> y(x.size());
  EXPECT(rkv_rmsnorm(x.data(), w.data(), y.data(), rows, dim, 1e-5f, w_offset) == RKV_OK, "%s", rkv_last_error());
  for (int64_t r = 0; r < rows; r++) {
    double ss = 0;
    for (int i = 0; i < dim; i++) ss += double(x[r * dim + i]) * x[r * dim + i];
    double inv = 1.0 / std::sqrt(ss / dim + 1e-5);
    for (int i = 0; i < dim; i++) {
      double ref = x[r * dim + i] * inv * (w_offset + double(w[i]));
      EXPECT(std::fabs(ref - y[r * dim + i]) <= 1e-5 * (1 + std::fabs(ref)), "rmsnorm r=%lld i=%d: %g vs %g",
             (long long)r, i, y[r * dim + i], ref);
    }
  }
  // In place equals out of place.
  std::vector<float> z = x;
  EXPECT(rkv_rmsnorm(z.data(), w.data(), z.data(), rows, dim, 1e-5f, w_offset) == RKV_OK, "%s", rkv_last_error());
  EXPECT(std::memcmp(z.data(), y.data(), y.size() * 4) == 0, "in-place rmsnorm differs");
}

static void test_rope() {
  const int64_t n = 13;
  const int hq = 3, hk = 1, d = 10;
  const float theta = 10000.f;
  auto q = randn(size_t(n * hq * d));
  auto k = randn(size_t(n * hk * d));
  std::vector<int32_t> pos(n);
  for (int64_t t = 0; t < n; t++) pos[t] = int32_t(t * 37 + 5);
  auto q2 = q, k2 = k;
  EXPECT(rkv_rope(q2.data(), k2.data(), pos.data(), n, hq, hk, d, theta) == RKV_OK, "%s", rkv_last_error());
  auto check = [&](const std::vector<float>& in, const std::vector<float>& out, int heads) {
    for (int64_t t = 0; t < n; t++)
      for (int h = 0; h < heads; h++)
        for (int i = 0; i < d / 2; i++) {
          double a = pos[t] * std::pow(double(theta), -2.0 * i / d);
          const float* v = &in[(t * heads + h) * d];
          double r1 = v[i] * std::cos(a) - v[i + d / 2] * std::sin(a);
          double r2 = v[i + d / 2] * std::cos(a) + v[i] * std::sin(a);
          const float* o = &out[(t * heads + h) * d];
          EXPECT(std::fabs(r1 - o[i]) < 1e-5 && std::fabs(r2 - o[i + d / 2]) < 1e-5, "rope t=%lld h=%d i=%d",
                 (long long)t, h, i);
        }
  };
  check(q, q2, hq);
  check(k, k2, hk);
  pos[3] = -1;
  EXPECT(rkv_rope(q2.data(), k2.data(), pos.data(), n, hq, hk, d, theta) == RKV_ERR_INVALID_ARGUMENT,
         "negative position accepted");
  EXPECT(rkv_rope(q2.data(), k2.data(), pos.data(), n, hq, hk, 7, theta) == RKV_ERR_INVALID_ARGUMENT,
         "odd head_dim accepted");
}

// Any table: each pair rotates by position * inv_freq[i] (here a llama3-like mix of bands).
static void test_rope_table() {
  const int64_t n = 9;
  const int hq = 4, hk = 2, d = 16;
  std::vector<double> inv(d / 2);
  for (int i = 0; i < d / 2; i++) inv[i] = std::pow(500000.0, -2.0 * i / d) / (i % 3 == 0 ? 8.0 : 1.0);
  auto q = randn(size_t(n * hq * d));
  auto k = randn(size_t(n * hk * d));
  std::vector<int32_t> pos(n);
  for (int64_t t = 0; t < n; t++) pos[t] = int32_t(t * 1001 + 3);
  auto q2 = q, k2 = k;
  EXPECT(rkv_rope_table(q2.data(), k2.data(), pos.data(), n, hq, hk, d, inv.data()) == RKV_OK, "%s", rkv_last_error());
  auto check = [&](const std::vector<float>& in, const std::vector<float>& out, int heads) {
    for (int64_t t = 0; t < n; t++)
      for (int h = 0; h < heads; h++)
        for (int i = 0; i < d / 2; i++) {
          double a = pos[t] * inv[i];
          const float* v = &in[(t * heads + h) * d];
          double r1 = v[i] * std::cos(a) - v[i + d / 2] * std::sin(a);
          double r2 = v[i + d / 2] * std::cos(a) + v[i] * std::sin(a);
          const float* o = &out[(t * heads + h) * d];
          EXPECT(std::fabs(r1 - o[i]) < 1e-5 && std::fabs(r2 - o[i + d / 2]) < 1e-5, "rope_table t=%lld h=%d i=%d",
                 (long long)t, h, i);
        }
  };
  check(q, q2, hq);
  check(k, k2, hk);
  auto q3 = q;
  inv[2] = NAN;
  EXPECT(rkv_rope_table(q3.data(), k2.data(), pos.data(), n, hq, hk, d, inv.data()) == RKV_ERR_INVALID_ARGUMENT,
         "NaN inv_freq accepted");
  EXPECT(q3 == q, "a rejected rope_table wrote q");
  EXPECT(rkv_rope_table(q3.data(), k2.data(), pos.data(), n, hq, hk, d, nullptr) == RKV_ERR_INVALID_ARGUMENT,
         "NULL inv_freq accepted");
}

static void test_family_ops() {
  const int64_t rows = 6;
  const int inter = 23;
  auto gu = randn(size_t(rows * 2 * inter), 3.f);
  std::vector<float> out(size_t(rows * inter));
  EXPECT(rkv_gelu_tanh_mul(gu.data(), out.data(), rows, inter) == RKV_OK, "%s", rkv_last_error());
  for (int64_t r = 0; r < rows; r++)
    for (int i = 0; i < inter; i++) {
      double g = gu[r * 2 * inter + i], u = gu[r * 2 * inter + inter + i];
      double ref = 0.5 * g * (1 + std::tanh(std::sqrt(2 / M_PI) * (g + 0.044715 * g * g * g))) * u;
      EXPECT(std::fabs(ref - out[r * inter + i]) <= 1e-5 * (1 + std::fabs(ref)), "gelu_tanh_mul r=%lld i=%d: %g vs %g",
             (long long)r, i, out[r * inter + i], ref);
    }
  EXPECT(rkv_gelu_tanh_mul(gu.data(), gu.data() + 1, rows, inter) == RKV_ERR_INVALID_ARGUMENT, "overlap accepted");

  auto y = randn(size_t(rows * inter));
  auto b = randn(size_t(inter));
  auto y2 = y;
  EXPECT(rkv_add_bias(y2.data(), b.data(), rows, inter) == RKV_OK, "%s", rkv_last_error());
  for (int64_t r = 0; r < rows; r++)
    for (int i = 0; i < inter; i++) EXPECT(y2[r * inter + i] == y[r * inter + i] + b[i], "add_bias r=%lld", (long long)r);
  EXPECT(rkv_add_bias(y2.data(), y2.data() + 5, rows, inter) == RKV_ERR_INVALID_ARGUMENT, "bias overlap accepted");

  std::vector<float> l = {-100.f, -3.f, 0.f, 2.5f, 29.f, 1000.f};
  auto l2 = l;
  EXPECT(rkv_soft_cap(l2.data(), 6, 30.f) == RKV_OK, "%s", rkv_last_error());
  for (size_t i = 0; i < l.size(); i++) {
    double ref = 30.0 * std::tanh(l[i] / 30.0);
    EXPECT(std::fabs(ref - l2[i]) <= 1e-5 * (1 + std::fabs(ref)), "soft_cap %g: %g vs %g", l[i], l2[i], ref);
  }
  EXPECT(rkv_soft_cap(l2.data(), 6, 0.f) == RKV_ERR_INVALID_ARGUMENT, "cap 0 accepted");
  EXPECT(rkv_scale(l.data(), 6, 34.f) == RKV_OK && l[3] == 2.5f * 34.f, "scale");
  EXPECT(rkv_scale(l.data(), 6, INFINITY) == RKV_ERR_INVALID_ARGUMENT, "infinite scale accepted");
}

static void test_small_ops() {
  const int64_t rows = 5;
  const int inter = 19;
  auto gu = randn(size_t(rows * 2 * inter), 2.f);
  std::vector<float> out(size_t(rows * inter));
  EXPECT(rkv_silu_mul(gu.data(), out.data(), rows, inter) == RKV_OK, "%s", rkv_last_error());
  for (int64_t r = 0; r < rows; r++)
    for (int i = 0; i < inter; i++) {
      double g = gu[r * 2 * inter + i], u = gu[r * 2 * inter + inter + i];
      double ref = g / (1 + std::exp(-g)) * u;
      EXPECT(std::fabs(ref - out[r * inter + i]) <= 1e-5 * (1 + std::fabs(ref)), "silu_mul r=%lld i=%d",
             (long long)r, i);
    }
  EXPECT(rkv_silu_mul(gu.data(), gu.data() + 3, rows, inter) == RKV_ERR_INVALID_ARGUMENT, "overlap accepted");

  const int vocab = 11, dim = 9;
  auto table = randn(size_t(vocab * dim));
  std::vector<uint16_t> tb(table.size());
  for (size_t i = 0; i < table.size(); i++) tb[i] = f_to_bf16(table[i]);
  std::vector<int32_t> ids = {3, 0, 10, 3};
  std::vector<float> e(ids.size() * dim, -7.f);
  EXPECT(rkv_embedding(ids.data(), 4, table.data(), RKV_DTYPE_F32, vocab, dim, e.data()) == RKV_OK, "%s",
         rkv_last_error());
  for (size_t i = 0; i < ids.size(); i++)
    EXPECT(std::memcmp(&e[i * dim], &table[ids[i] * dim], dim * 4) == 0, "embedding f32 row %zu", i);
  EXPECT(rkv_embedding(ids.data(), 4, tb.data(), RKV_DTYPE_BF16, vocab, dim, e.data()) == RKV_OK, "%s",
         rkv_last_error());
  for (size_t i = 0; i < ids.size(); i++)
    for (int j = 0; j < dim; j++)
      EXPECT(e[i * dim + j] == bf16_to_f(tb[ids[i] * dim + j]), "embedding bf16 row %zu", i);
  std::vector<uint16_t> th(table.size());
  for (size_t i = 0; i < table.size(); i++) th[i] = f_to_f16(table[i]);
  EXPECT(rkv_embedding(ids.data(), 4, th.data(), RKV_DTYPE_F16, vocab, dim, e.data()) == RKV_OK, "%s",
         rkv_last_error());
  for (size_t i = 0; i < ids.size(); i++)
    for (int j = 0; j < dim; j++)
      EXPECT(e[i * dim + j] == f16_to_f(th[ids[i] * dim + j]), "embedding f16 row %zu", i);
  std::vector<float> before = e;
  ids[2] = vocab;
  EXPECT(rkv_embedding(ids.data(), 4, table.data(), RKV_DTYPE_F32, vocab, dim, e.data()) == RKV_ERR_INVALID_ARGUMENT,
         "id == vocab accepted");
  EXPECT(std::strstr(rkv_last_error(), "ids[2] = 11") != nullptr, "message: %s", rkv_last_error());
  EXPECT(before == e, "failed embedding wrote output");
  ids[2] = -1;
  EXPECT(rkv_embedding(ids.data(), 4, table.data(), RKV_DTYPE_F32, vocab, dim, e.data()) == RKV_ERR_INVALID_ARGUMENT,
         "negative id accepted");

  std::vector<float> a = {1, 2, 3}, b = {0.5f, -2, 4};
  EXPECT(rkv_add_inplace(a.data(), b.data(), 3) == RKV_OK && a[0] == 1.5f && a[1] == 0 && a[2] == 7, "add_inplace");

  std::vector<float> logits = {1, 5, 5, 2, /* row 2 */ NAN, -1, -3, -1};
  std::vector<int32_t> am(2, -9);
  EXPECT(rkv_argmax(logits.data(), 2, 4, am.data()) == RKV_OK, "%s", rkv_last_error());
  EXPECT(am[0] == 1 && am[1] == 1, "argmax %d %d", am[0], am[1]);
}

static void test_linear_errors() {
  float x[4] = {}, w[4] = {}, y[4] = {};
  EXPECT(rkv_linear(x, w, RKV_DTYPE_FP8_E4M3, y, 2, 2, 1, 0) == RKV_ERR_INVALID_ARGUMENT, "fp8 weights accepted");
  EXPECT(rkv_linear(x, w, RKV_DTYPE_F32, y, -1, 2, 1, 0) == RKV_ERR_INVALID_ARGUMENT, "negative m accepted");
  EXPECT(rkv_linear(nullptr, w, RKV_DTYPE_F32, y, 2, 2, 1, 0) == RKV_ERR_INVALID_ARGUMENT, "NULL x accepted");
  EXPECT(rkv_linear(x, w, RKV_DTYPE_F32, x, 2, 2, 1, 0) == RKV_ERR_INVALID_ARGUMENT, "y aliasing x accepted");
  y[0] = 3;
  EXPECT(rkv_linear(x, w, RKV_DTYPE_F32, y, 1, 1, 0, 1) == RKV_OK && y[0] == 3, "k=0 accumulate changed y");
  EXPECT(rkv_linear(x, w, RKV_DTYPE_F32, y, 1, 1, 0, 0) == RKV_OK && y[0] == 0, "k=0 did not zero y");
}

// Largest |ref - y| / sum |x*w| over all outputs, ref in double on the given x and weights, or
// (against) another result for the same x and weights.
static double linear_error(const std::vector<float>& x, const std::vector<float>& wf, const std::vector<float>& y0,
                           const std::vector<float>& y, int64_t m, int64_t n, int64_t k, bool accumulate,
                           const std::vector<float>* against = nullptr) {
  double worst = 0;
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      double ref = accumulate ? y0[i * n + j] : 0.0, mag = accumulate ? std::fabs(y0[i * n + j]) : 0.0;
      for (int64_t kk = 0; kk < k; kk++) {
        ref += double(x[i * k + kk]) * wf[j * k + kk];
        mag += std::fabs(double(x[i * k + kk]) * wf[j * k + kk]);
      }
      if (against) ref = (*against)[i * n + j];
      worst = std::max(worst, std::fabs(ref - y[i * n + j]) / (mag + 1e-30));
    }
  return worst;
}

// Packed weights (rkv_linear_pack): pack / unpack round-trips the bytes, every element lands where
// the layout says; rkv_linear_packed matches the double reference at 1e-5 on the exact x (f32 and
// f16 at every m, bf16 below 8 rows, as rkv_linear's small-m path) and on x rounded to bf16 (bf16
// from 8 rows on, as its dot-product path and oneDNN); where the CPU or shape has no packed
// layout, pack refuses and leaves w untouched.
static void test_linear_packed(int32_t wdt, int64_t m, int64_t n, int64_t k, bool accumulate) {
  auto x = randn(size_t(m * k));
  auto wf = randn(size_t(n * k), 0.1f);
  const size_t es = wdt == RKV_DTYPE_F32 ? 4 : 2;
  std::vector<uint8_t> wh(wf.size() * es);
  for (size_t i = 0; i < wf.size(); i++) {
    if (wdt == RKV_DTYPE_F32) {
      std::memcpy(&wh[i * 4], &wf[i], 4);
      continue;
    }
    const uint16_t h = wdt == RKV_DTYPE_BF16 ? f_to_bf16(wf[i]) : f_to_f16(wf[i]);
    wf[i] = wdt == RKV_DTYPE_BF16 ? bf16_to_f(h) : f16_to_f(h);
    std::memcpy(&wh[i * 2], &h, 2);
  }
  std::vector<uint8_t> wp(wh);
  const char* dt = rkv_dtype_label(wdt);
  const bool supported = rkv_linear_pack_supported(wdt, n, k) == 1;
  const int st = rkv_linear_pack(wp.data(), wdt, n, k);
  if (!supported) {
    EXPECT(st == RKV_ERR_UNSUPPORTED && wp == wh, "pack of unsupported %s [%lld, %lld]: status %d, w changed: %d", dt,
           (long long)n, (long long)k, st, int(wp != wh));
    EXPECT(rkv_linear_packed(x.data(), wp.data(), wdt, std::vector<float>(size_t(m * n)).data(), m, n, k, 0) ==
               RKV_ERR_UNSUPPORTED,
           "rkv_linear_packed ran without a packed layout");
    return;
  }
  EXPECT(st == RKV_OK && wp != wh, "pack %s [%lld, %lld]: %d %s", dt, (long long)n, (long long)k, st,
         rkv_last_error());
  // every element (row r, column c) where the layout says it is: pairs of columns for bf16
  const int64_t pair = wdt == RKV_DTYPE_BF16 ? 2 : 1;
  int misplaced = 0;
  for (int64_t r = 0; r < n; r++)
    for (int64_t c = 0; c < k; c++) {
      const int64_t at = (r / 64) * 64 * k + ((c / pair) * 64 + r % 64) * pair + c % pair;
      misplaced += std::memcmp(&wp[size_t(at) * es], &wh[size_t(r * k + c) * es], es) != 0;
    }
  EXPECT(misplaced == 0, "pack %s [%lld, %lld]: %d elements misplaced", dt, (long long)n, (long long)k, misplaced);
  auto y0 = randn(size_t(m * n));
  std::vector<float> y = y0;
  EXPECT(rkv_linear_packed(x.data(), wp.data(), wdt, y.data(), m, n, k, accumulate) == RKV_OK,
         "rkv_linear_packed %s m=%lld: %s", dt, (long long)m, rkv_last_error());
  const bool rounded = wdt == RKV_DTYPE_BF16 && m >= 8;
  std::vector<float> xr(x);
  if (rounded)
    for (auto& v : xr) v = bf16_to_f(f_to_bf16(v));
  const double err = linear_error(xr, wf, y0, y, m, n, k, accumulate);
  EXPECT(err <= 1e-5, "rkv_linear_packed %s m=%lld n=%lld k=%lld acc=%d: error %g against %s x > 1e-5", dt,
         (long long)m, (long long)n, (long long)k, int(accumulate), err, rounded ? "bf16-rounded" : "exact");
  // the same weights row-major give the same result (up to summation order): both round x or
  // neither, whichever GEMM runs (an engine packs or not and must decode the same tokens)
  std::vector<float> yr = y0;
  EXPECT(rkv_linear(x.data(), wh.data(), wdt, yr.data(), m, n, k, accumulate) == RKV_OK, "rkv_linear %s m=%lld: %s", dt,
         (long long)m, rkv_last_error());
  const double apart = linear_error(xr, wf, y0, y, m, n, k, accumulate, &yr);
  EXPECT(apart <= 2e-5, "rkv_linear_packed %s m=%lld n=%lld k=%lld: %g apart from rkv_linear on the row-major weights",
         dt, (long long)m, (long long)n, (long long)k, apart);
  EXPECT(rkv_linear_unpack(wp.data(), wdt, n, k) == RKV_OK && wp == wh, "unpack %s did not restore w", dt);
}

// RADIXKV_AMX (dense_amx.h): a run that asks for the AMX path must get it where bf16 packs (the
// emulation on any such CPU; the tiles on a CPU with AMX-BF16), or it would check the AVX-512
// passes twice and pass.
static void test_amx_mode() {
  const char* e = std::getenv("RADIXKV_AMX");
  if (e == nullptr || rkv_linear_pack_supported(RKV_DTYPE_BF16, 64, 32) != 1) return;
  const std::string info = rkv_build_info();
  if (std::strcmp(e, "emulate") == 0)
    EXPECT(info.find("amx=emulated") != std::string::npos, "RADIXKV_AMX=emulate, but: %s", info.c_str());
  // (main skips a RADIXKV_AMX=1 run on CPUs without AMX-BF16)
  if (std::strcmp(e, "1") == 0)
    EXPECT(info.find("amx=tiles") != std::string::npos, "RADIXKV_AMX=1 on an AMX CPU, but: %s", info.c_str());
}

int main(int, char** argv) {
  if (const char* amx = std::getenv("RADIXKV_AMX"); amx != nullptr && std::strcmp(amx, "1") == 0) {
#if defined(__x86_64__)
    __builtin_cpu_init();
    const bool has_amx = __builtin_cpu_supports("amx-bf16");
#else
    const bool has_amx = false;
#endif
    if (!has_amx) {
      std::printf("dense_test: RADIXKV_AMX=1 on a CPU without AMX-BF16: skipped (the plain run covers this CPU)\n");
      return 77;
    }
  }
  // 17-32 rows: two blocks of the small-m kernel where rkv_isa.h's gemv_up_to_32_rows (this program
  // runs again with the other choice), the GEMMs elsewhere
  const int64_t shapes[][3] = {{1, 1, 1},    {1, 33, 17},  {3, 5, 129},    {7, 64, 64},    {9, 31, 100},
                               {16, 96, 80}, {24, 70, 65}, {32, 37, 3000}, {33, 70, 65}, {64, 128, 512},
                               {200, 48, 33}, {100, 300, 257}, {300, 200, 130}};  // uneven column shares; past 256 rows
  const int32_t wdts[] = {RKV_DTYPE_F32, RKV_DTYPE_BF16, RKV_DTYPE_F16};
  for (auto& s : shapes) {
    for (int32_t wdt : wdts) {
      test_linear(s[0], s[1], s[2], wdt, false);
      test_linear(s[0], s[1], s[2], wdt, true);
    }
  }
  // Decode batches (dense_gemv.cpp): every m of its range, odd n (register tiles of 1, 2 and
  // 4 weight rows, thread splits) and k (vector tails), large enough to run in parallel.
  for (int64_t m = 1; m <= 17; m++) {
    for (int32_t wdt : wdts) {
      test_linear(m, 37, 75, wdt, m % 2 == 0);
      test_linear(m, 203, 517, wdt, m % 2 == 1);
      // k split into several chunks (x chunks of at most 32 KiB): partial sums
      // through y, a chunk tail, prefetches of the next weight tile
      if (m >= 3) test_linear(m, 37, 3000, wdt, m % 2 == 0);
      // x chunks from a quarter of L2 (rkv_isa.h: gemv_x_chunk_l2; this program runs again with
      // the other choice): 600 KiB of x at m = 3, several chunks on L2 sizes up to 2 MiB
      if (m == 3 || m == 16) test_linear(m, 37, 50001, wdt, m == 3);
      // long rows, x past 3/4 of any L1 (at most 48 KiB): m = 1 two rows at a time, m = 2 in
      // chunks of 4-row tiles, each prefetching the next one's chunk (f32: kNR-row tiles over
      // all of k); a scalar tail and an odd row
      if (m <= 2) test_linear(m, 37, 20001, wdt, m == 2);
      // k % 16 == 0: m <= 2 bf16 reads element pairs where rkv_isa.h's avx2_bf16_pairs holds (this
      // program runs again with the other choice): a 16-element tail, whole rows, long rows
      if (m <= 2)
        for (int64_t k : {16, 48, 768, 3072, 20000}) test_linear(m, 37, k, wdt, k == 48);
    }
  }
  test_rmsnorm(0.f);
  test_rmsnorm(1.f);
  test_rope();
  test_rope_table();
  test_family_ops();
  test_small_ops();
  test_linear_errors();
  test_amx_mode();
  for (int32_t wdt : wdts) {
    // 3 panels; k in unequal chunks with a short last one; past 16 rows the prefill GEMMs, 320
    // columns in two threads' shares of unequal panel groups
    for (int64_t m : {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 16, 17, 40})
      for (bool acc : {false, true}) test_linear_packed(wdt, m, 192, 4160, acc);
    test_linear_packed(wdt, 300, 320, 288, true);
    test_linear_packed(wdt, 300, 320, 272, true);  // k % 32 == 16: no bf16 layout (oneDNN pads k)
    test_linear_packed(wdt, 8, 128, 48, false);
    test_linear_packed(wdt, 4, 65, 64, false);  // n % 64 != 0: no packed layout
    test_linear_packed(wdt, 4, 64, 40, false);  // k % 16 != 0
  }
  std::printf("dense_test: %s (%s ISA; %s)\n", g_failures ? "FAILED" : "ok", requested_isa(), rkv_build_info());
  if (g_failures) return 1;
  // The small-m kernel is dispatched by ISA: check the lower paths too (not in the AMX runs: the
  // lower ISAs have no AMX path).
  if (std::getenv("RADIXKV_AMX")) return 0;
  int failed = rerun_lower_isas(argv[0]);
  if (!std::getenv("RADIXKV_ISA") && !std::getenv("RADIXKV_GEMV_X_L2") && !std::getenv("RADIXKV_GEMV_32") &&
      !std::getenv("RADIXKV_AVX2_BF16_PAIRS") && !std::getenv("RADIXKV_FAR_PREFETCH") && !std::getenv("RADIXKV_ONEDNN")) {
    // the other rules for the small-m kernels' x chunks and row range than this CPU's (in the
    // plain run only: ctest's variants of this program change other choices)
    if (!rerun_with(argv[0], other_choice(rkv_build_info(), "gemv_x=l2", "RADIXKV_GEMV_X_L2") + " " +
                                 other_choice(rkv_build_info(), "gemv_rows=32", "RADIXKV_GEMV_32")))
      failed = 1;
    // AVX2's m = 1 bf16 kernel with the other choice of element pairs than this CPU's
    if (!rerun_with(argv[0], "RADIXKV_ISA=avx2 " + other_choice(rkv_build_info(), "avx2_bf16_pairs=on",
                                                                 "RADIXKV_AVX2_BF16_PAIRS")))
      failed = 1;
  }
  return failed;
}
