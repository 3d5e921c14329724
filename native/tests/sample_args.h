// rkv_sample's temperature / top-p form, for the native tests that need only those (the other
// arguments of rkv_sample_params left NULL: neutral for every row).
#pragma once

#include <cstdint>

#include "radixkv.h"

inline int sample_basic(const float* logits, int64_t rows, int32_t vocab, const float* temperature,
                        const float* top_p, const double* uniform, int32_t* out) {
  rkv_sample_params p{};
  p.logits = logits;
  p.rows = rows;
  p.vocab = vocab;
  p.temperature = temperature;
  p.top_p = top_p;
  p.uniform = uniform;
  p.out = out;
  return rkv_sample(&p);
}
