// Token sampling on the CPU (rkv_sample): the row's edits (logit_bias, min_tokens' masked ids,
// repetition / frequency / presence penalties) on a copy, then softmax(logits / T) cut by min_p,
// top_k and the top-p nucleus, one draw per row from the caller's uniform number. The engine
// samples every row of a decode step here that is not a plain argmax: in Java, Math.exp over the
// vocabulary of 64 rows and the top-p sort took a large share of a small model's decode step.
// The edits are sparse (the caller passes lists, never vocabulary-sized rows), so a row without
// them reads the logits in place and a greedy row without them is one argmax pass.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <vector>

#include "rkv_argmax.h"
#include "rkv_common.h"
#include "rkv_dense_math.h"
#include "rkv_dtype.h"
#include "rkv_exp_avx2.h"
#include "rkv_isa.h"
#include "rkv_parallel.h"
#include "rkv_region_scratch.h"
#include "sampling_filter.h"
#include "sampling_rows.h"
#include "sampling_walk.h"

namespace {

using rkv::sampling::Crossing;
using rkv::sampling::kChunk;
using rkv::sampling::key_id;
using rkv::sampling::key_p;
using rkv::sampling::order_key;
using rkv::sampling::RadixWalk;
using rkv::sampling::RowScratch;

constexpr int64_t kParallelElems = int64_t{1} << 15;

// p[i] = exp_approx((l[i] - max) * inv_t), 0 for NaN; fills the chunk sums and returns their sum.
double probabilities(const float* l, int32_t vocab, float max, float inv_t, RowScratch& s) {
#if defined(__x86_64__)
  if (s.avx512) return rkv::sampling::probabilities_avx512(l, vocab, max, inv_t, s.p.data(), s.chunk.data());
#endif
  double total = 0;
  for (int32_t c0 = 0; c0 < vocab; c0 += kChunk) {
    const int32_t c1 = std::min(vocab, c0 + kChunk);
    double sum = 0;
    int32_t i = c0;
#if defined(RKV_EXP_AVX2)
    // four independent sums: one would chain two double adds (3 cycles each) per 8 tokens
    __m256d acc[4] = {_mm256_setzero_pd(), _mm256_setzero_pd(), _mm256_setzero_pd(), _mm256_setzero_pd()};
    for (; i + 16 <= c1; i += 16)
      for (int h = 0; h < 2; h++) {
        const __m256 v = _mm256_loadu_ps(l + i + 8 * h);
        __m256 e = rkv::dense::exp_approx8(_mm256_mul_ps(_mm256_sub_ps(v, _mm256_set1_ps(max)), _mm256_set1_ps(inv_t)));
        e = _mm256_blendv_ps(e, _mm256_setzero_ps(), _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
        _mm256_storeu_ps(s.p.data() + i + 8 * h, e);
        acc[2 * h] = _mm256_add_pd(acc[2 * h], _mm256_cvtps_pd(_mm256_castps256_ps128(e)));
        acc[2 * h + 1] = _mm256_add_pd(acc[2 * h + 1], _mm256_cvtps_pd(_mm256_extractf128_ps(e, 1)));
      }
    alignas(32) double lanes[4];  // in the AVX-512 form's order (its bits)
    _mm256_store_pd(lanes, _mm256_add_pd(_mm256_add_pd(acc[0], acc[2]), _mm256_add_pd(acc[1], acc[3])));
    sum = (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
#endif
    for (; i < c1; i++) {
      const float e = std::isnan(l[i]) ? 0.f : rkv::dense::exp_approx((l[i] - max) * inv_t);
      s.p[static_cast<size_t>(i)] = e;
      sum += e;
    }
    s.chunk[static_cast<size_t>(c0 / kChunk)] = sum;
    total += sum;
  }
  return total;
}

// The first token in id order at which the running mass passes target (chunk sums first).
int32_t draw_in_order(const RowScratch& s, int32_t vocab, double target) {
  double acc = 0;
  for (int32_t c0 = 0; c0 < vocab; c0 += kChunk) {
    const double cs = s.chunk[static_cast<size_t>(c0 / kChunk)];
    if (acc + cs > target) {
      double run = acc;
      for (int32_t i = c0; i < std::min(vocab, c0 + kChunk); i++) {
        run += s.p[static_cast<size_t>(i)];
        if (s.p[static_cast<size_t>(i)] > 0.f && run > target) return i;
      }
    }
    acc += cs;  // not crossed (or, by rounding, not inside the chunk): go on
  }
  for (int32_t i = vocab - 1; i > 0; i--)  // rounding past the end: the last possible token
    if (s.p[static_cast<size_t>(i)] > 0.f) return i;
  return 0;
}

// Sorts the tokens with p at or above 2^(min_exp - 127) into s.order (p down, id up); returns
// their count.
int32_t nucleus_candidates(RowScratch& s, int32_t vocab, uint32_t min_exp) {
  int32_t n = 0;
  for (int32_t i = 0; i < vocab; i++) {
    const uint32_t b = rkv::f32_bits(s.p[static_cast<size_t>(i)]);
    if (b != 0 && (b >> 23) >= min_exp) s.order[static_cast<size_t>(n++)] = order_key(b, i);
  }
  std::sort(s.order.begin(), s.order.begin() + n);
  return n;
}

// Up to this many candidates (a lower bound of their count) the nucleus is sorted; past it (flat
// rows, much of the vocabulary in the nucleus) the cut and the draw are each found by a walk over
// p's bits (RadixWalk), which reads the row three to five times but sorts only a bucket or two.
// The walk is level with the sort or faster from about 40 candidates.
// Measured: docs/measurements/kernel-constants.md#sampling-sort-or-radix-walk
constexpr int32_t kSortMinCandidates = 64;

// Mass by exponent field of every token (p >= 0), in four interleaved copies: most p of a row
// share a few exponents, and one copy would chain every add on the last one (4 cycles each).
// Each sum is exact (floats of one exponent, at most 2^17 of them, fit a double's mantissa).
// (Integer mantissa sums, as the AVX-512 and window passes add, were no faster here.)
void exponent_masses(const RowScratch& s, int32_t vocab, double* mass) {
  double part[4][256] = {};
  int32_t i = 0;
  for (; i + 4 <= vocab; i += 4)
    for (int k = 0; k < 4; k++) {
      const float v = s.p[static_cast<size_t>(i + k)];
      part[k][rkv::f32_bits(v) >> 23] += v;
    }
  for (; i < vocab; i++) part[0][rkv::f32_bits(s.p[static_cast<size_t>(i)]) >> 23] += s.p[static_cast<size_t>(i)];
  for (int e = 0; e < 256; e++) mass[e] = (part[0][e] + part[1][e]) + (part[2][e] + part[3][e]);
}

// The lowest exponent field whose tokens can be in the nucleus (the masses from the top reach
// keep there) and a lower bound of the count of tokens down to it; found is false where the
// masses given never reach keep (then min_exp is 1: every positive normal p).
struct ExponentCut {
  uint32_t min_exp = 1;
  double candidates = 0;  // a p of exponent field e is below 2^(e - 126)
  bool found = false;
};

ExponentCut exponent_cut(const double* mass, double keep) {
  ExponentCut c;
  double cum = 0;
  for (int e = 255; e >= 1; e--) {
    cum += mass[e];
    c.candidates += std::ldexp(mass[e], 126 - e);
    if (cum >= keep * (1 + 1e-6)) {
      c.min_exp = static_cast<uint32_t>(e);
      c.found = true;
      break;
    }
  }
  return c;
}

// The top-p draw: the nucleus is the shortest prefix of the tokens by decreasing p whose mass
// reaches keep. Only tokens whose binary exponent can reach into it are sorted, or, where they
// are many, none but a bucket or two (RadixWalk).
int32_t draw_nucleus(RowScratch& s, int32_t vocab, double total, float top_p, double u) {
  const double keep = static_cast<double>(top_p) * total;
  double mass[256];
  ExponentCut exp_cut;
#if defined(__x86_64__)
  // AVX-512: the masses of the top exponents only, 8 a pass without scatter, two passes at most;
  // where they reach keep, no walk or sort looks below them (the cut and the draw lie above)
  if (s.avx512) {
    using rkv::sampling::exponent_masses_avx512;
    using rkv::sampling::kExponentsAPass;
    std::fill(mass, mass + 256, 0.0);
    if (!exponent_masses_avx512(s.p.data(), vocab, 127, mass)) {  // no p above 1
      exp_cut = exponent_cut(mass, keep);
      if (!exp_cut.found) {
        exponent_masses_avx512(s.p.data(), vocab, 127 - kExponentsAPass, mass);
        exp_cut = exponent_cut(mass, keep);
      }
    }
  }
#endif
  if (!exp_cut.found) {
    exponent_masses(s, vocab, mass);
    exp_cut = exponent_cut(mass, keep);
  }
  uint32_t min_exp = exp_cut.min_exp;
  if (exp_cut.candidates > kSortMinCandidates) {
    RadixWalk walk(s, vocab, mass);
    const Crossing cut = walk.cross(keep, false);
    const Crossing draw = walk.cross(u * (cut.before + static_cast<double>(cut.p)), true);
    // past the cut only by rounding: the cut's token is the last of the nucleus
    return key_id(draw.key > cut.key ? cut.key : draw.key);
  }
  for (;;) {
    const int32_t n = nucleus_candidates(s, vocab, min_exp);
    double acc = 0;
    int32_t cut = 0;
    while (cut < n) {
      acc += s.p[static_cast<size_t>(key_id(s.order[static_cast<size_t>(cut)]))];
      cut++;
      if (acc >= keep) break;
    }
    if (acc < keep && min_exp > 0) {  // rounding left the candidates short: take every token
      min_exp = 0;
      continue;
    }
    const double target = u * acc;
    double run = 0;
    for (int32_t j = 0; j < cut; j++) {
      const int32_t id = key_id(s.order[static_cast<size_t>(j)]);
      run += s.p[static_cast<size_t>(id)];
      if (run > target) return id;
    }
    return key_id(s.order[static_cast<size_t>(cut - 1)]);
  }
}

int32_t sample_row(const rkv_sample_params& a, int64_t r, RowScratch& s) {
  const int32_t vocab = a.vocab;
  const float* l = a.logits + r * vocab;
  if (rkv::sampling::row_has_edits(a, r)) l = rkv::sampling::edit_row(a, r, l, s.edited.data());
  const float temperature = a.temperature[r];
  if (temperature == 0.f) return rkv::dense::argmax_row(l, vocab);
  const float max = rkv::dense::row_max(l, vocab);
  if (!std::isfinite(max)) return rkv::dense::argmax_row(l, vocab);  // no finite logit (or +inf: argmax)
  double total = probabilities(l, vocab, max, 1.f / temperature, s);
  // vLLM's order after the temperature: min_p, top_k, then top_p. The largest p is exp(0) = 1,
  // so min_p's threshold (min_p times the largest probability) is min_p itself.
  const float min_p = a.min_p ? a.min_p[r] : 0.f;
  if (min_p > 0.f) total = rkv::sampling::keep_at_least(s, vocab, min_p);
  const int32_t top_k = a.top_k ? a.top_k[r] : 0;
  if (top_k > 0 && top_k < vocab) {
    const float kth = rkv::sampling::kth_largest(s, vocab, top_k);
    if (kth > 0.f) total = rkv::sampling::keep_at_least(s, vocab, kth);
  }
  const double u = a.uniform[r];
  if (a.top_p[r] >= 1.f) return draw_in_order(s, vocab, u * total);
  return draw_nucleus(s, vocab, total, a.top_p[r], u);
}

// The calling thread's RowScratch, kept between calls. Built in every call, its vectors' pages
// would go back to the kernel as the call ends (glibc trims a freed heap top) and faulting them in
// again takes a large share of a top-p call. It is built again when the vocabulary changes or a
// cut first needs the nucleus order; a thread holds 12 bytes an id (1.5 MiB for Llama 3's 128256)
// until it ends.
// Measured: docs/measurements/kernel-constants.md#sampling-scratch-kept-between-calls
RowScratch& thread_scratch(int32_t vocab, bool cut, bool edits, bool avx512) {
  thread_local std::unique_ptr<RowScratch> s;
  const size_t v = static_cast<size_t>(vocab);
  if (!s || s->p.size() != v || (cut && s->order.size() < v) || (edits && s->edited.size() < v) ||
      s->avx512 != avx512) {
    s.reset();  // the old buffers go before the new ones are allocated
    s = std::make_unique<RowScratch>(vocab, cut, edits, avx512);
  }
  return *s;
}

}  // namespace

extern "C" {

RKV_API int rkv_sample(const rkv_sample_params* params) {
  RKV_CHECK_PTR(params);
  const rkv_sample_params& a = *params;
  const int64_t rows = a.rows;
  const int32_t vocab = a.vocab;
  RKV_CHECK(rows >= 0, "rkv_sample: rows must not be negative, got %lld", static_cast<long long>(rows));
  RKV_CHECK(vocab > 0, "rkv_sample: vocab must be positive, got %d", vocab);
  if (rows == 0) return RKV_OK;
  RKV_CHECK_PTR(a.logits);
  RKV_CHECK_PTR(a.temperature);
  RKV_CHECK_PTR(a.top_p);
  RKV_CHECK_PTR(a.uniform);
  RKV_CHECK_PTR(a.out);
  bool cut = false;    // some row cuts by top-p or top-k: the scratch needs the nucleus order
  bool edits = false;  // some row edits its logits: the scratch needs a row to edit
  for (int64_t r = 0; r < rows; r++) {
    RKV_CHECK(std::isfinite(a.temperature[r]) && a.temperature[r] >= 0.f,
              "rkv_sample: temperature[%lld] = %g is not finite and >= 0", static_cast<long long>(r), a.temperature[r]);
    RKV_CHECK(a.top_p[r] > 0.f && a.top_p[r] <= 1.f, "rkv_sample: top_p[%lld] = %g is outside (0, 1]",
              static_cast<long long>(r), a.top_p[r]);
    RKV_CHECK(a.uniform[r] >= 0.0 && a.uniform[r] < 1.0, "rkv_sample: uniform[%lld] = %g is outside [0, 1)",
              static_cast<long long>(r), a.uniform[r]);
    const int rc = rkv::sampling::check_row(a, r);
    if (rc != RKV_OK) return rc;
    cut = cut || (a.temperature[r] > 0.f && (a.top_p[r] < 1.f || (a.top_k && a.top_k[r] > 0)));
    edits = edits || rkv::sampling::row_has_edits(a, r);
  }
  const bool avx512 = rkv::cpu_isa() == rkv::kIsaAvx512;
  rkv::RegionScratch region;
  rkv::parallel_region(rows * vocab >= kParallelElems && rows > 1, [&] {
    RowScratch* s = nullptr;
    if (region.run([&] { s = &thread_scratch(vocab, cut, edits, avx512); })) {
#pragma omp for schedule(dynamic, 1)
      for (int64_t r = 0; r < rows; r++) a.out[r] = sample_row(a, r, *s);
    }
  });
  if (region.failed()) return rkv::set_error(RKV_ERR_OUT_OF_MEMORY, "rkv_sample: out of memory");
  return RKV_OK;
}

}  // extern "C"
