// Constrained decoding's token masks (rkv_apply_token_bitmask): a disallowed token's logit
// becomes -inf, so every sampler (greedy, temperature, top-p) sees only the allowed tokens, as
// xgrammar's apply_token_bitmask_inplace does. A row's mask is vocab/32 words; most words of a
// JSON state's mask are all-ones or all-zeros, so whole words are tested before single bits.
#include <cmath>
#include <cstdint>
#include <limits>

#include "rkv_common.h"

namespace {

void mask_row(float* l, int32_t vocab, const int32_t* bits) {
  const float neg = -std::numeric_limits<float>::infinity();
  const int32_t words = (vocab + 31) / 32;
  for (int32_t w = 0; w < words; w++) {
    const uint32_t m = static_cast<uint32_t>(bits[w]);
    const int32_t base = w * 32;
    const int32_t n = vocab - base < 32 ? vocab - base : 32;
    if (m == 0xFFFFFFFFu && n == 32) continue;
    if (m == 0) {
      for (int32_t i = 0; i < n; i++) l[base + i] = neg;
      continue;
    }
    for (int32_t i = 0; i < n; i++)
      if (!((m >> i) & 1u)) l[base + i] = neg;
  }
}

}  // namespace

extern "C" {

RKV_API int rkv_apply_token_bitmask(const rkv_token_bitmask_params* p) {
  RKV_CHECK_PTR(p);
  RKV_CHECK(p->rows >= 0, "rkv_apply_token_bitmask: rows must not be negative, got %lld",
            static_cast<long long>(p->rows));
  RKV_CHECK(p->vocab > 0, "rkv_apply_token_bitmask: vocab must be positive, got %d", p->vocab);
  RKV_CHECK(p->num_masked >= 0, "rkv_apply_token_bitmask: num_masked must not be negative, got %lld",
            static_cast<long long>(p->num_masked));
  RKV_CHECK(static_cast<int64_t>(p->bitmask_words) * 32 >= p->vocab,
            "rkv_apply_token_bitmask: %d bitmask words do not cover a vocabulary of %d", p->bitmask_words,
            p->vocab);
  if (p->num_masked == 0) return RKV_OK;
  RKV_CHECK_PTR(p->logits);
  RKV_CHECK_PTR(p->bitmask);
  if (p->row_indices == nullptr) {
    RKV_CHECK(p->num_masked <= p->rows, "rkv_apply_token_bitmask: %lld masks for %lld rows",
              static_cast<long long>(p->num_masked), static_cast<long long>(p->rows));
  } else {
    for (int64_t i = 0; i < p->num_masked; i++) {
      const int32_t r = p->row_indices[i];
      RKV_CHECK(r >= 0 && r < p->rows, "rkv_apply_token_bitmask: row_indices[%lld] = %d is outside [0, %lld)",
                static_cast<long long>(i), r, static_cast<long long>(p->rows));
      for (int64_t j = 0; j < i; j++)
        RKV_CHECK(p->row_indices[j] != r, "rkv_apply_token_bitmask: row %d is masked twice", r);
    }
  }
  for (int64_t i = 0; i < p->num_masked; i++) {
    const int64_t r = p->row_indices == nullptr ? i : p->row_indices[i];
    mask_row(p->logits + r * p->vocab, p->vocab, p->bitmask + i * p->bitmask_words);
  }
  return RKV_OK;
}

}  // extern "C"
