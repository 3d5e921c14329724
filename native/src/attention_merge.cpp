// CPU merge_state (FlashInfer cascade): combines two partial attention states.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <new>
#include <vector>

#include "attention_cpu.h"
#include "rkv_parallel.h"
#include "rkv_softmax.h"

using namespace rkv;
using namespace rkv::attn;

extern "C" {

RKV_API int rkv_merge_state(const float* v_a, const float* s_a, const float* v_b, const float* s_b, float* v_out,
                            float* s_out, int64_t num_tokens, int32_t num_heads, int32_t head_dim) {
  RKV_CHECK(num_tokens >= 0, "num_tokens must be >= 0, got %lld", (long long)num_tokens);
  RKV_CHECK(num_heads > 0 && head_dim > 0, "num_heads (%d) and head_dim (%d) must be positive", num_heads, head_dim);
  if (num_tokens == 0) return RKV_OK;
  RKV_CHECK_PTR(v_a);
  RKV_CHECK_PTR(s_a);
  RKV_CHECK_PTR(v_b);
  RKV_CHECK_PTR(s_b);
  RKV_CHECK_PTR(v_out);
  RKV_CHECK_PTR(s_out);
  const int64_t rows = num_tokens * num_heads;
  const int hd = head_dim;
  rkv::parallel_for_n(rows, threads_for(rows / 64 + 1), [&](int64_t r) {
    MergeWeights w = merge_weights(s_a[r], s_b[r]);
    const float* a = v_a + r * hd;
    const float* b = v_b + r * hd;
    float* o = v_out + r * hd;
    if (w.lse == -INFINITY) {
      for (int d = 0; d < hd; d++) o[d] = 0.f;  // both empty: +0, never -0 or NaN
    } else {
      for (int d = 0; d < hd; d++) o[d] = w.wa * a[d] + w.wb * b[d];
    }
    s_out[r] = w.lse;
  });
  return RKV_OK;
}

}  // extern "C"
