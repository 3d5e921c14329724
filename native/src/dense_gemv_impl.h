// ISA-generic small-m dense kernel. Included once per instruction set inside its own
// namespace (see dense_gemv.cpp), after that namespace defines `struct I` (W lanes, loads that
// widen f32/bf16/f16 weights in registers, fma, hsum) under the matching `#pragma GCC target`.
// No include guard on purpose.
//
// Weight rows are consumed in order, NR at a time (adjacent rows: one linear stream per
// thread), each element loaded and widened once per call and reused against every row of x
// held in registers (MR <= 4 at a time; larger m re-reads the NR weight rows from L1 per
// block of 4 rows of x instead of from memory). U independent accumulator sets hide the FMA
// latency when MR * NR is small.

#include "dense_gemv_blocks.h"

// The MR x NR sums of a tile's accumulators (at most 16) by one transpose-reduction instead of
// MR x NR horizontal sums (they were ~20% of a k-chunk's instructions at m = 16). AVX-512 only
// (Isa: a dependent name, so only the I that has reduce16 and store instantiates it).
template <int MR, int NR, int U, typename Isa = I>
static inline void tile_sums16(const typename Isa::V (&a)[U][MR][NR], float (&s)[MR][NR]) {
  typename Isa::V t[16];
  for (int r = 0; r < MR; r++)
    for (int c = 0; c < NR; c++) {
      t[r * NR + c] = a[0][r][c];
      for (int u = 1; u < U; u++) t[r * NR + c] = Isa::add(t[r * NR + c], a[u][r][c]);
    }
  for (int i = MR * NR; i < 16; i++) t[i] = Isa::zero();
  alignas(64) float sums[16];
  Isa::store(sums, Isa::reduce16(t));
  for (int r = 0; r < MR; r++)
    for (int c = 0; c < NR; c++) s[r][c] = sums[r * NR + c];
}

// kb elements of MR rows of x (row stride ld) against kb elements of NR weight rows (stride ld).
// Prefetches each weight row pf elements past the element being loaded (pf = 0: none).
template <int DT, int MR, int NR, int U>
static inline void tile(const float* x, int64_t ld, int64_t kb, const typename Elem<DT>::T* w, int64_t pf, float* y,
                        int64_t n, bool acc) {
  using V = typename I::V;
  constexpr int L = I::W;
  constexpr int kLineStep = 64 / (int)sizeof(typename Elem<DT>::T);  // elements per cache line
  V a[U][MR][NR];
  for (int u = 0; u < U; u++)
    for (int r = 0; r < MR; r++)
      for (int c = 0; c < NR; c++) a[u][r][c] = I::zero();
  // steps per prefetch: a step narrower than 32 bytes of a row (bf16/f16 with U = 1) is
  // unrolled twice under one prefetch per row (4 per line were issued, each a load-port uop)
  constexpr int P = U * L * (int)sizeof(typename Elem<DT>::T) < 32 ? 2 : 1;
  int64_t kk = 0;
  for (; kk + P * U * L <= kb; kk += P * U * L) {
    // software prefetch in every weight row (the stream prefetcher stops at 4 KiB pages; this
    // keeps the misses in flight across them)
    if (pf)
      for (int c = 0; c < NR; c++)
        for (int e = 0; e < P * U * L; e += kLineStep)
          __builtin_prefetch(w + c * ld + kk + e + pf, 0, kWeightPrefetchLocality);
    for (int p = 0; p < P; p++)
      for (int u = 0; u < U; u++) {
        const int64_t ko = kk + (p * U + u) * L;
        V wv[NR];
        for (int c = 0; c < NR; c++) wv[c] = I::template load<DT>(w + c * ld + ko);
        for (int r = 0; r < MR; r++) {
          V xv = I::loadx(x + r * ld + ko);
          for (int c = 0; c < NR; c++) a[u][r][c] = I::fma(xv, wv[c], a[u][r][c]);
        }
      }
  }
  for (; kk + L <= kb; kk += L) {
    V wv[NR];
    for (int c = 0; c < NR; c++) wv[c] = I::template load<DT>(w + c * ld + kk);
    for (int r = 0; r < MR; r++) {
      V xv = I::loadx(x + r * ld + kk);
      for (int c = 0; c < NR; c++) a[0][r][c] = I::fma(xv, wv[c], a[0][r][c]);
    }
  }
  float s[MR][NR];
  if constexpr (I::W == 16 && MR * NR > 4 && MR * NR <= 16) {
    tile_sums16<MR, NR, U>(a, s);
  } else {
    for (int r = 0; r < MR; r++)
      for (int c = 0; c < NR; c++) {
        V t = a[0][r][c];
        for (int u = 1; u < U; u++) t = I::add(t, a[u][r][c]);
        s[r][c] = I::hsum(t);
      }
  }
  for (; kk < kb; kk++)
    for (int c = 0; c < NR; c++) {
      const float wf = Elem<DT>::to_float(w[c * ld + kk]);
      for (int r = 0; r < MR; r++) s[r][c] += x[r * ld + kk] * wf;
    }
  for (int r = 0; r < MR; r++)
    for (int c = 0; c < NR; c++) y[r * n + c] = acc ? y[r * n + c] + s[r][c] : s[r][c];
}

// Rows of x in blocks of at most 4 against NR weight rows starting at w (output column j), over
// kb elements from the start of the chunk. Only the first block of x prefetches (pf); the
// others find the NR weight rows in L1.
template <int DT, int NR>
static inline void column_block(const float* x, int64_t m, int64_t ld, int64_t kb, const typename Elem<DT>::T* w,
                                int64_t pf, float* y, int64_t n, bool acc) {
  for_x_blocks(m, [&](auto mr, int64_t i0) {
    // U accumulator sets so that MR x NR x U covers the FMA latency for 1- and 2-row blocks
    constexpr int MR = mr.value, U = MR >= 3 ? 1 : MR == 2 ? 2 : 4;
    tile<DT, MR, NR, U>(x + i0 * ld, ld, kb, w, i0 == 0 ? pf : 0, y + i0 * n, n, acc);
  });
}

// Output columns [j0, j1) (weight rows j0..j1-1) for all m rows.
//
// m <= 2 with f32 weights: kNR-row tiles over all of k, x loaded once per tile, kNR linear
// streams left to the hardware prefetchers (a software prefetch cost 3-6%). Zen 5, 1 thread,
// m = 1, k = 14336 / 3072: 1.03-1.05 / 0.95-0.99 of read against 0.91-0.92 / 0.94-0.96 one row
// at a time; m = 2: 0.90-0.91 / 0.78-0.82 against 0.76 / 0.54-0.74 (one row at a time, each
// 64-byte load of an x that is not 64-byte aligned touched two lines, twice per weight line;
// AVX2 alike). bf16 and f16 tiles ran at 0.64-0.73 (their x loads are two lines per weight line).
//
// m = 1 (bf16, f16), and m = 2 with x in three quarters of L1: one row (or two) of weights at a
// time over all of k, prefetched kPrefetchElems ahead in the row: one linear stream. For m = 1
// a row is core-bound once x outgrows L1 (Zen 5, bf16: 40.5 GB/s up to k = 4096, 33 at 8192,
// 26 at 14336 on one core: every weight line needs two lines of x from L2), so past 3/4 of L1
// rows go two at a time, x loaded once per pair, each row prefetched kLongRowPrefetchElems
// ahead: k = 14336, 1 / 2 threads 1.12x / 1.10-1.12x, k = 9728 1.02-1.03x / 1.04-1.05x (bf16,
// f16, AVX-512 and AVX2 alike). Chunks of x (as below) won 1.1x on one thread but broke the
// stream into runs, which cost 7-10% on two when memory was the limit, and Qwen3-4B decoded
// 6-9% slower with them; three rows a pair level, four 0.58-0.60 of read.
//
// Otherwise (m = 2 with a larger x, m >= 3) x does not stay in L1 (48 KiB at m = 4, k = 3072: the
// whole L1 of a Zen 5 or Skylake core), and every weight tile would re-read all of it from L2; those
// x loads crowd out the weight stream and memory time stops overlapping compute. So k is taken in
// chunks of x that fit in L1 beside the weights in flight (x_chunk_bytes): each pass over the range
// streams one chunk of every weight row (each weight byte is still read once from memory), partial
// sums go through y, and each NR-row tile prefetches the same chunk of the next one (the chunks of a
// pass are kb elements every k, which the hardware's stream prefetchers do not follow).
// Measured: docs/measurements/kernel-constants.md#small-m-gemv-k-in-chunks-of-x
template <int DT>
static void gemv_range(const float* x, const void* wv, float* y, int64_t m, int64_t n, int64_t k, int64_t j0,
                       int64_t j1, bool acc) {
  const auto* w = static_cast<const typename Elem<DT>::T*>(wv);
  int64_t j = j0;
  if (DT == RKV_DTYPE_F32 && m <= 2) {
    for (; j + I::kNR <= j1; j += I::kNR) column_block<DT, I::kNR>(x, m, k, k, w + j * k, 0, y + j, n, acc);
    for (; j < j1; j++) column_block<DT, 1>(x, m, k, k, w + j * k, 0, y + j, n, acc);
    return;
  }
  if (m == 1 && k * (int64_t)sizeof(float) > l1_bytes() * 3 / 4) {
    for (; j + 2 <= j1; j += 2) tile<DT, 1, 2, 4>(x, k, k, w + j * k, kLongRowPrefetchElems, y + j, n, acc);
    for (; j < j1; j++) tile<DT, 1, 1, 4>(x, k, k, w + j * k, kPrefetchElems<DT>, y + j, n, acc);
    return;
  }
  if (m == 1 || (m == 2 && 2 * k * (int64_t)sizeof(float) <= l1_bytes() * 3 / 4)) {
    for (; j < j1; j++) {
      if (m == 1) tile<DT, 1, 1, 4>(x, k, k, w + j * k, kPrefetchElems<DT>, y + j, n, acc);
      else tile<DT, 2, 1, 2>(x, k, k, w + j * k, kPrefetchElems<DT>, y + j, n, acc);
    }
    return;
  }
  const int64_t per_row = x_chunk_bytes(m) / (m * (int64_t)sizeof(float)) / 64 * 64;
  const int64_t kc = per_row < 128 ? 128 : per_row;
  for (int64_t k0 = 0; k0 < k; k0 += kc) {
    const int64_t kb = k - k0 < kc ? k - k0 : kc;
    const bool acc_chunk = acc || k0 > 0;
    const float* xc = x + k0;
    const auto* wc = w + k0;
    for (j = j0; j + I::kNR <= j1; j += I::kNR)
      column_block<DT, I::kNR>(xc, m, k, kb, wc + j * k, I::kNR * k, y + j, n, acc_chunk);
    for (; j < j1; j++) column_block<DT, 1>(xc, m, k, kb, wc + j * k, k, y + j, n, acc_chunk);
  }
}
