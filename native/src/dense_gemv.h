// Small-m dense layer (decode batches): y[m, n] (+)= x[m, k] . w[n, k]^T for m <= kGemvMaxRows,
// weights f32, bf16 or f16. Bound by streaming the weights once, so it reads them in row order
// (one range of rows per thread) and, where the m rows of x outgrow L1 (m >= 3, or m = 2 with
// long rows), in k-chunks whose rows of x stay in L1. bf16 weights with m >= 8 on a CPU with
// AVX512-BF16 multiply x rounded to bf16 (RNE) with vdpbf16ps, as the m > 16 GEMM path does.
#pragma once

#include <stdint.h>

#include "radixkv.h"
#include "rkv_isa.h"

namespace rkv {
namespace dense {

constexpr int64_t kGemvMaxRows = 16;

// __builtin_prefetch locality of the software prefetches in the weight stream (row-major tiles,
// the packed layout's passes, and rkv_bench_read_gemv, which mirrors them): 3, prefetcht0.
// prefetchnta halved the stream on an Intel Xeon and was level with T0 on Zen 5.
// Measured: docs/measurements/kernel-constants.md#weight-stream-prefetch-locality
constexpr int kWeightPrefetchLocality = 3;

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

// For GEMMs past kGemvMaxRows rows that run a decode kernel block by block: calls
// block(i0, rows) for rows [i0, i0 + rows) of m in blocks of 8 to 16 (equal but for one row),
// so that every block takes the same path (bf16 from 8 rows: x rounded for vdpbf16ps) and rows
// get the same arithmetic wherever they sit in the batch. Stops at the first status that is not 0.
template <class Block>
int for_gemv_blocks(int64_t m, Block&& block) {
  const int64_t blocks = (m + kGemvMaxRows - 1) / kGemvMaxRows;
  for (int64_t b = 0, i0 = 0; b < blocks; b++) {
    const int64_t rows = m / blocks + (b < m % blocks ? 1 : 0);
    if (int st = block(i0, rows); st != 0) return st;
    i0 += rows;
  }
  return 0;
}

// bf16 weights from this many rows of x on take the AVX512-BF16 dot products (dense_gemv.cpp's
// avx512bf16 tiles).
constexpr int64_t kDotMinRows = 8;

// Whether gemv_small multiplies w_dtype weights for m rows with AVX512-BF16 dot products
// (vdpbf16ps) on this CPU, rather than widening them to f32 for FMAs. Inline: libradixkv_bench's
// rkv_bench_read_gemv makes the same choice with its own copy of the CPU probe.
inline bool gemv_uses_bf16_dot(int32_t w_dtype, int64_t m) {
  return w_dtype == RKV_DTYPE_BF16 && m >= kDotMinRows && cpu_isa() == kIsaAvx512 && cpu_avx512_bf16();
}

}  // namespace dense
}  // namespace rkv
