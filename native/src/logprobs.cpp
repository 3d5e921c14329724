// Log-probabilities of logits rows (rkv_logprobs): the log-softmax of the raw logits at a target
// token and the top-k tokens of each row, for the server's `logprobs` / `prompt_logprobs`. One
// pass finds the row's maximum; a second sums exp(l - max) in double (exp_approx, 16 AVX-512 or
// 8 AVX2 lanes) and keeps the top k at once: a lane enters the scalar top-k insertion only when
// it beats the k-th value so far, which after the first few blocks is almost never.
#include <cmath>
#include <cstdint>
#include <limits>

#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
// GCC 12's AVX-512 headers build many intrinsics on a self-initialized _mm512_undefined_*
// operand, which -W(maybe-)uninitialized reports once inlined (GCC bug 105593, fixed in 13).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

#include "rkv_argmax.h"
#include "rkv_common.h"
#include "rkv_dense_math.h"
#include "rkv_exp_avx2.h"
#include "rkv_exp_avx512.h"
#include "rkv_isa.h"
#include "rkv_parallel.h"

namespace {

constexpr int64_t kParallelElems = int64_t{1} << 15;
constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// The k largest values seen so far, in order (value down, id up). Values arrive in id order, so
// a value equal to the k-th loses (its id is higher): only a strictly larger one enters.
struct TopK {
  int32_t k = 0;
  int32_t n = 0;
  float v[RKV_LOGPROBS_MAX_TOP_K];
  int32_t id[RKV_LOGPROBS_MAX_TOP_K];

  // The value a candidate must exceed once the list is full (-inf with n < k: everything enters).
  bool full() const { return n == k; }
  float kth() const { return v[k - 1]; }

  void offer(float x, int32_t i) {
    if (std::isnan(x)) x = -INFINITY;
    if (n == k && !(x > v[k - 1])) return;
    int32_t j = n < k ? n++ : k - 1;
    while (j > 0 && x > v[j - 1]) {
      v[j] = v[j - 1];
      id[j] = id[j - 1];
      j--;
    }
    v[j] = x;
    id[j] = i;
  }
};

// Sum of exp_approx(l[i] - max) over the non-NaN logits, in double; offers every logit that can
// enter the top k (none when top.k == 0).
double sum_exp_scalar(const float* l, int32_t vocab, float max, TopK& top, int32_t from, double sum) {
  for (int32_t i = from; i < vocab; i++) {
    if (!std::isnan(l[i])) sum += rkv::dense::exp_approx(l[i] - max);
    if (top.k > 0) top.offer(l[i], i);
  }
  return sum;
}

#if defined(RKV_EXP_AVX512)
RKV_EXP_AVX512_TARGET double sum_exp_avx512(const float* l, int32_t vocab, float max, TopK& top) {
  __m512d acc0 = _mm512_setzero_pd(), acc1 = _mm512_setzero_pd();
  const __m512 vmax = _mm512_set1_ps(max);
  int32_t i = 0;
  for (; i + 16 <= vocab; i += 16) {
    const __m512 v = _mm512_loadu_ps(l + i);
    const __mmask16 num = _mm512_cmp_ps_mask(v, v, _CMP_ORD_Q);
    const __m512 e = _mm512_maskz_mov_ps(num, rkv::dense::exp_approx16(_mm512_sub_ps(v, vmax)));
    acc0 = _mm512_add_pd(acc0, _mm512_cvtps_pd(_mm512_castps512_ps256(e)));
    acc1 = _mm512_add_pd(acc1, _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(e), 1))));
    if (top.k > 0) {
      unsigned m = top.full() ? _mm512_cmp_ps_mask(v, _mm512_set1_ps(top.kth()), _CMP_GT_OQ) : 0xffffu;
      while (m != 0) {
        const int b = __builtin_ctz(m);
        top.offer(l[i + b], i + b);
        m &= m - 1;
        if (top.full()) m &= _mm512_cmp_ps_mask(v, _mm512_set1_ps(top.kth()), _CMP_GT_OQ);
      }
    }
  }
  const double sum = _mm512_reduce_add_pd(_mm512_add_pd(acc0, acc1));
  return sum_exp_scalar(l, vocab, max, top, i, sum);
}
#endif

#if defined(RKV_EXP_AVX2)
double sum_exp_avx2(const float* l, int32_t vocab, float max, TopK& top) {
  __m256d acc0 = _mm256_setzero_pd(), acc1 = _mm256_setzero_pd();
  const __m256 vmax = _mm256_set1_ps(max);
  int32_t i = 0;
  for (; i + 8 <= vocab; i += 8) {
    const __m256 v = _mm256_loadu_ps(l + i);
    __m256 e = rkv::dense::exp_approx8(_mm256_sub_ps(v, vmax));
    e = _mm256_blendv_ps(e, _mm256_setzero_ps(), _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    acc0 = _mm256_add_pd(acc0, _mm256_cvtps_pd(_mm256_castps256_ps128(e)));
    acc1 = _mm256_add_pd(acc1, _mm256_cvtps_pd(_mm256_extractf128_ps(e, 1)));
    if (top.k > 0) {
      unsigned m = top.full()
                       ? static_cast<unsigned>(_mm256_movemask_ps(_mm256_cmp_ps(v, _mm256_set1_ps(top.kth()), _CMP_GT_OQ)))
                       : 0xffu;
      while (m != 0) {
        const int b = __builtin_ctz(m);
        top.offer(l[i + b], i + b);
        m &= m - 1;
        if (top.full())
          m &= static_cast<unsigned>(_mm256_movemask_ps(_mm256_cmp_ps(v, _mm256_set1_ps(top.kth()), _CMP_GT_OQ)));
      }
    }
  }
  alignas(32) double lanes[4];
  _mm256_store_pd(lanes, _mm256_add_pd(acc0, acc1));
  const double sum = (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
  return sum_exp_scalar(l, vocab, max, top, i, sum);
}
#endif

double sum_exp(const float* l, int32_t vocab, float max, TopK& top, rkv::CpuIsa isa) {
#if defined(RKV_EXP_AVX512)
  if (isa == rkv::kIsaAvx512) return sum_exp_avx512(l, vocab, max, top);
#endif
#if defined(RKV_EXP_AVX2)
  if (isa >= rkv::kIsaAvx2) return sum_exp_avx2(l, vocab, max, top);
#endif
  (void)isa;
  return sum_exp_scalar(l, vocab, max, top, 0, 0.0);
}

// A row whose maximum is not finite: -inf (nothing finite) gives -inf everywhere; +inf gives the
// c tokens at +inf log(1/c) each and the rest -inf (the limit of the softmax).
void degenerate_row(const float* l, int32_t vocab, float max, int32_t target, TopK& top, double* target_lp,
                    double* top_lp) {
  int64_t at_max = 0;
  if (max == INFINITY)
    for (int32_t i = 0; i < vocab; i++) at_max += l[i] == INFINITY;
  const double share = at_max > 0 ? -std::log(static_cast<double>(at_max)) : kNegInf;
  auto lp = [&](float x) { return at_max > 0 && x == INFINITY ? share : kNegInf; };
  // the top k by log-probability (the +inf tokens, then every other tied at -inf, by id)
  top.n = 0;
  for (int32_t i = 0; i < vocab && top.n < top.k; i++)
    if (lp(l[i]) != kNegInf) top.id[top.n++] = i;
  for (int32_t i = 0; i < vocab && top.n < top.k; i++)
    if (lp(l[i]) == kNegInf) top.id[top.n++] = i;
  *target_lp = lp(l[target]);
  for (int32_t j = 0; j < top.k; j++) top_lp[j] = lp(l[top.id[j]]);
}

void logprobs_row(const float* l, int32_t vocab, int32_t target, int32_t k, rkv::CpuIsa isa, double* target_lp,
                  int32_t* top_ids, double* top_lp) {
  TopK top;
  top.k = k;
  const float max = rkv::dense::row_max(l, vocab);
  double scratch[RKV_LOGPROBS_MAX_TOP_K];
  double* lps = k > 0 ? top_lp : scratch;
  if (!std::isfinite(max)) {
    degenerate_row(l, vocab, max, target, top, target_lp, lps);
  } else {
    const double lse = static_cast<double>(max) + std::log(sum_exp(l, vocab, max, top, isa));
    auto lp = [&](float x) { return std::isnan(x) ? kNegInf : static_cast<double>(x) - lse; };
    *target_lp = lp(l[target]);
    for (int32_t j = 0; j < k; j++) lps[j] = lp(l[top.id[j]]);
  }
  for (int32_t j = 0; j < k; j++) top_ids[j] = top.id[j];
}

}  // namespace

extern "C" {

RKV_API int rkv_logprobs(const rkv_logprobs_params* p) {
  RKV_CHECK_PTR(p);
  RKV_CHECK(p->rows >= 0, "rkv_logprobs: rows must not be negative, got %lld", static_cast<long long>(p->rows));
  RKV_CHECK(p->vocab > 0, "rkv_logprobs: vocab must be positive, got %d", p->vocab);
  RKV_CHECK(p->num_logit_rows >= 0, "rkv_logprobs: num_logit_rows must not be negative, got %lld",
            static_cast<long long>(p->num_logit_rows));
  RKV_CHECK(p->top_k >= 0 && p->top_k <= RKV_LOGPROBS_MAX_TOP_K && p->top_k <= p->vocab,
            "rkv_logprobs: top_k = %d is outside [0, min(%d, vocab %d)]", p->top_k, RKV_LOGPROBS_MAX_TOP_K, p->vocab);
  if (p->rows == 0) return RKV_OK;
  RKV_CHECK(p->logits != nullptr, "rkv_logprobs: logits must not be NULL");
  RKV_CHECK(p->target != nullptr, "rkv_logprobs: target must not be NULL");
  RKV_CHECK(p->target_logprob != nullptr, "rkv_logprobs: target_logprob must not be NULL");
  RKV_CHECK(p->top_k == 0 || (p->top_ids != nullptr && p->top_logprobs != nullptr),
            "rkv_logprobs: top_ids and top_logprobs must not be NULL with top_k = %d", p->top_k);
  for (int64_t r = 0; r < p->rows; r++) {
    const int64_t row = p->row_index != nullptr ? p->row_index[r] : r;
    RKV_CHECK(row >= 0 && row < p->num_logit_rows, "rkv_logprobs: row %lld of row %lld is outside [0, %lld)",
              static_cast<long long>(row), static_cast<long long>(r), static_cast<long long>(p->num_logit_rows));
    RKV_CHECK(p->target[r] >= 0 && p->target[r] < p->vocab,
              "rkv_logprobs: target[%lld] = %d is outside the vocabulary [0, %d)", static_cast<long long>(r),
              p->target[r], p->vocab);
  }
  const rkv::CpuIsa isa = rkv::cpu_isa();
  const int64_t rows = p->rows;
  const int32_t vocab = p->vocab, k = p->top_k;
  rkv::parallel_region(rows * vocab >= kParallelElems && rows > 1, [&] {
#pragma omp for schedule(dynamic, 1)
    for (int64_t r = 0; r < rows; r++) {
      const int64_t row = p->row_index != nullptr ? p->row_index[r] : r;
      logprobs_row(p->logits + row * vocab, vocab, p->target[r], k, isa, p->target_logprob + r,
                   k > 0 ? p->top_ids + r * k : nullptr, k > 0 ? p->top_logprobs + r * k : nullptr);
    }
  });
  return RKV_OK;
}

}  // extern "C"
