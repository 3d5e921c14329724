// Packed linear weights (radixkv.h, rkv_linear_pack): bf16 [n, k] weights rearranged per panel
// of 64 output rows into [k/2][64][2], oneDNN's BA16a64b2a for w^T. A decode GEMV then reads
// each panel as one sequence (row-major 4-row tiles read 4 strided runs per k-chunk, which this
// CPU's prefetchers follow badly), and oneDNN's bf16 matmul takes the same bytes for prefill
// without reordering them per call.
#pragma once

#include <stdint.h>

namespace rkv {
namespace dense {

constexpr int64_t kPackedPanelRows = 64;

// Whether rkv_linear_pack lays out w_dtype [n, k] weights on this CPU (bf16, n % 64 == 0,
// k % 16 == 0, AVX-512 with AVX512-BF16, built with oneDNN).
bool packed_supported(int32_t w_dtype, int64_t n, int64_t k);

// Row-major <-> packed, in place, one panel at a time (packed_supported shapes), on the calling
// thread. RKV_OK or RKV_ERR_OUT_OF_MEMORY (w untouched).
int pack_panels(uint16_t* w, int64_t n, int64_t k, bool to_packed);

// y[m, n] (+)= x[m, k] . w^T for packed bf16 w and 1 <= m <= 16 (packed_supported shapes).
// m < 8: exact f32 x (as gemv_small); m >= 8: x rounded to bf16 and vdpbf16ps (as gemv_small).
// RKV_OK or an error code (out of memory for the rounded x).
int gemv_packed(const float* x, const uint16_t* w, float* y, int64_t m, int64_t n, int64_t k, bool accumulate);

#if defined(RKV_HAVE_DNNL)
// oneDNN bf16 matmul, x rounded to bf16 (RNE); w row-major [n, k] or packed. RKV_OK, or
// RKV_ERR_UNSUPPORTED when oneDNN has no implementation (dense.cpp).
int matmul_bf16(const float* x, const uint16_t* w, bool packed, float* y, int64_t m, int64_t n, int64_t k,
                bool accumulate);
#endif

}  // namespace dense
}  // namespace rkv
