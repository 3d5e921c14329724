// rkv_sample against a double-precision reference of the same definition (exact exp, every
// token sorted for top-p): each draw must be a token the reference could give for a uniform
// number within 1e-5 of the one passed (exp_approx is within ~1e-7 of exp), draws must follow
// the softmax, the nucleus must hold, and bad arguments must be refused before anything is written.
#include <pthread.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <numeric>
#include <string>
#include <random>
#include <vector>

#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
// GCC 12's AVX-512 headers build many intrinsics on a self-initialized _mm512_undefined_*
// operand, which -W(maybe-)uninitialized reports once inlined (GCC bug 105593, fixed in 13).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

#include "isa_rerun.h"
#include "radixkv.h"
#include "rkv_dense_math.h"
#include "rkv_exp_avx2.h"
#include "rkv_exp_avx512.h"
#include "rkv_test.h"
#include "sample_args.h"

static std::mt19937 rng(11);

// The tokens this process drew, hashed (FNV-1a): the re-runs on the lower ISAs must draw the same.
static uint64_t g_token_hash = 1469598103934665603ull;
static void hash_token(int32_t t) {
  g_token_hash = (g_token_hash ^ static_cast<uint32_t>(t)) * 1099511628211ull;
}

struct Ref {
  std::vector<double> p;      // unnormalized probabilities
  std::vector<int32_t> kept;  // the tokens a draw can give, in draw order
  std::vector<double> cum;    // running mass after each of them
};

// The reference over edited logits x (double): p = exp((x - max) / t), then min_p, top_k (ties
// with the k-th kept), then the top-p nucleus.
static Ref reference_x(const std::vector<double>& x, float t, float top_p, float min_p = 0.f, int32_t top_k = 0) {
  Ref r;
  const size_t v = x.size();
  double max = -INFINITY;
  for (double e : x) max = e > max ? e : max;
  r.p.resize(v);
  for (size_t i = 0; i < v; i++) r.p[i] = std::isnan(x[i]) ? 0.0 : std::exp((x[i] - max) / t);
  for (size_t i = 0; i < v; i++)
    if (r.p[i] < min_p) r.p[i] = 0;
  if (top_k > 0 && static_cast<size_t>(top_k) < v) {
    std::vector<double> sorted(r.p);
    std::sort(sorted.begin(), sorted.end(), std::greater<double>());
    const double kth = sorted[static_cast<size_t>(top_k - 1)];
    for (size_t i = 0; i < v; i++)
      if (r.p[i] < kth) r.p[i] = 0;
  }
  double total = 0;
  for (double e : r.p) total += e;
  std::vector<int32_t> order(v);
  std::iota(order.begin(), order.end(), 0);
  if (top_p < 1.f) {
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return r.p[a] > r.p[b]; });
    double acc = 0;
    for (int32_t id : order) {
      if (r.p[id] == 0 || acc >= top_p * total) break;
      acc += r.p[id];
      r.kept.push_back(id);
    }
  } else {
    for (int32_t id : order)
      if (r.p[id] > 0) r.kept.push_back(id);
  }
  double acc = 0;
  for (int32_t id : r.kept) r.cum.push_back(acc += r.p[id]);
  return r;
}

static Ref reference(const std::vector<float>& l, float t, float top_p) {
  return reference_x(std::vector<double>(l.begin(), l.end()), t, top_p);
}

// Whether token `got` is the reference's draw for some uniform number within tol of u. With a
// top-p cut, near-equal probabilities may sort differently from float to double, so there the
// token must only be in the reference's nucleus (its probability at least the smallest kept,
// within tol).
static bool plausible(const Ref& r, double u, int32_t got, double tol, bool cut) {
  if (cut) {
    double smallest = INFINITY;
    for (int32_t id : r.kept) smallest = std::min(smallest, r.p[id]);
    return got >= 0 && static_cast<size_t>(got) < r.p.size() && r.p[got] >= smallest * (1 - tol);
  }
  const double mass = r.cum.back();
  for (size_t j = 0; j < r.kept.size(); j++) {
    if (r.kept[j] != got) continue;
    const double lo = j == 0 ? 0.0 : r.cum[j - 1];
    return lo <= (u + tol) * mass && r.cum[j] >= (u - tol) * mass;
  }
  return false;
}

static void test_against_reference() {
  int checked = 0;
  for (int trial = 0; trial < 90; trial++) {
    const int32_t vocab = 1 + static_cast<int32_t>(rng() % (trial < 45 ? 40 : 40000));
    const float spread = trial % 3 == 0 ? 0.01f : trial % 3 == 1 ? 3.f : 40.f;  // flat .. peaked
    std::normal_distribution<float> nd(0.f, spread);
    std::vector<float> l(static_cast<size_t>(vocab));
    for (int32_t i = 0; i < vocab; i++) {
      l[i] = nd(rng);
      if (i % 17 == 5) l[i] = l[i / 2];  // ties
      if (i % 29 == 7) l[i] = -INFINITY;
      if (i % 31 == 11) l[i] = NAN;
    }
    const float t = trial % 2 ? 0.7f : 1.f;
    for (float top_p : {1.f, 0.9f, 0.3f, 0.01f}) {
      const Ref r = reference(l, t, top_p);
      if (r.kept.empty()) continue;  // only NaN / -inf: argmax, checked below
      const int rows = 16;
      std::vector<float> all, temp(rows, t), tp(rows, top_p);
      std::vector<double> u(rows);
      for (int k = 0; k < rows; k++) {
        all.insert(all.end(), l.begin(), l.end());
        u[k] = (k + 0.37) / rows;
      }
      std::vector<int32_t> out(rows, -1);
      EXPECT(sample_basic(all.data(), rows, vocab, temp.data(), tp.data(), u.data(), out.data()) == RKV_OK, "%s",
             rkv_last_error());
      for (int k = 0; k < rows; k++) {
        checked++;
        hash_token(out[k]);
        EXPECT(out[k] >= 0 && out[k] < vocab && !std::isnan(l[out[k]]), "token %d", out[k]);
        EXPECT(plausible(r, u[k], out[k], 1e-5, top_p < 1.f), "vocab %d spread %g T %g top-p %g u %.6f: token %d (p %.3g)", vocab,
               spread, t, top_p, u[k], out[k], out[k] >= 0 && out[k] < vocab ? r.p[out[k]] : -1.0);
        // one row at a time gives the same token as the batch (rows are independent)
        int32_t one = -1;
        EXPECT(sample_basic(l.data(), 1, vocab, &t, &top_p, &u[k], &one) == RKV_OK && one == out[k],
               "row %d alone: %d vs %d", k, one, out[k]);
      }
    }
  }
  std::printf("ok   %d draws are the reference's for a uniform number within 1e-5 (in its nucleus with top-p)\n", checked);
}

// Each top-p draw of a row whose nucleus order is unambiguous (distinct probabilities, or ties
// that the order breaks by id) must be exactly the reference's, except for a uniform number
// within 1e-6 of a boundary between two tokens. Returns the number of draws checked.
static int exact_nucleus_draws(const std::vector<float>& l, int draws, const char* what) {
  const int32_t vocab = static_cast<int32_t>(l.size());
  int checked = 0;
  for (float top_p : {0.9f, 0.5f, 0.2f}) {
    const Ref r = reference(l, 1.f, top_p);
    const double mass = r.cum.back();
    for (int k = 0; k < draws; k++) {
      const double u = (k + 0.5) / draws;
      const float t = 1.f;
      int32_t got = -1;
      EXPECT(sample_basic(l.data(), 1, vocab, &t, &top_p, &u, &got) == RKV_OK, "%s", rkv_last_error());
      hash_token(got);
      size_t j = 0;
      while (j + 1 < r.kept.size() && r.cum[j] <= u * mass) j++;
      bool near = false;
      for (double c : r.cum) near = near || std::fabs(c - u * mass) <= 1e-6 * mass;
      if (near) continue;
      checked++;
      EXPECT(got == r.kept[j], "%s, top-p %g u %.4f: token %d, the reference draws %d (position %zu of %zu)", what,
             top_p, u, got, r.kept[j], j, r.kept.size());
    }
  }
  return checked;
}

// Distinct, well-separated probabilities in a shuffled order, in a small vocabulary (the
// candidates are sorted) and in a large flat one (most of it in the nucleus: the cut and the
// draw walk p's bits instead); and a large row of a few tied values, which the order breaks by id.
static void test_nucleus_draw_order() {
  int checked = 0;
  for (int32_t vocab : {300, 40000}) {
    std::vector<int32_t> perm(vocab);
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    std::vector<float> l(vocab);
    const float step = vocab == 300 ? 0.05f : 2e-4f;  // p from 1 down to e^-15 / e^-8
    for (int32_t i = 0; i < vocab; i++) l[perm[i]] = -step * static_cast<float>(i);
    checked += exact_nucleus_draws(l, vocab == 300 ? 1000 : 400, vocab == 300 ? "300 distinct" : "40000 distinct");
  }
  std::vector<float> ties(40000);
  for (size_t i = 0; i < ties.size(); i++) ties[i] = i % 7 < 4 ? 0.f : -0.25f * static_cast<float>(i % 7);
  checked += exact_nucleus_draws(ties, 400, "40000 in 4 tied values");
  // one maximum and a tail of 40000 distinct p near e^-12.5 (below 2^-17, past the 16 exponents
  // that the AVX-512 first level covers) holding 13% of the mass: top-p 0.9 cuts in the tail,
  // so the walk needs every exponent's mass
  std::vector<float> tail(40001);
  std::vector<int32_t> order(tail.size() - 1);
  std::iota(order.begin(), order.end(), 1);
  std::shuffle(order.begin(), order.end(), rng);
  tail[0] = 0.f;
  for (size_t i = 0; i < order.size(); i++) tail[order[i]] = -12.f - 2.5e-5f * static_cast<float>(i);
  checked += exact_nucleus_draws(tail, 2000, "a maximum and a tail below 2^-17");
  // 40000 distinct p in one exponent, from 1 down to 0.96 about 15 ulp apart: buckets of the top 8
  // mantissa bits hold ~2100 tokens, so the walk goes a level further (fine buckets of ~8)
  std::vector<float> narrow(40000);
  std::shuffle(order.begin(), order.end(), rng);
  for (size_t i = 0; i < narrow.size(); i++) narrow[order[i] - 1] = -std::ldexp(static_cast<float>(i), -20);
  checked += exact_nucleus_draws(narrow, 2000, "40000 in one exponent");
  std::printf("ok   %d top-p draws in nucleus order are exactly the reference's\n", checked);
}

static void test_frequencies() {
  // p ~ exp(l / 0.7): 0.197, 0.817... normalized below; top-p 0.8 at T 1 keeps 3, 2 (0.64 + 0.24)
  const std::vector<float> l = {1.f, 2.f, 0.f, 2.5f};
  const int n = 20000;
  std::vector<float> all, temp(n, 0.7f), tp(n, 1.f);
  std::vector<double> u(n);
  for (int k = 0; k < n; k++) {
    all.insert(all.end(), l.begin(), l.end());
    u[k] = (k + 0.5) / n;  // stratified: frequencies are exact up to one draw per token
  }
  std::vector<int32_t> out(n);
  EXPECT(sample_basic(all.data(), n, 4, temp.data(), tp.data(), u.data(), out.data()) == RKV_OK, "%s", rkv_last_error());
  double e[4], sum = 0;
  for (int i = 0; i < 4; i++) sum += e[i] = std::exp(l[i] / 0.7);
  for (int i = 0; i < 4; i++) {
    const double f = std::count(out.begin(), out.end(), i) / static_cast<double>(n);
    EXPECT(std::fabs(f - e[i] / sum) < 2e-4, "token %d: frequency %.5f, softmax %.5f", i, f, e[i] / sum);
  }
  const std::vector<float> l2 = {3.f, 2.f, 1.f, 0.f};  // p ~ 0.64, 0.24, 0.09, 0.03
  all.clear();
  for (int k = 0; k < n; k++) all.insert(all.end(), l2.begin(), l2.end());
  std::fill(temp.begin(), temp.end(), 1.f);
  std::fill(tp.begin(), tp.end(), 0.8f);
  EXPECT(sample_basic(all.data(), n, 4, temp.data(), tp.data(), u.data(), out.data()) == RKV_OK, "%s", rkv_last_error());
  const double f0 = std::count(out.begin(), out.end(), 0) / static_cast<double>(n);
  EXPECT(std::count(out.begin(), out.end(), 2) + std::count(out.begin(), out.end(), 3) == 0,
         "tokens outside the 0.8 nucleus were drawn");
  const double p0 = std::exp(3.0) / (std::exp(3.0) + std::exp(2.0));
  EXPECT(std::fabs(f0 - p0) < 2e-4, "nucleus: token 0 frequency %.5f, expected %.5f", f0, p0);
  std::printf("ok   stratified draws follow the softmax and stay in the nucleus\n");
}

// The probabilities' vector exponentials (exp_approx8, and exp_approx16 where the CPU has
// AVX-512) give exp_approx's bits: every 997th float of [-inf, +inf] and NaN, in every lane.
static std::vector<float> exp_inputs() {
  std::vector<float> x;
  for (uint64_t b = 0; b <= 0xFFFFFFFFull; b += 997) {
    float f;
    const uint32_t u = static_cast<uint32_t>(b);
    std::memcpy(&f, &u, sizeof f);
    x.push_back(f);
  }
  for (float f : {0.f, -0.f, INFINITY, -INFINITY, NAN, rkv::dense::kExpHi, rkv::dense::kExpLo, 89.f, -88.f}) x.push_back(f);
  while (x.size() % 16) x.push_back(1.f);
  return x;
}

static bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0 || (std::isnan(a) && std::isnan(b)); }

#if defined(RKV_EXP_AVX512)
RKV_EXP_AVX512_TARGET static void exp16(const float* x, float* y) {
  _mm512_storeu_ps(y, rkv::dense::exp_approx16(_mm512_loadu_ps(x)));
}
#endif

static void test_vector_exp() {
  const std::vector<float> x = exp_inputs();
  std::vector<float> y(x.size());
  int bad = 0;
#if defined(RKV_EXP_AVX2)
  for (size_t i = 0; i < x.size(); i += 8) _mm256_storeu_ps(&y[i], rkv::dense::exp_approx8(_mm256_loadu_ps(&x[i])));
  for (size_t i = 0; i < x.size(); i++) bad += !same_bits(y[i], rkv::dense::exp_approx(x[i]));
  EXPECT(bad == 0, "exp_approx8: %d of %zu floats differ from exp_approx", bad, x.size());
#endif
#if defined(RKV_EXP_AVX512)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl")) {
    bad = 0;
    for (size_t i = 0; i < x.size(); i += 16) exp16(&x[i], &y[i]);
    for (size_t i = 0; i < x.size(); i++) bad += !same_bits(y[i], rkv::dense::exp_approx(x[i]));
    EXPECT(bad == 0, "exp_approx16: %d of %zu floats differ from exp_approx", bad, x.size());
  }
#endif
  std::printf("ok   the vector exponentials give exp_approx's bits on %zu floats\n", x.size());
}

// The engine samples from a Java thread, whose stack also holds the Java frames: one top-p row of
// a flat 40000-id vocabulary (the walk, every level) runs on a thread with 64 KiB of stack.
struct SmallStackCall {
  const std::vector<float>* l;
  float t, top_p;
  double u;
  int32_t out = -1;
  int rc = -1;
};

static void* small_stack_sample(void* arg) {
  auto* c = static_cast<SmallStackCall*>(arg);
  c->rc = sample_basic(c->l->data(), 1, static_cast<int32_t>(c->l->size()), &c->t, &c->top_p, &c->u, &c->out);
  return nullptr;
}

static void test_small_stack() {
  std::vector<float> l(40000);
  for (size_t i = 0; i < l.size(); i++) l[i] = -std::ldexp(static_cast<float>((i * 7919) % l.size()), -20);
  SmallStackCall c{&l, 0.8f, 0.9f, 0.61};
  int32_t want = -1;
  EXPECT(sample_basic(l.data(), 1, static_cast<int32_t>(l.size()), &c.t, &c.top_p, &c.u, &want) == RKV_OK, "%s",
         rkv_last_error());
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  EXPECT(pthread_attr_setstacksize(&attr, 64 * 1024) == 0, "cannot ask for a 64 KiB stack");
  pthread_t th;
  EXPECT(pthread_create(&th, &attr, small_stack_sample, &c) == 0, "cannot start a thread");
  pthread_join(th, nullptr);
  pthread_attr_destroy(&attr);
  EXPECT(c.rc == RKV_OK && c.out == want, "64 KiB stack: rc %d, token %d against %d", c.rc, c.out, want);
  std::printf("ok   a top-p walk on a thread with a 64 KiB stack\n");
}

// One row's optional arguments: logit_bias, masked ids, penalties over token counts, min_p, top_k.
struct RowArgs {
  float t = 1.f, top_p = 1.f, min_p = 0.f, rep = 1.f, pres = 0.f, freq = 0.f;
  int32_t top_k = 0;
  std::vector<int32_t> bias_ids, mask_ids;
  std::vector<float> bias_values;
  std::vector<rkv_token_count> counts;
};

// The rows' arguments as rkv_sample_params (the vectors it points into are kept in *this).
struct Batch {
  std::vector<RowArgs> args;  // owns the counts the params point to
  std::vector<float> t, top_p, min_p, rep, pres, freq, bias_values;
  std::vector<int32_t> top_k, bias_ids, mask_ids;
  std::vector<int64_t> bias_indptr{0}, mask_indptr{0}, counts_len;
  std::vector<const rkv_token_count*> counts;
  std::vector<double> u;
  explicit Batch(const std::vector<RowArgs>& rows) : args(rows) {
    for (const RowArgs& a : args) {
      t.push_back(a.t), top_p.push_back(a.top_p), min_p.push_back(a.min_p), rep.push_back(a.rep);
      pres.push_back(a.pres), freq.push_back(a.freq), top_k.push_back(a.top_k);
      bias_ids.insert(bias_ids.end(), a.bias_ids.begin(), a.bias_ids.end());
      bias_values.insert(bias_values.end(), a.bias_values.begin(), a.bias_values.end());
      bias_indptr.push_back(static_cast<int64_t>(bias_ids.size()));
      mask_ids.insert(mask_ids.end(), a.mask_ids.begin(), a.mask_ids.end());
      mask_indptr.push_back(static_cast<int64_t>(mask_ids.size()));
      counts.push_back(a.counts.data());
      counts_len.push_back(static_cast<int64_t>(a.counts.size()));
    }
  }
  rkv_sample_params params(const float* logits, int32_t vocab, int32_t* out) const {
    rkv_sample_params p{};
    p.logits = logits, p.rows = static_cast<int64_t>(t.size()), p.vocab = vocab;
    p.temperature = t.data(), p.top_p = top_p.data(), p.uniform = u.data(), p.top_k = top_k.data();
    p.min_p = min_p.data(), p.repetition_penalty = rep.data(), p.presence_penalty = pres.data();
    p.frequency_penalty = freq.data(), p.counts = counts.data(), p.counts_len = counts_len.data();
    p.bias_indptr = bias_indptr.data(), p.bias_ids = bias_ids.data(), p.bias_values = bias_values.data();
    p.mask_indptr = mask_indptr.data(), p.mask_ids = mask_ids.data(), p.out = out;
    return p;
  }
};

// vLLM's edits in double: logit_bias, the mask, repetition (HF), then frequency and presence.
static std::vector<double> edited(const std::vector<float>& l, const RowArgs& a) {
  std::vector<double> x(l.begin(), l.end());
  for (size_t j = 0; j < a.bias_ids.size(); j++) x[a.bias_ids[j]] += a.bias_values[j];
  for (int32_t id : a.mask_ids) x[id] = -INFINITY;
  for (const rkv_token_count& c : a.counts) {
    double v = x[c.token];
    v = v > 0 ? v / a.rep : v * a.rep;
    v -= a.freq * c.output_count + (c.output_count > 0 ? a.pres : 0.f);
    x[c.token] = v;
  }
  return x;
}

static RowArgs random_args(int32_t vocab, int k) {
  RowArgs a;
  a.t = k % 4 == 0 ? 0.f : 0.5f + 0.25f * static_cast<float>(k % 3);
  a.top_p = k % 3 == 0 ? 0.8f : 1.f;
  a.min_p = k % 5 == 1 ? 0.05f : 0.f;
  a.top_k = k % 2 == 1 ? 1 + static_cast<int32_t>(rng() % 50) : 0;
  a.rep = k % 3 == 1 ? 1.3f : 1.f;
  a.pres = k % 4 == 2 ? 0.7f : 0.f;
  a.freq = k % 4 == 3 ? -0.4f : 0.3f;
  for (int j = 0; j < 5; j++) {
    a.bias_ids.push_back(static_cast<int32_t>(rng() % static_cast<uint32_t>(vocab)));
    a.bias_values.push_back(static_cast<float>(static_cast<int>(rng() % 9) - 4));
  }
  for (int j = 0; j < 3; j++) a.mask_ids.push_back(static_cast<int32_t>(rng() % static_cast<uint32_t>(vocab)));
  std::vector<int32_t> ids(static_cast<size_t>(vocab));
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), rng);
  for (int j = 0; j < std::min(vocab, 200); j++) a.counts.push_back({ids[static_cast<size_t>(j)], static_cast<int32_t>(rng() % 4)});
  return a;
}

// Rows with every argument: each draw is the double reference's for a uniform number within
// 1e-5 (in its nucleus with top-p), greedy rows its argmax, masked ids never drawn, and each row
// alone draws what it drew beside the others.
static void test_edits_and_filters_against_reference() {
  int checked = 0;
  for (int trial = 0; trial < 12; trial++) {
    const int32_t vocab = trial < 6 ? 300 + static_cast<int32_t>(rng() % 300) : 20000 + static_cast<int32_t>(rng() % 20000);
    std::normal_distribution<float> nd(0.f, trial % 2 ? 1.f : 4.f);
    const int rows = 12;
    std::vector<float> all;
    std::vector<RowArgs> args;
    for (int k = 0; k < rows; k++) {
      for (int32_t i = 0; i < vocab; i++) all.push_back(nd(rng));
      args.push_back(random_args(vocab, k + trial));
    }
    Batch b(args);
    for (int k = 0; k < rows; k++) b.u.push_back((k + 0.41) / rows);
    std::vector<int32_t> out(rows, -1);
    rkv_sample_params p = b.params(all.data(), vocab, out.data());
    EXPECT(rkv_sample(&p) == RKV_OK, "%s", rkv_last_error());
    for (int k = 0; k < rows; k++) {
      const RowArgs& a = args[static_cast<size_t>(k)];
      const std::vector<float> l(all.begin() + static_cast<long>(k) * vocab, all.begin() + static_cast<long>(k + 1) * vocab);
      const std::vector<double> x = edited(l, a);
      hash_token(out[k]);
      checked++;
      for (int32_t id : a.mask_ids) EXPECT(out[k] != id, "row %d drew masked id %d", k, id);
      if (a.t == 0.f) {
        const int32_t want = static_cast<int32_t>(std::max_element(x.begin(), x.end()) - x.begin());
        EXPECT(out[k] == want || std::fabs(x[out[k]] - x[want]) < 1e-5, "greedy row %d: %d, reference %d", k, out[k], want);
      } else {
        const Ref r = reference_x(x, a.t, a.top_p, a.min_p, a.top_k);
        EXPECT(plausible(r, b.u[k], out[k], 1e-5, a.top_p < 1.f), "trial %d row %d (T %g top-p %g min-p %g top-k %d): token %d",
               trial, k, a.t, a.top_p, a.min_p, a.top_k, out[k]);
      }
      Batch one({a});
      one.u = {b.u[k]};
      int32_t alone = -1;
      rkv_sample_params q = one.params(l.data(), vocab, &alone);
      EXPECT(rkv_sample(&q) == RKV_OK && alone == out[k], "row %d alone: %d vs %d (%s)", k, alone, out[k], rkv_last_error());
    }
  }
  std::printf("ok   %d draws with bias, mask, penalties, min_p, top_k are the reference's\n", checked);
}

// logit_bias +100 forces a token, -100 bans the maximum; a masked maximum is never drawn; a
// count of 0 is only a repetition penalty; bad optional arguments are refused.
static void test_edit_edges_and_refusals() {
  std::vector<float> l = {1.f, 5.f, 2.f, 0.5f};
  for (float t : {0.f, 1.f}) {
    for (int k = 0; k < 50; k++) {
      RowArgs force;
      force.t = t;
      force.bias_ids = {3}, force.bias_values = {100.f};
      RowArgs ban = force;
      ban.bias_ids = {1}, ban.bias_values = {-100.f};
      RowArgs mask = force;
      mask.bias_ids.clear(), mask.bias_values.clear(), mask.mask_ids = {1};
      Batch b({force, ban, mask});
      b.u = {k / 50.0, k / 50.0, k / 50.0};
      std::vector<float> all;
      for (int r = 0; r < 3; r++) all.insert(all.end(), l.begin(), l.end());
      std::vector<int32_t> out(3, -1);
      rkv_sample_params p = b.params(all.data(), 4, out.data());
      EXPECT(rkv_sample(&p) == RKV_OK, "%s", rkv_last_error());
      EXPECT(out[0] == 3 && out[1] != 1 && out[2] != 1, "T %g u %.2f: forced %d, banned %d, masked %d", t, k / 50.0, out[0],
             out[1], out[2]);
    }
  }
  RowArgs rep;
  rep.t = 0.f, rep.rep = 10.f, rep.freq = 5.f, rep.counts = {{1, 0}};  // prompt only: 5 / 10 = 0.5 < 2
  Batch b({rep});
  b.u = {0.5};
  int32_t out = -1;
  rkv_sample_params p = b.params(l.data(), 4, &out);
  EXPECT(rkv_sample(&p) == RKV_OK && out == 2, "a prompt token's repetition penalty: %d", out);
  const auto refused = [&](const char* what, auto&& spoil) {
    Batch bad({rep});
    bad.u = {0.5};
    spoil(bad);
    int32_t o = -7;
    rkv_sample_params q = bad.params(l.data(), 4, &o);
    EXPECT(rkv_sample(&q) == RKV_ERR_INVALID_ARGUMENT && o == -7, "%s accepted", what);
  };
  refused("bias id 4", [](Batch& x) { x.bias_ids = {4}, x.bias_values = {1.f}, x.bias_indptr = {0, 1}; });
  refused("bias NaN", [](Batch& x) { x.bias_ids = {0}, x.bias_values = {NAN}, x.bias_indptr = {0, 1}; });
  refused("mask id -1", [](Batch& x) { x.mask_ids = {-1}, x.mask_indptr = {0, 1}; });
  refused("a NULL count list", [](Batch& x) { x.counts_len = {1}, x.counts = {nullptr}; });
  refused("repetition_penalty 0", [](Batch& x) { x.rep = {0.f}; });
  refused("min_p 1.5", [](Batch& x) { x.min_p = {1.5f}; });
  refused("presence_penalty inf", [](Batch& x) { x.pres = {INFINITY}; });
  std::printf("ok   logit_bias forces and bans, masked ids, penalties of prompt tokens, refusals\n");
}

static void test_edges_and_refusals() {
  const float l[6] = {NAN, 1.f, 4.f, 4.f, -INFINITY, 2.f};
  float t0 = 0.f, t1 = 1.f, tp1 = 1.f, tp_small = 1e-6f;
  double u = 0.999999;
  int32_t out = -1;
  EXPECT(sample_basic(l, 1, 6, &t0, &tp1, &u, &out) == RKV_OK && out == 2, "temperature 0: argmax, got %d", out);
  EXPECT(sample_basic(l, 1, 6, &t1, &tp_small, &u, &out) == RKV_OK && out == 2, "tiny top-p: the first maximum, got %d",
         out);
  const float none[3] = {NAN, -INFINITY, NAN};
  EXPECT(sample_basic(none, 1, 3, &t1, &tp1, &u, &out) == RKV_OK && out == 1, "no finite logit: argmax, got %d", out);
  const float inf[3] = {1.f, INFINITY, 2.f};
  EXPECT(sample_basic(inf, 1, 3, &t1, &tp1, &u, &out) == RKV_OK && out == 1, "+inf logit: argmax, got %d", out);
  for (int k = 0; k < 200; k++) {  // NaN never drawn, whatever u
    double uk = k / 200.0;
    EXPECT(sample_basic(l, 1, 6, &t1, &tp1, &uk, &out) == RKV_OK && out != 0 && out != 4, "u %.3f drew %d", uk, out);
  }
  out = -7;
  float bad_t = -1.f, nan_t = NAN, bad_p = 0.f, big_p = 1.5f;
  double bad_u = 1.0;
  EXPECT(sample_basic(l, 1, 6, &bad_t, &tp1, &u, &out) == RKV_ERR_INVALID_ARGUMENT, "negative temperature accepted");
  EXPECT(sample_basic(l, 1, 6, &nan_t, &tp1, &u, &out) == RKV_ERR_INVALID_ARGUMENT, "NaN temperature accepted");
  EXPECT(sample_basic(l, 1, 6, &t1, &bad_p, &u, &out) == RKV_ERR_INVALID_ARGUMENT, "top_p 0 accepted");
  EXPECT(sample_basic(l, 1, 6, &t1, &big_p, &u, &out) == RKV_ERR_INVALID_ARGUMENT, "top_p 1.5 accepted");
  EXPECT(sample_basic(l, 1, 6, &t1, &tp1, &bad_u, &out) == RKV_ERR_INVALID_ARGUMENT, "uniform 1 accepted");
  EXPECT(sample_basic(l, 1, 0, &t1, &tp1, &u, &out) == RKV_ERR_INVALID_ARGUMENT, "vocab 0 accepted");
  EXPECT(sample_basic(nullptr, 1, 6, &t1, &tp1, &u, &out) == RKV_ERR_INVALID_ARGUMENT, "null logits accepted");
  EXPECT(out == -7, "a refused call wrote out (%d)", out);
  std::printf("ok   edges (argmax cases, NaN never drawn) and refusals\n");
}

int main(int, char** argv) {
  std::printf("ISA %s\n", requested_isa());
  if (!std::getenv("RADIXKV_ISA")) test_vector_exp();  // no library dispatch in it: once is enough
  test_against_reference();
  test_nucleus_draw_order();
  test_frequencies();
  test_edges_and_refusals();
  test_edits_and_filters_against_reference();
  test_edit_edges_and_refusals();
  test_small_stack();
  // The row passes' AVX-512 forms (where the CPU has them) give the portable ones' bits, so
  // the lower ISAs' runs must draw the very same tokens (RKV_TEST_TOKEN_HASH: this run's).
  if (const char* want = std::getenv("RKV_TEST_TOKEN_HASH")) {
    EXPECT(std::strtoull(want, nullptr, 16) == g_token_hash, "the tokens differ from the first run's (%s against %llx)",
           want, static_cast<unsigned long long>(g_token_hash));
  } else {
    char hash[32];
    std::snprintf(hash, sizeof hash, "%llx", static_cast<unsigned long long>(g_token_hash));
    for (const char* isa : {"avx2", "scalar"})
      if (!rerun_with(argv[0], std::string("RKV_TEST_TOKEN_HASH=") + hash + " RADIXKV_ISA=" + isa)) g_failures++;
  }
  if (g_failures) {
    std::fprintf(stderr, "%d failure(s)\n", g_failures);
    return 1;
  }
  std::printf("sampling_test: OK\n");
  return 0;
}
