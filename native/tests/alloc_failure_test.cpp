// Allocation failures inside the kernels: an entry point whose allocation fails returns
// RKV_ERR_OUT_OF_MEMORY with a message, leaves its outputs and in-place inputs as they were, and
// the next call (allocations working again) gives the same result as one that never failed. This
// executable replaces the global operator new (shared objects resolve to it too) so that it can
// fail on demand: every allocation made inside an OpenMP region, or exactly the n-th allocation
// after arming (a sweep over every allocation an entry point makes, on whichever thread).
#include <omp.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <functional>
#include <new>
#include <random>
#include <string>
#include <vector>

#include "radixkv.h"
#include "attention_args.h"
#include "rkv_test.h"
#include "sample_args.h"

namespace {

std::atomic<bool> g_fail_in_region{false};
std::atomic<long> g_countdown{0};  // > 0: the allocation that brings it to 0 fails
std::atomic<long> g_failed{0};     // allocations failed on purpose

void* checked_alloc(std::size_t n) {
  if (g_fail_in_region.load() && omp_get_level() > 0) {
    g_failed++;
    throw std::bad_alloc();
  }
  if (g_countdown.load() > 0 && g_countdown.fetch_sub(1) == 1) {
    g_failed++;
    throw std::bad_alloc();
  }
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}

}  // namespace

void* operator new(std::size_t n) { return checked_alloc(n); }
void* operator new[](std::size_t n) { return checked_alloc(n); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }

namespace {

// One kernel call: its return code; out() the bytes it writes (or rewrites in place), reset()
// restores its in-place inputs.
struct Case {
  const char* name;
  std::function<int()> call;
  std::function<std::vector<float>()> out;
  std::function<void()> reset;
};

bool same(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

bool mentions_memory(const char* msg) {
  const std::string m = msg;
  return m.find("out of memory") != std::string::npos || m.find("cannot allocate") != std::string::npos;
}

// The n-th-allocation sweep and the in-region failure for one case.
void check(const Case& c) {
  c.reset();
  const int rc0 = c.call();
  EXPECT(rc0 == RKV_OK, "%s: reference call failed: %s", c.name, rkv_last_error());
  const std::vector<float> ref = c.out();

  // every allocation made inside an OpenMP region fails: the per-thread scratch
  c.reset();
  const std::vector<float> before = c.out();
  g_failed = 0;
  g_fail_in_region = true;
  const int rc = c.call();
  g_fail_in_region = false;
  EXPECT(g_failed > 0, "%s: made no allocation inside an OpenMP region (the test checks nothing)", c.name);
  EXPECT(rc == RKV_ERR_OUT_OF_MEMORY, "%s: in-region failure returned %d", c.name, rc);
  EXPECT(mentions_memory(rkv_last_error()), "%s: message \"%s\"", c.name, rkv_last_error());
  EXPECT(same(c.out(), before), "%s: a failed call changed its outputs", c.name);
  c.reset();
  EXPECT(c.call() == RKV_OK && same(c.out(), ref), "%s: the call after a failure differs", c.name);

  // the n-th allocation fails, for every n until a call makes fewer than n
  int swept = 0;
  for (long n = 1; n < 100000; n++) {
    c.reset();
    g_failed = 0;
    g_countdown = n;
    const int r = c.call();
    const bool hit = g_failed > 0;
    g_countdown = 0;
    if (!hit) {
      EXPECT(r == RKV_OK && same(c.out(), ref), "%s: call with no failed allocation differs", c.name);
      break;
    }
    swept++;
    EXPECT(r == RKV_ERR_OUT_OF_MEMORY, "%s: allocation %ld failed and the call returned %d", c.name, n, r);
    EXPECT(mentions_memory(rkv_last_error()), "%s: allocation %ld: message \"%s\"", c.name, n, rkv_last_error());
  }
  EXPECT(swept > 0, "%s: made no allocation at all (the sweep checks nothing)", c.name);
  std::printf("%s: %d allocation sites failed one at a time\n", c.name, swept);
}

// An attention call's outputs: Case::out gives out then lse, Case::reset fills both with a marker.
struct AttentionOutputs {
  std::vector<float> out, lse;
  std::vector<float> joined() const {
    std::vector<float> o = out;
    o.insert(o.end(), lse.begin(), lse.end());
    return o;
  }
  void clear() {
    std::fill(out.begin(), out.end(), -7.f);
    std::fill(lse.begin(), lse.end(), -7.f);
  }
};

std::vector<float> random_floats(size_t n, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

}  // namespace

int main() {
  omp_set_num_threads(2);  // both threads build scratch, even on a one-core machine
  std::mt19937 rng(7);
  const int nqo = 8, nkv = 2, hd = 64, page = 16;
  const float sm = 1.f / std::sqrt((float)hd);

  // a paged f32 cache: sequences of the given lengths on consecutive pages
  struct Batch {
    std::vector<int32_t> indptr{0}, indices, last;
    int64_t pages = 0;
  };
  auto make_batch = [&](const std::vector<int>& lens) {
    Batch b;
    for (int len : lens) {
      const int np = (len + page - 1) / page;
      for (int i = 0; i < np; i++) b.indices.push_back((int32_t)b.pages++);
      b.indptr.push_back((int32_t)b.indices.size());
      b.last.push_back(len - (np - 1) * page);
    }
    return b;
  };

  for (const std::vector<int>& lens : {std::vector<int>{40, 100, 7, 64}, std::vector<int>{900}}) {
    const Batch b = make_batch(lens);
    const int batch = (int)lens.size();
    const std::vector<float> k = random_floats((size_t)b.pages * page * nkv * hd, rng);
    const std::vector<float> v = random_floats(k.size(), rng);
    const std::vector<float> q = random_floats((size_t)batch * nqo * hd, rng);
    AttentionOutputs o{std::vector<float>(q.size()), std::vector<float>((size_t)batch * nqo)};
    std::vector<float>&out = o.out, &lse = o.lse;
    auto outputs = [&] { return o.joined(); };
    auto clear = [&] { o.clear(); };
    const std::string tag = batch == 1 ? " (split-KV)" : "";
    const std::string dname = "rkv_decode_attention" + tag;
    check({dname.c_str(),
           [&] {
             return rkv_decode_attention(ptr(decode_params(q.data(), RKV_DTYPE_F32, out.data(), RKV_DTYPE_F32,
                 lse.data(), k.data(), v.data(), RKV_DTYPE_F32, b.pages, page, nqo, nkv, hd, b.indptr.data(),
                 b.indices.data(), b.last.data(), batch, sm, 0.f, 1.f, 1.f, -1)));
           },
           outputs, clear});
    // the planned entry points: a fresh plan per call (its first run allocates the split plan)
    const std::string pname = "rkv_decode_plan_tables + rkv_decode_attention_run" + tag;
    check({pname.c_str(),
           [&] {
             rkv_decode_plan* plan = nullptr;
             int rc = rkv_decode_plan_create(&plan);
             if (rc != RKV_OK) return rc;
             rc = rkv_decode_plan_tables(plan, b.indptr.data(), b.indices.data(), b.last.data(), batch, b.pages, page);
             if (rc == RKV_OK)
               rc = rkv_decode_attention_run(plan, ptr(decode_params(q.data(), RKV_DTYPE_F32, out.data(),
                   RKV_DTYPE_F32, lse.data(), k.data(), v.data(), RKV_DTYPE_F32, b.pages, page, nqo, nkv, hd,
                   b.indptr.data(), b.indices.data(), b.last.data(), batch, sm, 0.f, 1.f, 1.f, -1)));
             rkv_decode_plan_destroy(plan);
             return rc;
           },
           outputs, clear});
  }

  {
    // prefill: the last q_len tokens of each sequence
    const std::vector<int> lens{48, 33, 70};
    const std::vector<int> qlens{20, 33, 5};
    const Batch b = make_batch(lens);
    const int batch = (int)lens.size();
    std::vector<int32_t> qo{0};
    for (int ql : qlens) qo.push_back(qo.back() + ql);
    const std::vector<float> k = random_floats((size_t)b.pages * page * nkv * hd, rng);
    const std::vector<float> v = random_floats(k.size(), rng);
    const std::vector<float> q = random_floats((size_t)qo.back() * nqo * hd, rng);
    AttentionOutputs o{std::vector<float>(q.size()), std::vector<float>((size_t)qo.back() * nqo)};
    std::vector<float>&out = o.out, &lse = o.lse;
    check({"rkv_append_prefill_attention",
           [&] {
             return rkv_append_prefill_attention(ptr(prefill_params(q.data(), RKV_DTYPE_F32, out.data(), RKV_DTYPE_F32,
                 lse.data(), qo.data(), k.data(), v.data(), RKV_DTYPE_F32, b.pages, page, nqo, nkv, hd,
                 b.indptr.data(), b.indices.data(), b.last.data(), batch, nullptr, nullptr, sm, 0.f, 1.f, 1.f, -1)));
           },
           [&] { return o.joined(); }, [&] { o.clear(); }});
  }

  {
    // rope rotates q and k in place: a failed call must leave them as they were
    const int tokens = 300;
    const std::vector<float> q0 = random_floats((size_t)tokens * nqo * hd, rng);
    const std::vector<float> k0 = random_floats((size_t)tokens * nkv * hd, rng);
    std::vector<float> q = q0, k = k0;
    std::vector<int32_t> pos(tokens);
    for (int t = 0; t < tokens; t++) pos[t] = 3 * t + 1;
    check({"rkv_rope",
           [&] { return rkv_rope(q.data(), k.data(), pos.data(), tokens, nqo, nkv, hd, 10000.f); },
           [&] {
             std::vector<float> o = q;
             o.insert(o.end(), k.begin(), k.end());
             return o;
           },
           [&] {
             q = q0;
             k = k0;
           }});
  }

  {
    // sampling: per-thread probabilities and nucleus order; out stays as it was on failure
    const int rows = 8, vocab = 8000;
    const std::vector<float> logits = random_floats((size_t)rows * vocab, rng);
    std::vector<float> t(rows, 0.8f), top_p(rows, 0.9f);
    std::vector<double> u(rows);
    for (int r = 0; r < rows; r++) u[r] = (r + 0.5) / rows;
    std::vector<int32_t> out(rows, -1), other(rows);
    // Each thread keeps its scratch between calls and builds it again for another vocabulary:
    // reset() samples with one id fewer first, so that every checked call builds it.
    check({"rkv_sample",
           [&] { return sample_basic(logits.data(), rows, vocab, t.data(), top_p.data(), u.data(), out.data()); },
           [&] { return std::vector<float>(out.begin(), out.end()); },
           [&] {
             std::fill(out.begin(), out.end(), -1);
             EXPECT(sample_basic(logits.data(), rows, vocab - 1, t.data(), top_p.data(), u.data(), other.data()) == RKV_OK,
                    "%s", rkv_last_error());
           }});
    // with edits (a logit bias per row) and a top-k: the scratch also holds the edited row
    std::vector<int64_t> indptr(rows + 1);
    std::vector<int32_t> ids(rows), top_k(rows, 20);
    std::vector<float> bias(rows, 3.f);
    for (int r = 0; r < rows; r++) indptr[r + 1] = r + 1, ids[r] = r * 7;
    rkv_sample_params p{};
    p.logits = logits.data(), p.rows = rows, p.vocab = vocab, p.temperature = t.data(), p.top_p = top_p.data();
    p.uniform = u.data(), p.top_k = top_k.data(), p.bias_indptr = indptr.data(), p.bias_ids = ids.data();
    p.bias_values = bias.data(), p.out = out.data();
    check({"rkv_sample (edits, top-k)", [&] { return rkv_sample(&p); },
           [&] { return std::vector<float>(out.begin(), out.end()); },
           [&] {
             std::fill(out.begin(), out.end(), -1);
             EXPECT(sample_basic(logits.data(), rows, vocab - 1, t.data(), top_p.data(), u.data(), other.data()) == RKV_OK,
                    "%s", rkv_last_error());
           }});
  }

  if (g_failures) std::printf("%d failure(s)\n", g_failures);
  return g_failures ? 1 : 0;
}
