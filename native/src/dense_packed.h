// Packed linear weights (radixkv.h, rkv_linear_pack): [n, k] weights rearranged per panel of 64
// output rows, bf16 into [k/2][64][2] (oneDNN's BA16a64b2a for w^T), f32 and f16 into [k][64]
// (BA16a64b). A decode GEMV then reads each panel as one sequence (row-major 4-row tiles read 4
// strided runs per k-chunk, which this CPU's prefetchers follow badly); for prefill, oneDNN's bf16
// matmul takes the bf16 bytes as they are, and f32 / f16 panels are widened into dnnl_sgemm's B.
#pragma once

#include <stdint.h>

namespace rkv {
namespace dense {

constexpr int64_t kPackedPanelRows = 64;

// Whether rkv_linear_pack lays out w_dtype [n, k] weights on this CPU (n % 64 == 0, k % 16 == 0,
// AVX-512; bf16 also needs k % 32 == 0 and AVX512-BF16). The same with or without oneDNN, so
// packed bytes mean the same to every build.
bool packed_supported(int32_t w_dtype, int64_t n, int64_t k);

// Row-major <-> packed, in place, one panel at a time (packed_supported shapes), on the calling
// thread. RKV_OK or RKV_ERR_OUT_OF_MEMORY (w untouched).
int pack_panels(void* w, int32_t w_dtype, int64_t n, int64_t k, bool to_packed);

// y[m, n] (+)= x[m, k] . w^T for packed w and 1 <= m <= 16 (packed_supported shapes). Exact f32
// x, except bf16 from m = 8 on: x rounded to bf16 and vdpbf16ps (both as gemv_small). RKV_OK or
// an error code (out of memory for the interleaved x).
int gemv_packed(const float* x, const void* w, int32_t w_dtype, float* y, int64_t m, int64_t n, int64_t k,
                bool accumulate);

// y (+)= x . w^T for packed w and m > 16, without oneDNN (or where it has no kernel): gemv_packed
// over blocks of 8 to 16 rows of x (for_gemv_blocks), so bf16 rounds every row of x, as oneDNN's
// matmul and the GEMV's dot-product path do. A bf16 block of 16 rows is bound by
// vdpbf16ps (about 0.8 of that peak on Zen 5), so the weights are re-read per block at no loss.
int gemm_packed_blocks(const float* x, const void* w, int32_t w_dtype, float* y, int64_t m, int64_t n, int64_t k,
                       bool accumulate);

// Packed f32 / f16 panels [p0, p0 + np) of w [n, k], widened (exactly) into out as a row-major
// [k, np * 64] f32 matrix: w^T's columns 64 p0 .. 64 (p0 + np) - 1, for dnnl_sgemm.
void widen_packed_panels(const void* w, int32_t w_dtype, int64_t k, int64_t p0, int64_t np, float* out);

#if defined(RKV_HAVE_DNNL)
// oneDNN bf16 matmul, x rounded to bf16 (RNE); w row-major [n, k] or packed. RKV_OK, or
// RKV_ERR_UNSUPPORTED when oneDNN has no implementation (dense.cpp).
int matmul_bf16(const float* x, const uint16_t* w, bool packed, float* y, int64_t m, int64_t n, int64_t k,
                bool accumulate);
#endif

}  // namespace dense
}  // namespace rkv
