// Small-m dense layer (decode batches): y[m, n] (+)= x[m, k] . w[n, k]^T for m <= kGemvMaxRows,
// weights f32, bf16 or f16. Bound by streaming the weights once, so it reads them in row order
// (one range of rows per thread) and, where the m rows of x outgrow L1 (m >= 3, or m = 2 with
// long rows), in k-chunks whose rows of x stay in L1. bf16 weights with m >= 8 on a CPU with
// AVX512-BF16 multiply x rounded to bf16 (RNE) with vdpbf16ps, as the m > 16 GEMM path does.
#pragma once

#include <stdint.h>

namespace rkv {
namespace dense {

constexpr int64_t kGemvMaxRows = 16;

// 1 <= m <= kGemvMaxRows, n, k >= 1; w_dtype is RKV_DTYPE_F32, _BF16 or _F16 (validated by
// the caller). Threads take contiguous ranges of weight rows.
void gemv_small(const float* x, const void* w, int32_t w_dtype, float* y, int64_t m, int64_t n, int64_t k,
                bool accumulate);

// Thread t's share [begin, end) of n items when nt threads take one contiguous range each: the
// ranges are equal multiples of `unit` (the last one shorter, or empty). The dense kernels split
// weight rows / output columns this way (gemv_small, the packed GEMV, the per-thread sgemm).
struct Share {
  int64_t begin, end;
};
inline Share thread_share(int64_t n, int64_t unit, int64_t nt, int64_t t) {
  const int64_t per = ((n + nt - 1) / nt + unit - 1) / unit * unit;
  const int64_t begin = t * per < n ? t * per : n;
  return {begin, begin + per < n ? begin + per : n};
}

// Whether gemv_small multiplies w_dtype weights for m rows with AVX512-BF16 dot products
// (vdpbf16ps) on this CPU, rather than widening them to f32 for FMAs.
bool gemv_uses_bf16_dot(int32_t w_dtype, int64_t m);

}  // namespace dense
}  // namespace rkv
