// rkv_logprobs against a double-precision log-softmax (std::exp, std::log, every token sorted):
// target and top-k log-probabilities within 1e-5, top-k ids exactly (ties by lower id), NaN as
// -inf, the rows a row_index picks, degenerate rows, and bad arguments refused before anything is
// written. Run on every ISA path (isa_rerun.h).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <random>
#include <vector>

#include "isa_rerun.h"
#include "radixkv.h"
#include "rkv_test.h"

static std::mt19937 rng(7);

struct RefRow {
  std::vector<double> lp;     // log-softmax per token
  std::vector<int32_t> order;  // tokens by log-probability down, id up
};

static RefRow reference(const float* l, int32_t vocab) {
  RefRow r;
  r.lp.resize(static_cast<size_t>(vocab));
  std::vector<double> x(static_cast<size_t>(vocab));
  double max = -INFINITY;
  for (int32_t i = 0; i < vocab; i++) {
    x[i] = std::isnan(l[i]) ? -INFINITY : static_cast<double>(l[i]);
    max = std::max(max, x[i]);
  }
  if (std::isfinite(max)) {
    double sum = 0;
    for (double v : x) sum += std::exp(v - max);
    const double lse = max + std::log(sum);
    for (int32_t i = 0; i < vocab; i++) r.lp[i] = x[i] - lse;
  } else {
    int64_t c = 0;
    for (double v : x) c += v == INFINITY;
    for (int32_t i = 0; i < vocab; i++) r.lp[i] = c > 0 && x[i] == INFINITY ? -std::log(double(c)) : -INFINITY;
  }
  r.order.resize(static_cast<size_t>(vocab));
  std::iota(r.order.begin(), r.order.end(), 0);
  // ties by lower id: by the logit itself (two logits of one log-probability are equal floats)
  std::stable_sort(r.order.begin(), r.order.end(), [&](int32_t a, int32_t b) {
    if (std::isfinite(max)) return x[a] > x[b];
    return r.lp[a] > r.lp[b];
  });
  return r;
}

static bool close(double got, double want) {
  if (std::isinf(want) || std::isinf(got)) return got == want;
  return std::fabs(got - want) <= 1e-5;
}

// rows of logits with a chosen mix: spread, peaked, ties, NaN, -inf
static std::vector<float> make_rows(int64_t rows, int32_t vocab, int kind) {
  std::vector<float> l(static_cast<size_t>(rows * vocab));
  std::normal_distribution<float> n(0.f, kind == 1 ? 8.f : 2.f);
  std::uniform_int_distribution<int> small(-3, 3);
  for (size_t i = 0; i < l.size(); i++) l[i] = kind == 2 ? static_cast<float>(small(rng)) : n(rng);
  if (kind == 3)
    for (size_t i = 0; i < l.size(); i += 5) l[i] = (i / 5) % 2 ? NAN : -INFINITY;
  return l;
}

static void check(const std::vector<float>& l, int64_t num_rows, int32_t vocab, const std::vector<int32_t>& index,
                  const std::vector<int32_t>& target, int32_t k, const char* what) {
  const int64_t rows = static_cast<int64_t>(target.size());
  std::vector<double> tlp(static_cast<size_t>(rows), 1.0), top_lp(static_cast<size_t>(rows * k) + 1, 1.0);
  std::vector<int32_t> top_ids(static_cast<size_t>(rows * k) + 1, -7);
  rkv_logprobs_params p{l.data(), num_rows, vocab, index.empty() ? nullptr : index.data(), rows, target.data(), k,
                        tlp.data(), top_ids.data(), top_lp.data()};
  const int rc = rkv_logprobs(&p);
  EXPECT(rc == RKV_OK, "%s: rkv_logprobs failed: %s", what, rkv_last_error());
  if (rc != RKV_OK) return;
  for (int64_t r = 0; r < rows; r++) {
    const int64_t row = index.empty() ? r : index[r];
    const RefRow ref = reference(l.data() + row * vocab, vocab);
    EXPECT(close(tlp[r], ref.lp[target[r]]), "%s: row %lld target %d: %.9g, reference %.9g", what, (long long)r,
           target[r], tlp[r], ref.lp[target[r]]);
    for (int32_t j = 0; j < k; j++) {
      const int32_t id = top_ids[r * k + j];
      EXPECT(id == ref.order[j], "%s: row %lld top %d is %d, reference %d", what, (long long)r, j, id, ref.order[j]);
      if (id < 0 || id >= vocab) continue;
      EXPECT(close(top_lp[r * k + j], ref.lp[id]), "%s: row %lld top %d (%d): %.9g, reference %.9g", what,
             (long long)r, j, id, top_lp[r * k + j], ref.lp[id]);
    }
  }
  EXPECT(top_ids[rows * k] == -7 && top_lp[rows * k] == 1.0, "%s: wrote past top_k", what);
}

static void test_against_reference() {
  for (int32_t vocab : {1, 7, 33, 1000, 32000}) {
    for (int kind = 0; kind < 4; kind++) {
      const int64_t rows = vocab >= 32000 ? 5 : 9;
      std::vector<float> l = make_rows(rows, vocab, kind);
      std::uniform_int_distribution<int32_t> tok(0, vocab - 1);
      for (int32_t k : {0, 1, 5, 20}) {
        if (k > vocab) continue;
        std::vector<int32_t> target(static_cast<size_t>(rows));
        for (auto& t : target) t = tok(rng);
        char what[96];
        std::snprintf(what, sizeof what, "vocab %d kind %d k %d", vocab, kind, k);
        check(l, rows, vocab, {}, target, k, what);
        // a row index picking rows out of order, one twice
        std::vector<int32_t> index{static_cast<int32_t>(rows - 1), 0, static_cast<int32_t>(rows / 2), 0};
        std::vector<int32_t> t2(index.size());
        for (auto& t : t2) t = tok(rng);
        check(l, rows, vocab, index, t2, k, what);
      }
    }
  }
}

static void test_degenerate_rows() {
  const int32_t vocab = 40;
  std::vector<float> l(3 * vocab, -INFINITY);
  for (int32_t i = 0; i < vocab; i += 3) l[i] = NAN;  // row 0: only -inf and NaN
  l[vocab + 5] = INFINITY;                            // row 1: two +inf
  l[vocab + 17] = INFINITY;
  l[vocab + 18] = 3.f;
  for (int32_t i = 0; i < vocab; i++) l[2 * vocab + i] = i == 9 ? 1.f : NAN;  // row 2: one number
  check(l, 3, vocab, {}, {3, 17, 9}, 4, "degenerate rows");
  // row 2 gives its one finite token log-probability 0
  double tlp = 1;
  int32_t target = 9;
  rkv_logprobs_params p{l.data() + 2 * vocab, 1, vocab, nullptr, 1, &target, 0, &tlp, nullptr, nullptr};
  EXPECT(rkv_logprobs(&p) == RKV_OK && tlp == 0.0, "one finite logit: %g", tlp);
}

static void test_large_values() {
  // logits far from zero: the log-sum-exp must not lose them (a float sum would)
  const int32_t vocab = 5000;
  std::vector<float> l(vocab);
  for (int32_t i = 0; i < vocab; i++) l[i] = 1.0e4f + static_cast<float>(i % 97) * 0.01f;
  check(l, 1, vocab, {}, {4999}, 20, "large logits");
}

static void test_refusals() {
  const int32_t vocab = 10;
  std::vector<float> l(2 * vocab, 0.f);
  double tlp[2] = {5, 5}, top_lp[4] = {5, 5, 5, 5};
  int32_t top_ids[4] = {-1, -1, -1, -1};
  int32_t target[2] = {1, 2};
  auto refused = [&](rkv_logprobs_params p, const char* what) {
    EXPECT(rkv_logprobs(&p) == RKV_ERR_INVALID_ARGUMENT, "%s: not refused", what);
    EXPECT(tlp[0] == 5 && tlp[1] == 5 && top_ids[0] == -1 && top_lp[0] == 5, "%s: wrote before refusing", what);
    EXPECT(rkv_last_error()[0] != '\0', "%s: no message", what);
  };
  const rkv_logprobs_params ok{l.data(), 2, vocab, nullptr, 2, target, 2, tlp, top_ids, top_lp};
  rkv_logprobs_params p = ok;
  p.top_k = RKV_LOGPROBS_MAX_TOP_K + 1;
  refused(p, "top_k above the maximum");
  p = ok;
  p.vocab = 1;
  refused(p, "top_k above vocab");
  p = ok;
  p.top_k = -1;
  refused(p, "negative top_k");
  p = ok;
  p.num_logit_rows = 1;
  refused(p, "rows past num_logit_rows");
  int32_t bad_index[2] = {0, 2};
  p = ok;
  p.row_index = bad_index;
  refused(p, "row index past the rows");
  int32_t bad_target[2] = {1, vocab};
  p = ok;
  p.target = bad_target;
  refused(p, "target outside the vocabulary");
  p = ok;
  p.top_ids = nullptr;
  refused(p, "NULL top_ids");
  p = ok;
  p.logits = nullptr;
  refused(p, "NULL logits");
  p = ok;
  p.vocab = 0;
  refused(p, "vocab 0");
  EXPECT(rkv_logprobs(nullptr) == RKV_ERR_INVALID_ARGUMENT, "NULL params not refused");
  p = ok;
  p.rows = 0;
  p.logits = nullptr;
  EXPECT(rkv_logprobs(&p) == RKV_OK, "zero rows must succeed without pointers");
}

int main(int, char** argv) {
  std::printf("ISA %s\n", requested_isa());
  test_against_reference();
  test_degenerate_rows();
  test_large_values();
  test_refusals();
  if (rerun_lower_isas(argv[0])) g_failures++;
  if (g_failures) {
    std::fprintf(stderr, "%d failure(s)\n", g_failures);
    return 1;
  }
  std::printf("logprobs_test: OK\n");
  return 0;
}
