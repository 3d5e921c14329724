// rkv_sample's row edits and probability filters (sampling.cpp): the checks of a row's optional
// arguments, the sparse edits of a copy of its logits (logit_bias, min_tokens' masked ids, the
// repetition / frequency / presence penalties), and the min_p and top_k cuts of its
// probabilities.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "radixkv.h"
#include "rkv_common.h"
#include "rkv_dtype.h"
#include "sampling_rows.h"

namespace rkv {
namespace sampling {

inline int64_t list_begin(const int64_t* indptr, int64_t r) { return indptr ? indptr[r] : 0; }
inline int64_t list_end(const int64_t* indptr, int64_t r) { return indptr ? indptr[r + 1] : 0; }

inline bool penalizes(const rkv_sample_params& a, int64_t r) {
  return (a.repetition_penalty && a.repetition_penalty[r] != 1.f) ||
         (a.presence_penalty && a.presence_penalty[r] != 0.f) || (a.frequency_penalty && a.frequency_penalty[r] != 0.f);
}

// Whether row r's logits change before the temperature (then they are edited on a copy).
inline bool row_has_edits(const rkv_sample_params& a, int64_t r) {
  return list_end(a.bias_indptr, r) > list_begin(a.bias_indptr, r) ||
         list_end(a.mask_indptr, r) > list_begin(a.mask_indptr, r) ||
         (a.counts_len && a.counts_len[r] > 0 && penalizes(a, r));
}

// RKV_OK, or RKV_ERR_INVALID_ARGUMENT with the message naming the first bad argument of row r.
inline int check_row(const rkv_sample_params& a, int64_t r) {
  const long long row = static_cast<long long>(r);
  if (a.min_p)
    RKV_CHECK(a.min_p[r] >= 0.f && a.min_p[r] <= 1.f, "rkv_sample: min_p[%lld] = %g is outside [0, 1]", row, a.min_p[r]);
  if (a.repetition_penalty)
    RKV_CHECK(std::isfinite(a.repetition_penalty[r]) && a.repetition_penalty[r] > 0.f,
              "rkv_sample: repetition_penalty[%lld] = %g is not finite and > 0", row, a.repetition_penalty[r]);
  if (a.presence_penalty)
    RKV_CHECK(std::isfinite(a.presence_penalty[r]), "rkv_sample: presence_penalty[%lld] is not finite", row);
  if (a.frequency_penalty)
    RKV_CHECK(std::isfinite(a.frequency_penalty[r]), "rkv_sample: frequency_penalty[%lld] is not finite", row);
  if (a.counts_len && a.counts_len[r] != 0) {
    RKV_CHECK(a.counts_len[r] > 0, "rkv_sample: counts_len[%lld] is negative", row);
    RKV_CHECK(a.counts && a.counts[r], "rkv_sample: counts[%lld] must not be NULL (counts_len %lld)", row,
              static_cast<long long>(a.counts_len[r]));
    for (int64_t j = 0; j < a.counts_len[r]; j++) {
      const rkv_token_count c = a.counts[r][j];
      RKV_CHECK(c.token >= 0 && c.token < a.vocab && c.output_count >= 0,
                "rkv_sample: counts[%lld][%lld] = (%d, %d) needs a token in [0, %d) and a count >= 0", row,
                static_cast<long long>(j), c.token, c.output_count, a.vocab);
    }
  }
  if (a.bias_indptr) {
    RKV_CHECK(a.bias_indptr[0] == 0 && a.bias_indptr[r] <= a.bias_indptr[r + 1],
              "rkv_sample: bias_indptr must start at 0 and not decrease (row %lld)", row);
    for (int64_t j = a.bias_indptr[r]; j < a.bias_indptr[r + 1]; j++) {
      RKV_CHECK(a.bias_ids && a.bias_values, "rkv_sample: bias_ids and bias_values must not be NULL");
      RKV_CHECK(a.bias_ids[j] >= 0 && a.bias_ids[j] < a.vocab && std::isfinite(a.bias_values[j]),
                "rkv_sample: bias %lld of row %lld (id %d, %g) needs an id in [0, %d) and a finite value",
                static_cast<long long>(j), row, a.bias_ids[j], a.bias_values[j], a.vocab);
    }
  }
  if (a.mask_indptr) {
    RKV_CHECK(a.mask_indptr[0] == 0 && a.mask_indptr[r] <= a.mask_indptr[r + 1],
              "rkv_sample: mask_indptr must start at 0 and not decrease (row %lld)", row);
    for (int64_t j = a.mask_indptr[r]; j < a.mask_indptr[r + 1]; j++) {
      RKV_CHECK(a.mask_ids, "rkv_sample: mask_ids must not be NULL");
      RKV_CHECK(a.mask_ids[j] >= 0 && a.mask_ids[j] < a.vocab, "rkv_sample: mask id %d of row %lld is outside [0, %d)",
                a.mask_ids[j], row, a.vocab);
    }
  }
  return RKV_OK;
}

// Row r's logits l copied to dst with its edits in vLLM's order: logit_bias, the masked ids,
// then the penalties (repetition, then frequency and presence); returns dst.
inline const float* edit_row(const rkv_sample_params& a, int64_t r, const float* l, float* dst) {
  std::memcpy(dst, l, sizeof(float) * static_cast<size_t>(a.vocab));
  for (int64_t j = list_begin(a.bias_indptr, r); j < list_end(a.bias_indptr, r); j++)
    dst[a.bias_ids[j]] += a.bias_values[j];
  for (int64_t j = list_begin(a.mask_indptr, r); j < list_end(a.mask_indptr, r); j++) dst[a.mask_ids[j]] = -INFINITY;
  if (a.counts_len && a.counts_len[r] > 0 && penalizes(a, r)) {
    const float rep = a.repetition_penalty ? a.repetition_penalty[r] : 1.f;
    const float pres = a.presence_penalty ? a.presence_penalty[r] : 0.f;
    const float freq = a.frequency_penalty ? a.frequency_penalty[r] : 0.f;
    for (int64_t j = 0; j < a.counts_len[r]; j++) {
      const rkv_token_count c = a.counts[r][j];
      float v = dst[c.token];
      if (rep != 1.f) v = v > 0.f ? v / rep : v * rep;
      if (c.output_count > 0) v -= freq * static_cast<float>(c.output_count) + pres;
      dst[c.token] = v;
    }
  }
  return dst;
}

// Zeroes every p below threshold and sums the rest again (chunk sums, total). Four interleaved
// sums, in a fixed order: the same bits on every CPU.
inline double keep_at_least(RowScratch& s, int32_t vocab, float threshold) {
  float* p = s.p.data();
  double total = 0;
  for (int32_t c0 = 0; c0 < vocab; c0 += kChunk) {
    const int32_t c1 = std::min(vocab, c0 + kChunk);
    double acc[4] = {0, 0, 0, 0};
    for (int32_t i = c0; i < c1; i++) {
      const float v = p[i] >= threshold ? p[i] : 0.f;
      p[i] = v;
      acc[(i - c0) & 3] += v;
    }
    const double sum = (acc[0] + acc[1]) + (acc[2] + acc[3]);
    s.chunk[static_cast<size_t>(c0 / kChunk)] = sum;
    total += sum;
  }
  return total;
}

// The k-th largest p (k >= 1), or 0 where at most k tokens have p > 0 (nothing to cut). Counts
// by exponent field find the exponents the top k reach down to; only the p of those exponents
// are selected among (s.order as scratch), not the whole row.
inline float kth_largest(RowScratch& s, int32_t vocab, int32_t k) {
  const float* p = s.p.data();
  int32_t count[256] = {};
  for (int32_t i = 0; i < vocab; i++) {
    const uint32_t b = rkv::f32_bits(p[i]);
    count[b >> 23] += b != 0;
  }
  int32_t above = 0;
  int e = 255;
  for (; e >= 0; e--) {
    if (above + count[e] >= k) break;
    above += count[e];
  }
  if (e < 0) return 0.f;  // fewer than k tokens with p > 0
  const uint32_t min_bits = static_cast<uint32_t>(e) << 23;
  uint64_t* bits = s.order.data();
  int32_t n = 0;
  for (int32_t i = 0; i < vocab; i++) {
    const uint32_t b = rkv::f32_bits(p[i]);
    bits[n] = b;
    n += b >= min_bits && b != 0;
  }
  // p >= 0: the bits order the values; the k-th largest is at index k - 1 of the descending order
  std::nth_element(bits, bits + (k - 1), bits + n, [](uint64_t x, uint64_t y) { return x > y; });
  return rkv::bits_f32(static_cast<uint32_t>(bits[k - 1]));
}

}  // namespace sampling
}  // namespace rkv
