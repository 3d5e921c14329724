// Small-m GEMV on the GPU (gemv.cu): y[m, n] (+)= x[m, k] . w[n, k]^T for decode batches,
// f32 x and y, f32 or bf16 w, f32 accumulation, x used as is (not rounded to bf16: the CPU's
// small-m kernel, dense_gemv.cpp, does not round it either). Plain C++ with RKV_HD helpers:
// the launch geometry, the vector-width choice and the exact summation order live here so that
// the CPU test (gemv_math_test.cpp) and the GPU test replicate the kernel bit for bit.
//
// Summation order of one output y[r, j] (T = 32 * warps_per_row(m, n) threads own row j):
//   thread t (0 <= t < T) sums vectors v = t, t + T, t + 2T, ... (each vector is `vec`
//   consecutive elements, taken in order) into one f32 accumulator with fmaf(x, w, acc);
//   each warp adds its 32 lanes by the shuffle-down tree (offsets 16, 8, 4, 2, 1: lane i
//   takes lane i + off); the row's warps are added in order (warp 0 first); then
//   y = s, or y = y + s when accumulating.
#pragma once

#include <math.h>
#include <stdint.h>

#include "rkv_common.h"
#include "rkv_dtype.h"

namespace rkv_gemv {

// Largest m that takes the GEMV kernel; above it rkv_cuda_linear calls cuBLAS. The kernel
// runs on the CUDA cores: per weight element it does m FMAs (plus the widening) and reads m
// floats of x from L1. At m = 8 on an H100 (132 SMs x 128 FP32 FMA/clk) a 8192 x 3072 bf16
// layer needs ~7 us of FMA issue against ~17 us of HBM streaming, so it stays memory-bound;
// at m = 16 the two meet, while cuBLAS's tensor-core kernels stay at the memory roofline for
// any such m (and win outright from there on). 8 keeps a 2x margin.
constexpr int64_t kGemvMaxRows = 8;

constexpr int kWarp = 32;
constexpr int kWarpsPerBlock = 8;
constexpr int kBlockThreads = kWarp * kWarpsPerBlock;
constexpr int kVecBytes = 16;  // one 128-bit load per lane per weight row
// Weight rows per warp: each x vector loaded from L1 is reused against this many weight rows
// held in registers (m * rows floats of accumulators), which keeps the L1 traffic of x at
// most 2x the weight bytes for m up to 8.
RKV_HD constexpr int rows_per_warp(int m) { return m <= 2 ? 1 : (m <= 4 ? 2 : 4); }

// Each warp streams whole rows when that already makes kMinRowWarps warps (~16 per SM on 132
// SMs, each lane with 4 16-byte loads in flight: ~32 KB per SM, above the ~20 KB that HBM's
// bandwidth x latency needs); otherwise kSplitWarps warps split each row's k, so small layers
// (k/v projections, m = 8 on 3072 rows) still put enough loads in flight.
constexpr int64_t kMinRowWarps = 2048;
constexpr int kSplitWarps = 4;

// Warps that share one output row (depends on the shape only, so results are reproducible
// on any device).
RKV_HD int warps_per_row(int m, int64_t n) {
  const int64_t row_warps = (n + rows_per_warp(m) - 1) / rows_per_warp(m);
  return row_warps >= kMinRowWarps ? 1 : kSplitWarps;
}

// Output rows of one block of kBlockThreads threads.
RKV_HD int64_t rows_per_block(int m, int64_t n) {
  return (int64_t)(kWarpsPerBlock / warps_per_row(m, n)) * rows_per_warp(m);
}

// Elements per vector load: 16 / sizeof(w element) when every row of w and of x starts on a
// 16-byte boundary (both base addresses aligned and k a multiple of the vector), else 1
// (scalar loads, e.g. k = 4097 or a weight view at an odd offset).
inline int vec_elems(int32_t w_dtype, uintptr_t x_addr, uintptr_t w_addr, int64_t k) {
  const int size = rkv::dtype_size(w_dtype);
  if (size <= 0) return 1;
  const int vec = kVecBytes / size;
  const bool aligned = x_addr % kVecBytes == 0 && w_addr % kVecBytes == 0 && k % vec == 0 && k % 4 == 0;
  return aligned ? vec : 1;
}

// Weight element types and their exact widening to f32.
template <int DT>
struct Weight;
template <>
struct Weight<RKV_DTYPE_F32> {
  using T = float;
  static RKV_HD float widen(float v) { return v; }
};
template <>
struct Weight<RKV_DTYPE_BF16> {
  using T = uint16_t;
  static RKV_HD float widen(uint16_t v) { return rkv::bf16_to_float(v); }
};

// One element of a thread's dot product.
RKV_HD float fma_step(float acc, float x, float w) { return fmaf(x, w, acc); }
// Every other addition of the order above (lane pairs, warps, accumulate into y).
RKV_HD float combine(float a, float b) { return a + b; }

// The kernel's result for one output before accumulation, on the CPU, in its exact order:
// x points at row r of x, w at row j of w (k elements each), vec from vec_elems, wpr from
// warps_per_row(m, n). Host only (scratch on the stack of size kSplitWarps * kWarp).
template <int DT>
inline float reference_dot(const float* x, const typename Weight<DT>::T* w, int64_t k, int vec, int wpr) {
  const int threads = kWarp * wpr;
  const int64_t nv = k / vec;  // vec > 1 only when k % vec == 0
  float part[kWarp * kSplitWarps];
  for (int t = 0; t < threads; t++) {
    float acc = 0.f;
    for (int64_t v = t; v < nv; v += threads)
      for (int e = 0; e < vec; e++) acc = fma_step(acc, x[v * vec + e], Weight<DT>::widen(w[v * vec + e]));
    part[t] = acc;
  }
  float s = 0.f;
  for (int q = 0; q < wpr; q++) {
    float* p = part + q * kWarp;
    for (int off = kWarp / 2; off > 0; off /= 2)
      for (int i = 0; i < off; i++) p[i] = combine(p[i], p[i + off]);
    s = q == 0 ? p[0] : combine(s, p[0]);
  }
  return s;
}

// Longest chain of roundings behind one output (for an f32 error bound |err| <= chain * 2^-24
// * (sum |x w| + |y|)): a thread's fma chain, the lane tree, the warps, the accumulate.
inline int64_t rounding_chain(int64_t k, int vec, int wpr) {
  const int64_t threads = kWarp * wpr;
  const int64_t nv = k / vec;
  return (nv + threads - 1) / threads * vec + 5 + wpr + 1;
}

// Launches the kernel on `stream` (a cudaStream_t): 1 <= m <= kGemvMaxRows, n, k >= 1,
// w_dtype f32 or bf16, device pointers, arguments checked by the caller. No allocation, no
// synchronization. RKV_OK or RKV_ERR_CUDA (launch error, message set). Defined in gemv.cu.
int launch(const float* x, const void* w, int32_t w_dtype, float* y, int64_t m, int64_t n, int64_t k,
           bool accumulate, void* stream);

}  // namespace rkv_gemv
