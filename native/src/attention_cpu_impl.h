// ISA-generic CPU attention core. Included once per instruction set inside its own namespace
// (see attention_cpu.cpp), after that namespace defines `struct I` (the vector ISA: W lanes,
// loads that convert cache dtypes in registers, exp2, a transpose-reduction) under the
// matching `#pragma GCC target`. No include guard on purpose.
//
// One call of attend_rows() processes R query rows that share one KV head (the G query heads
// of a GQA group for decode; q_tile x G rows for prefill) over a token range of one sequence:
//   scores  S[R][BT] = Q . K^T for a block of BT tokens (register tiles of GB rows x TB tokens,
//                      each K vector converted once per GB rows, one transpose-reduction per
//                      W dot products),
//   softmax per row, online (base-2 max/sum), masked by a per-row visible range [lo, hi),
//   values  O[R][hd] += P . V (register tiles of RB rows x CB head_dim chunks, each V vector
//                      converted once per RB rows).
// Each K/V row is therefore read once per call, for all R rows: GQA groups read K/V once per
// KV head. Rows of the next block are prefetched while the current one is computed.

struct Rows {
  const uint8_t* k[kBlock];
  const uint8_t* v[kBlock];
};

// Fills the K/V row pointers of tokens [t0, t0 + n) of one sequence and KV head; entries
// n..kBlock-1 repeat the first row (valid memory; their scores are masked).
static inline void fill_rows(const SeqView& s, int64_t t0, int n, Rows& r) {
  // one division per block, then walk pages incrementally (64-bit divisions per token would
  // cost more than the arithmetic on the row)
  int64_t pi = t0 / s.page_size;
  int64_t off = t0 - pi * s.page_size;
  const int64_t row_stride = (int64_t)s.num_kv_heads * s.row_bytes;
  const int64_t head_off = (int64_t)s.kv_head * s.row_bytes;
  int64_t base = (int64_t)s.pages[pi] * s.page_size * row_stride + head_off;
  for (int i = 0; i < n; i++) {
    int64_t o = base + off * row_stride;
    r.k[i] = s.k_base + o;
    r.v[i] = s.v_base + o;
    if (++off == s.page_size && i + 1 < n) {
      off = 0;
      base = (int64_t)s.pages[++pi] * s.page_size * row_stride + head_off;
    }
  }
  for (int i = n; i < kBlock; i++) {
    r.k[i] = r.k[0];
    r.v[i] = r.v[0];
  }
}

static inline void prefetch_rows(const Rows& r, int n, int row_bytes, int64_t hoff) {
  for (int i = 0; i < n; i++) {
    for (int b = 0; b < row_bytes; b += 64) {
      __builtin_prefetch(r.k[i] + hoff + b, 0, 3);
      __builtin_prefetch(r.v[i] + hoff + b, 0, 3);
    }
  }
}

// The K bytes of the next block as contiguous ranges (rows that follow each other in a page
// merge: for token-major decode a block is one range per page). V lies at the same offsets
// from v_base, so each K line prefetched is matched by its V line.
struct PrefetchRanges {
  uintptr_t start[kBlock];
  uintptr_t end[kBlock];
  intptr_t v_delta = 0;  // v address - k address (the same for every row)
  int n = 0;

  void reset(const Rows& r, int rows, int row_bytes, int64_t head_off) {
    n = 0;
    if (rows <= 0) return;
    v_delta = (intptr_t)((uintptr_t)r.v[0] - (uintptr_t)r.k[0]);
    for (int i = 0; i < rows; i++) {
      const uintptr_t a = (uintptr_t)(r.k[i] + head_off);
      if (n > 0 && end[n - 1] == a) {
        end[n - 1] = a + row_bytes;
      } else {
        start[n] = a;
        end[n] = a + row_bytes;
        n++;
      }
    }
  }
  int64_t lines() const {
    int64_t total = 0;
    for (int i = 0; i < n; i++) total += (int64_t)(end[i] - start[i] + 63) / 64;
    return total;
  }
};

// Spreads the prefetches of the next block over the value loop of the current one (a few
// lines per token step), so that memory stays busy while computing instead of receiving one
// burst per block that stalls on the line-fill buffers. A small cursor over PrefetchRanges:
// value tiles copy it into registers for their token loop. kLocality: __builtin_prefetch's (2:
// prefetcht1, into L2; 3: prefetcht0, into L1).
template <int kLocality>
struct PrefetcherT {
  const PrefetchRanges* ranges = nullptr;
  uintptr_t cur = 0, end = 0;
  intptr_t v_delta = 0;
  int next = 0;           // next range to enter
  uint32_t rate_q16 = 0;  // line pairs per step, 16.16 fixed point
  uint32_t credit = 0;    // fraction of a line pair owed (16.16)

  void reset(const PrefetchRanges& r) {
    ranges = &r;
    next = 0;
    cur = end = 0;
    v_delta = r.v_delta;
  }
  inline void issue(int64_t count) {
    for (; count > 0; count--) {
      if (cur >= end) {
        if (ranges == nullptr || next >= ranges->n) return;
        cur = ranges->start[next];
        end = ranges->end[next];
        next++;
      }
      __builtin_prefetch(reinterpret_cast<const void*>(cur), 0, kLocality);
      __builtin_prefetch(reinterpret_cast<const void*>(cur + v_delta), 0, kLocality);  // its V line
      cur += 64;
    }
  }
  // `count` steps' share of the lines: an even rate over the block (bursts faster than memory
  // fill the miss buffers, and a prefetch that finds them full stalls the core's compute)
  inline void step(int count) {
    credit += rate_q16 * (uint32_t)count;
    const uint32_t k = credit >> 16;
    credit &= 0xFFFFu;
    if (k) issue(k);
  }
  void finish() { issue(int64_t(1) << 40); }
  // the rate at which the pending lines are issued over `steps` steps
  void spread(int64_t steps) {
    const int64_t pending = ranges ? ranges->lines() : 0;
    int64_t r = steps > 0 ? ((pending << 16) + steps - 1) / steps : 0;
    rate_q16 = (uint32_t)(r > (int64_t)1 << 24 ? (int64_t)1 << 24 : r);
    credit = 0;
  }
};
// attend_rows_t's (prefill; head by head): into L2.
using Prefetcher = PrefetcherT<2>;
// The head-wise token-major decode's (fp8): into L1. Zen 5, 32768 tokens, calls/s, L2 -> L1, 1
// thread: e4m3 by lookup, pages in order 59-60 -> 58-62, shuffled 43-44 -> 45-46; e5m2 58-59 ->
// 62-63; e4m3 on the base AVX-512 path 53-56 -> 55-57; 2 threads, e4m3 by lookup 116-119 -> 123-124.
using HeadwisePrefetcher = PrefetcherT<3>;

// The grouped decode loop's prefetcher (grouped_block): one contiguous range, `per` lines
// (prefetcht0) per step: per head in the score pass, per token inside the value tiles. Its state
// stays in registers through a tile's token loop (a Prefetcher copied into each tile spilled).
// T0, not NTA: on a 16-core Intel Xeon (AVX512-FP16, AMX) prefetchnta ran this loop 3.5x slower
// in cache and 2x slower from memory (f32, 1 thread 6.0 -> 12.1 GB/s, about 0.83 of that core's
// read; 2 threads 11.7 -> 22.7); on Zen 5 the two hints are level (f32 / bf16 / f16, 1 and 2
// threads, pages in order or not).
struct LineCursor {
  uintptr_t cur = 0, end = 0;
  int per = 0;
  inline void step(int count) {
    for (int i = count * per; i > 0 && cur < end; i--, cur += 64) __builtin_prefetch(reinterpret_cast<const void*>(cur), 0, 3);
  }
};

// Whether the K or V bytes of the ranges hold an e4m3 NaN code (scanned a page run at a time).
static inline bool ranges_have_e4m3_nan(const PrefetchRanges& r) {
  for (int i = 0; i < r.n; i++) {
    const int64_t bytes = (int64_t)(r.end[i] - r.start[i]);
    if (I::has_e4m3_nan(reinterpret_cast<const uint8_t*>(r.start[i]), bytes) ||
        I::has_e4m3_nan(reinterpret_cast<const uint8_t*>(r.start[i] + r.v_delta), bytes))
      return true;
  }
  return false;
}

static inline bool block_has_e4m3_nan(const uint8_t* const* kr, const uint8_t* const* vr, int n, int row_bytes) {
  for (int i = 0; i < n; i++)
    if (I::has_e4m3_nan(kr[i], row_bytes) || I::has_e4m3_nan(vr[i], row_bytes)) return true;
  return false;
}

// ---- scores: S[g][t] = q_g . k_t for GB rows x TB tokens ----
// TB = W / (GB rounded up to a power of two): a GQA group of 3 takes one 3-row tile (the K
// vectors converted once for the three rows) instead of a 2-row and a 1-row pass.
template <int GB>
static constexpr int score_tb() {
  return I::W / (GB <= 1 ? 1 : GB <= 2 ? 2 : GB <= 4 ? 4 : GB <= 8 ? 8 : 16);
}

// Isa: a dependent name, so only an I that has store_quads (AVX-512) instantiates it.
template <typename Isa = I>
RKV_ATTN_INLINE void store_quads(float* S, int64_t ldS, typename Isa::V v) { Isa::store_quads(S, ldS, v); }

// Isa: a dependent name, so only an I that has load_cvt4 (AVX512-VBMI) instantiates it.
template <typename Isa = I>
RKV_ATTN_INLINE void load_cvt4(const uint8_t* row, int d, typename Isa::V* v) { Isa::load_cvt4(row, d, v); }

template <int DT, int GB>
RKV_ATTN_INLINE void score_tile(const float* q, int hd, const uint8_t* const* krow, float* S, int ldS) {
  constexpr int TB = score_tb<GB>();
  typename I::V acc[I::W];
  for (int j = 0; j < I::W; j++) acc[j] = I::zero();
  const uint8_t* kp[TB];
  for (int t = 0; t < TB; t++) kp[t] = krow[t];
  if constexpr (DT == kE4M3Lut) {
    for (int d = 0; d < hd; d += 4 * I::W) {  // hd % 64 == 0 (e4m3_lut_fit)
      for (int t = 0; t < TB; t++) {
        typename I::V k[4];
        load_cvt4<>(kp[t], d, k);
        for (int g = 0; g < GB; g++)
          for (int c = 0; c < 4; c++)
            acc[g * TB + t] = I::fma(I::load(q + (int64_t)g * hd + d + c * I::W), k[c], acc[g * TB + t]);
      }
    }
  } else {
    int d = 0;
    for (; d + 2 * I::W <= hd; d += 2 * I::W) {
      for (int t = 0; t < TB; t++) {
        typename I::V k0, k1;
        I::template load_cvt2<DT>(kp[t], d, k0, k1);
        for (int g = 0; g < GB; g++) {
          acc[g * TB + t] = I::fma(I::load(q + (int64_t)g * hd + d), k0, acc[g * TB + t]);
          acc[g * TB + t] = I::fma(I::load(q + (int64_t)g * hd + d + I::W), k1, acc[g * TB + t]);
        }
      }
    }
    for (; d < hd; d += I::W) {
      for (int t = 0; t < TB; t++) {
        typename I::V kv = I::template load_cvt<DT>(kp[t], d);
        for (int g = 0; g < GB; g++) acc[g * TB + t] = I::fma(I::load(q + (int64_t)g * hd + d), kv, acc[g * TB + t]);
      }
    }
  }
  if constexpr (GB * TB == I::W && TB == 4 && I::W == 16) {
    // lanes 4g .. 4g + 3 hold row g's four scores: one 128-bit store per row
    store_quads<>(S, ldS, I::reduce_w(acc));
  } else {
    alignas(64) float sums[I::W];
    I::store(sums, I::reduce_w(acc));
    for (int g = 0; g < GB; g++)
      for (int t = 0; t < TB; t++) S[(int64_t)g * ldS + t] = sums[g * TB + t];
  }
}

// Out of line: inlined into its one caller (the kBf16Pairs decode loop), GCC 12 folded the q loads
// into every FMA (a load per FMA instead of q held in registers) and the loop ran 0.8x.
template <int DT, int GB>
__attribute__((noinline)) static void score_rows(const float* Q, int hd, const uint8_t* const* krow, int n_pad,
                                                 float* S, int ldS) {
  constexpr int TB = score_tb<GB>();
  for (int t = 0; t < n_pad; t += TB) score_tile<DT, GB>(Q, hd, krow + t, S + t, ldS);
}

// K rows of f32 (prefill's packed tiles), bf16 or f16 on 8 lanes: 4 rows x 3 tokens, 12 FMA chains of one FMA
// per step of 8 elements (score_tile's 4 x 2 has 8 chains of two dependent FMAs per step of 16,
// exactly the FMA latency with no slack) and each q vector loaded once per step, not once per
// token. Every dot product sums in score_tile's order (lane j over elements j, j + 8, ..., then
// reduce_w), so scores are bit-identical to it; padding accumulators only feed unused lanes.
template <int DT>
RKV_ATTN_INLINE void score_tile_4x3(const float* q, int hd, const uint8_t* const* krow, float* S, int ldS) {
  typename I::V acc[16];
  for (int j = 0; j < 16; j++) acc[j] = I::zero();
  const uint8_t* kp[3];
  for (int t = 0; t < 3; t++) kp[t] = krow[t];
  for (int d = 0; d < hd; d += I::W) {
    typename I::V k0 = I::template load_cvt<DT>(kp[0], d), k1 = I::template load_cvt<DT>(kp[1], d),
                  k2 = I::template load_cvt<DT>(kp[2], d);
    for (int g = 0; g < 4; g++) {
      typename I::V qv = I::load(q + (int64_t)g * hd + d);
      acc[g * 3] = I::fma(qv, k0, acc[g * 3]);
      acc[g * 3 + 1] = I::fma(qv, k1, acc[g * 3 + 1]);
      acc[g * 3 + 2] = I::fma(qv, k2, acc[g * 3 + 2]);
    }
  }
  alignas(64) float sums[16];
  I::store(sums, I::reduce_w(acc));
  I::store(sums + 8, I::reduce_w(acc + 8));
  for (int g = 0; g < 4; g++)
    for (int t = 0; t < 3; t++) S[(int64_t)g * ldS + t] = sums[g * 3 + t];
}

// Scores of n_pad tokens (a multiple of score_group(R); rows past the real tokens are valid
// memory, their scores masked later).
template <int DT>
static void scores_padded(const float* Q, int R, int hd, const uint8_t* const* krow, int n_pad, float* S, int ldS) {
  int r = 0;
  if constexpr (I::W == 8 && (DT == RKV_DTYPE_F32 || DT == RKV_DTYPE_BF16 || DT == RKV_DTYPE_F16)) {
    for (; r + 4 <= R; r += 4) {
      const float* Qr = Q + (int64_t)r * hd;
      float* Sr = S + (int64_t)r * ldS;
      int t = 0;
      // n_pad is a multiple of 8: 3-token tiles, then 2-token tiles for a remainder of 2 or 4
      for (; t + 3 <= n_pad && n_pad - t != 4; t += 3) score_tile_4x3<DT>(Qr, hd, krow + t, Sr + t, ldS);
      for (; t < n_pad; t += 2) score_tile<DT, 4>(Qr, hd, krow + t, Sr + t, ldS);
    }
  }
  if constexpr (I::W >= 16) {
    for (; r + 8 <= R; r += 8) score_rows<DT, 8>(Q + (int64_t)r * hd, hd, krow, n_pad, S + (int64_t)r * ldS, ldS);
  }
  if constexpr (I::W >= 8) {
    for (; r + 4 <= R; r += 4) score_rows<DT, 4>(Q + (int64_t)r * hd, hd, krow, n_pad, S + (int64_t)r * ldS, ldS);
    if (r + 3 == R) {
      score_rows<DT, 3>(Q + (int64_t)r * hd, hd, krow, n_pad, S + (int64_t)r * ldS, ldS);
      return;
    }
  }
  if constexpr (I::W >= 2) {
    for (; r + 2 <= R; r += 2) score_rows<DT, 2>(Q + (int64_t)r * hd, hd, krow, n_pad, S + (int64_t)r * ldS, ldS);
  }
  for (; r < R; r++) score_rows<DT, 1>(Q + (int64_t)r * hd, hd, krow, n_pad, S + (int64_t)r * ldS, ldS);
}

// The token count scores_padded's tiles for R rows step by (the largest tile width it uses):
// every multiple of it is a valid n_pad. Mirrors scores_padded's row tiling.
static inline int score_group(int R) {
  int g = 1, r = 0;
  if (I::W == 8) for (; r + 4 <= R; r += 4) g = 2;  // 4 x 3 tiles, then 2-token tiles: any even count
  if (I::W >= 16) for (; r + 8 <= R; r += 8) g = std::max(g, score_tb<8>());
  if (I::W >= 8) {
    for (; r + 4 <= R; r += 4) g = std::max(g, score_tb<4>());
    if (r + 3 == R) return std::max(g, score_tb<3>());
  }
  if (I::W >= 2) for (; r + 2 <= R; r += 2) g = std::max(g, score_tb<2>());
  if (r < R) g = std::max(g, score_tb<1>());
  return g;
}

template <int DT>
static void scores_block(const float* Q, int R, int hd, const uint8_t* const* krow, int n, float* S, int ldS) {
  // tokens are padded up to a multiple of W (the padding rows are valid, masked later)
  scores_padded<DT>(Q, R, hd, krow, (n + I::W - 1) / I::W * I::W, S, ldS);
}

// ---- online softmax over one block ----
// S rows hold raw scaled scores for tokens t0 .. t0+n; row r sees the positions
// [lim.lo[r], lim.hi[r]). On return S holds the probabilities exp2(x - m_new) (0 where
// masked), m/l are updated, scale[r] is the factor to apply to the row's previous output
// accumulator and the block-local tokens [vis[r], vis[R + r]) are the ones row r sees: the
// value loop reads no other token for the row (a masked token's probability is 0, but
// 0 * Inf in its V would be NaN).
static void softmax_block(float* S, int R, int ldS, int64_t t0, int n, RowLimits lim, float soft_cap, float* m,
                          float* l, float* scale, int* vis) {
  const int n_pad = (n + I::W - 1) / I::W * I::W;
  const typename I::V ninf = I::set1(-INFINITY);
  for (int r = 0; r < R; r++) {
    float* row = S + (int64_t)r * ldS;
    if (soft_cap > 0.f) {
      // q was pre-scaled by logit_q_scale: the base-2 logit is logit_base2(s, cap)
      for (int t = 0; t < n_pad; t += I::W) I::store(row + t, I::logit2(I::load(row + t), soft_cap));
    }
    const int64_t lo = lim.lo[r] - t0, hi = lim.hi[r] - t0;  // visible block-local tokens [lo, hi)
    const int v0 = lo <= 0 ? 0 : (lo >= n ? n : (int)lo);
    int v1 = hi >= n ? n : (hi <= 0 ? 0 : (int)hi);
    if (v1 < v0) v1 = v0;
    vis[r] = v0;
    vis[R + r] = v1;
    for (int t = 0; t < v0; t++) row[t] = -INFINITY;
    for (int t = v1; t < n_pad; t++) row[t] = -INFINITY;
    if (v1 == v0) {
      // nothing visible in this block: state unchanged, zero probabilities
      scale[r] = 1.f;
      for (int t = 0; t < n_pad; t += I::W) I::store(row + t, I::zero());
      continue;
    }
    typename I::V mx = ninf;
    for (int t = 0; t < n_pad; t += I::W) mx = I::max(mx, I::load(row + t));
    float m_new = I::hmax(mx);
    if (m[r] > m_new) m_new = m[r];
    scale[r] = softmax_rescale(m[r], m_new);
    const typename I::V mv = I::set1(m_new);
    typename I::V sum = I::zero();
    for (int t = 0; t < n_pad; t += I::W) {
      typename I::V p = I::exp2(I::sub(I::load(row + t), mv));  // exp2(-inf) = 0 exactly
      I::store(row + t, p);
      sum = I::add(sum, p);
    }
    l[r] = l[r] * scale[r] + I::hsum(sum);
    m[r] = m_new;
  }
}

// ---- values: O[r][:] = O[r][:] * scale[r] + sum_t P[r][t] * v_t ----
// Token t of this call is token t + toff of the softmax block, whose row r sees the block
// tokens [vlo[r], vhi[r]) (Vis below): only those enter row r's sum.
struct Vis {
  const int* lo;
  const int* hi;
  int toff;
};

// CB vectors of one V row from element d0 (pairs widened together where the ISA can).
template <int DT, int CB>
RKV_ATTN_INLINE void load_v(const uint8_t* row, int d0, typename I::V* v) {
  if constexpr (DT == kE4M3Lut) {
    static_assert(CB % 4 == 0, "e4m3 table lookups widen 64 elements (4 vectors) at a time");
    for (int c = 0; c < CB; c += 4) load_cvt4<>(row, d0 + c * I::W, v + c);
  } else {
    int c = 0;
    for (; c + 2 <= CB; c += 2) I::template load_cvt2<DT>(row, d0 + c * I::W, v[c], v[c + 1]);
    if (c < CB) v[c] = I::template load_cvt<DT>(row, d0 + c * I::W);
  }
}

// PF steps once per token: a Prefetcher or a LineCursor.
template <int DT, int RB, int CB, typename PF>
RKV_ATTN_INLINE void pv_tile(const float* P, int ldP, const uint8_t* const* vrow, int n, float* O, int hd,
                             const float* scale, Vis vis, int d0, PF& pf) {
  typename I::V acc[RB][CB];
  // [a, b): tokens every row sees; [u0, u1): tokens some row sees (call-local indices)
  int a = 0, b = n, u0 = n, u1 = 0;
  for (int r = 0; r < RB; r++) {
    if (scale != nullptr) {
      typename I::V s = I::set1(scale[r]);
      for (int c = 0; c < CB; c++) acc[r][c] = I::mul(s, I::load(O + (int64_t)r * hd + d0 + c * I::W));
    } else {  // a later part of a block whose scale was applied already
      for (int c = 0; c < CB; c++) acc[r][c] = I::load(O + (int64_t)r * hd + d0 + c * I::W);
    }
    const int lo = vis.lo[r] - vis.toff, hi = vis.hi[r] - vis.toff;
    a = lo > a ? lo : a;
    b = hi < b ? hi : b;
    if (lo < hi) {
      u0 = lo < u0 ? lo : u0;
      u1 = hi > u1 ? hi : u1;
    }
  }
  if (u0 < 0) u0 = 0;
  if (u1 > n) u1 = n;
  PF p = pf;  // a local copy keeps its cursor in registers through the token loop
  if (a <= u0 && b >= u1) {
    // every row sees every token of [u0, u1) (decode, and prefill away from the diagonal)
    int t = u0;
    // two tokens per step when both tokens' V vectors fit beside the accumulators
    constexpr bool kTwo = RB * CB + 2 * CB + 2 <= I::kRegs;
    if constexpr (kTwo) for (; t + 2 <= u1; t += 2) {
      p.step(2);
      typename I::V v0[CB], v1[CB];
      load_v<DT, CB>(vrow[t], d0, v0);
      load_v<DT, CB>(vrow[t + 1], d0, v1);
      for (int r = 0; r < RB; r++) {
        typename I::V p0 = I::set1(P[(int64_t)r * ldP + t]);
        typename I::V p1 = I::set1(P[(int64_t)r * ldP + t + 1]);
        for (int c = 0; c < CB; c++) acc[r][c] = I::fma(p0, v0[c], acc[r][c]);
        for (int c = 0; c < CB; c++) acc[r][c] = I::fma(p1, v1[c], acc[r][c]);
      }
    }
    for (; t < u1; t++) {
      p.step(1);
      typename I::V vv[CB];
      load_v<DT, CB>(vrow[t], d0, vv);
      for (int r = 0; r < RB; r++) {
        typename I::V pr = I::set1(P[(int64_t)r * ldP + t]);
        for (int c = 0; c < CB; c++) acc[r][c] = I::fma(pr, vv[c], acc[r][c]);
      }
    }
  } else {
    for (int t = u0; t < u1; t++) {
      p.step(1);
      typename I::V vv[CB];
      load_v<DT, CB>(vrow[t], d0, vv);
      for (int r = 0; r < RB; r++) {
        if (t + vis.toff < vis.lo[r] || t + vis.toff >= vis.hi[r]) continue;
        typename I::V pr = I::set1(P[(int64_t)r * ldP + t]);
        for (int c = 0; c < CB; c++) acc[r][c] = I::fma(pr, vv[c], acc[r][c]);
      }
    }
  }
  pf = p;
  for (int r = 0; r < RB; r++)
    for (int c = 0; c < CB; c++) I::store(O + (int64_t)r * hd + d0 + c * I::W, acc[r][c]);
}

template <int RB>
static constexpr int pv_cbmax() {
  return I::kPvAcc / RB >= 4 ? 4 : I::kPvAcc / RB >= 3 ? 3 : I::kPvAcc / RB >= 2 ? 2 : 1;
}

// Number of pv_tile calls pv_rows<RB> makes for `chunks` head_dim chunks.
template <int RB>
static inline int pv_row_calls(int chunks) {
  constexpr int CBMAX = pv_cbmax<RB>();
  int calls = 0, c = 0;
  if (CBMAX >= 4) for (; c + 4 <= chunks; c += 4) calls++;
  if (CBMAX == 3) for (; c + 3 <= chunks && chunks - c != 4; c += 3) calls++;
  if (CBMAX >= 2) for (; c + 2 <= chunks; c += 2) calls++;
  return calls + (chunks - c);
}

template <int DT, int RB, typename PF>
static inline void pv_rows(const float* P, int ldP, const uint8_t* const* vrow, int n, float* O, int hd,
                           const float* scale, Vis vis, PF& pf) {
  const int chunks = hd / I::W;
  constexpr int CBMAX = pv_cbmax<RB>();
  int c = 0;
  if constexpr (DT == kE4M3Lut) {
    // 4-vector tiles only: e4m3_lut_fit admits no row tile narrower and head_dim % 64 == 0
    if constexpr (CBMAX >= 4) {
      for (; c < chunks; c += 4) pv_tile<DT, RB, 4>(P, ldP, vrow, n, O, hd, scale, vis, c * I::W, pf);
    }
  } else {
    if constexpr (CBMAX >= 4) {
      for (; c + 4 <= chunks; c += 4) pv_tile<DT, RB, 4>(P, ldP, vrow, n, O, hd, scale, vis, c * I::W, pf);
    }
    if constexpr (CBMAX == 3) {
      // 3-vector tiles, but a remainder of 4 is two 2-vector tiles, not a 3 and a 1 (a 1-vector
      // tile has RB FMA chains: too few to cover the FMA latency)
      for (; c + 3 <= chunks && chunks - c != 4; c += 3)
        pv_tile<DT, RB, 3>(P, ldP, vrow, n, O, hd, scale, vis, c * I::W, pf);
    }
    if constexpr (CBMAX >= 2) {
      for (; c + 2 <= chunks; c += 2) pv_tile<DT, RB, 2>(P, ldP, vrow, n, O, hd, scale, vis, c * I::W, pf);
    }
    for (; c < chunks; c++) pv_tile<DT, RB, 1>(P, ldP, vrow, n, O, hd, scale, vis, c * I::W, pf);
  }
}

// pv_tile calls one pv_block makes (each steps once per token): spreads prefetches evenly.
static inline int pv_calls(int R, int hd) {
  const int chunks = hd / I::W;
  int calls = 0, r = 0;
  if (I::W == 16 && R >= 16) for (; r + 6 <= R; r += 6) calls += pv_row_calls<6>(chunks);
  if (I::kAcc >= 16) for (; r + 8 <= R; r += 8) calls += pv_row_calls<8>(chunks);
  if (I::kAcc >= 8) for (; r + 4 <= R; r += 4) calls += pv_row_calls<4>(chunks);
  if (I::kAcc >= 8 && r + 3 == R) return calls + pv_row_calls<3>(chunks);
  if (I::kAcc >= 2) for (; r + 2 <= R; r += 2) calls += pv_row_calls<2>(chunks);
  for (; r < R; r++) calls += pv_row_calls<1>(chunks);
  return calls;
}

// pf steps once per token of each tile (a Prefetcher with its rate set by the caller, see
// Prefetcher::spread, or a LineCursor). vis: [2][R] visible ranges from softmax_block; toff:
// index of this call's first token in the softmax block. scale null: O is not rescaled.
template <int DT, typename PF>
static void pv_block(const float* P, int R, int ldP, const uint8_t* const* vrow, int n, float* O, int hd,
                     const float* scale, const int* vis, int toff, PF& pf) {
  int r = 0;
  if constexpr (I::W == 16) {
    // prefill on AVX-512: 6 rows x 4 vectors (24 accumulators, 4 V + 1 P registers), which tile a
    // head_dim of 128 exactly; 8 x 3 left an 8 x 2 remainder and needed every register with its
    // two-token steps (GCC shuffled accumulators through moves). Zen 5, 1 thread, bf16 q 512:
    // 1.01-1.02x. A row's sum is the same sequence of FMAs whatever tile it is in.
    if (R >= 16)
      for (; r + 6 <= R; r += 6)
        pv_rows<DT, 6>(P + (int64_t)r * ldP, ldP, vrow, n, O + (int64_t)r * hd, hd, scale ? scale + r : nullptr, Vis{vis + r, vis + R + r, toff}, pf);
  }
  if constexpr (I::kAcc >= 16) {
    for (; r + 8 <= R; r += 8)
      pv_rows<DT, 8>(P + (int64_t)r * ldP, ldP, vrow, n, O + (int64_t)r * hd, hd, scale ? scale + r : nullptr, Vis{vis + r, vis + R + r, toff}, pf);
  }
  if constexpr (I::kAcc >= 8) {
    for (; r + 4 <= R; r += 4)
      pv_rows<DT, 4>(P + (int64_t)r * ldP, ldP, vrow, n, O + (int64_t)r * hd, hd, scale ? scale + r : nullptr, Vis{vis + r, vis + R + r, toff}, pf);
    if (r + 3 == R) {  // a GQA group of 3: one pass over V instead of a 2-row and a 1-row pass
      pv_rows<DT, 3>(P + (int64_t)r * ldP, ldP, vrow, n, O + (int64_t)r * hd, hd, scale ? scale + r : nullptr, Vis{vis + r, vis + R + r, toff}, pf);
      return;
    }
  }
  if constexpr (I::kAcc >= 2) {
    for (; r + 2 <= R; r += 2)
      pv_rows<DT, 2>(P + (int64_t)r * ldP, ldP, vrow, n, O + (int64_t)r * hd, hd, scale ? scale + r : nullptr, Vis{vis + r, vis + R + r, toff}, pf);
  }
  for (; r < R; r++)
    pv_rows<DT, 1>(P + (int64_t)r * ldP, ldP, vrow, n, O + (int64_t)r * hd, hd, scale ? scale + r : nullptr, Vis{vis + r, vis + R + r, toff}, pf);
}

// Converts kBlock rows of the cache dtype into a contiguous f32 tile (GEMM-style packing for
// prefill, where each K/V tile is reused by many query rows) and repoints rows at it.
template <int DT>
static void pack_block(const uint8_t* const* src, int n, int hd, float* dst, const uint8_t** out_rows) {
  for (int t = 0; t < n; t++) {
    float* d = dst + (int64_t)t * hd;
    for (int c = 0; c < hd; c += I::W) I::store(d + c, I::template load_cvt<DT>(src[t], c));
    out_rows[t] = reinterpret_cast<const uint8_t*>(d);
  }
  for (int t = n; t < kBlock; t++) out_rows[t] = out_rows[0];
}

// ---- prefill scores from a transposed K tile (AVX-512) ----
// With K transposed to f32 Kt[d][t] (kBlock columns), S = Q . K^T is a GEMM micro-kernel: MR
// query rows x the block's tokens in registers, per element of head_dim one broadcast q value
// per row and kBlock / W K vectors, no horizontal reductions (the row tiles spent a third of
// their instructions in transpose-reductions and loaded q once per two FMAs: prefill scores
// ran at about 0.4 of the FMA peak). Each score is one FMA chain over d = 0 .. hd-1 whatever MR
// is, so a row's scores never depend on the call's other rows (chunked prefill stays
// bit-identical to whole-prompt prefill).
// Kt[d][t] for the block's tokens, W x W sub-tiles transposed in registers; tokens n .. kBlock-1
// are zero (their scores are masked).
// (Isa: only AVX-512's I has transpose_w; a dependent name, so other ISAs never instantiate it.)
template <int DT, typename Isa = I>
static void transpose_k(const uint8_t* const* krow, int n, int hd, float* kt) {
  for (int t0 = 0; t0 < kBlock; t0 += Isa::W)
    for (int d0 = 0; d0 < hd; d0 += Isa::W) {
      typename Isa::V r[Isa::W];
      for (int i = 0; i < Isa::W; i++) r[i] = t0 + i < n ? Isa::template load_cvt<DT>(krow[t0 + i], d0) : Isa::zero();
      Isa::transpose_w(r);
      for (int j = 0; j < Isa::W; j++) Isa::store(kt + (int64_t)(d0 + j) * kBlock + t0, r[j]);
    }
}

template <int MR, int NV>
RKV_ATTN_INLINE void kt_tile(const float* Q, int hd, const float* kt, float* S, int ldS) {
  typename I::V acc[MR][NV];
  for (int r = 0; r < MR; r++)
    for (int v = 0; v < NV; v++) acc[r][v] = I::zero();
  for (int d = 0; d < hd; d++) {
    typename I::V k[NV];
    for (int v = 0; v < NV; v++) k[v] = I::load(kt + (int64_t)d * kBlock + v * I::W);
    for (int r = 0; r < MR; r++) {
      const typename I::V q = I::set1(Q[(int64_t)r * hd + d]);
      for (int v = 0; v < NV; v++) acc[r][v] = I::fma(q, k[v], acc[r][v]);
    }
  }
  for (int r = 0; r < MR; r++)
    for (int v = 0; v < NV; v++) I::store(S + (int64_t)r * ldS + v * I::W, acc[r][v]);
}

// 12 rows x 2 vectors: 24 accumulators + 2 K + 1 broadcast of 32 registers; 14 loads per 24 FMAs.
template <int NV>
static void scores_kt_nv(const float* Q, int R, int hd, const float* kt, float* S, int ldS) {
  int r = 0;
  for (; r + 12 <= R; r += 12) kt_tile<12, NV>(Q + (int64_t)r * hd, hd, kt, S + (int64_t)r * ldS, ldS);
  for (; r + 8 <= R; r += 8) kt_tile<8, NV>(Q + (int64_t)r * hd, hd, kt, S + (int64_t)r * ldS, ldS);
  for (; r + 4 <= R; r += 4) kt_tile<4, NV>(Q + (int64_t)r * hd, hd, kt, S + (int64_t)r * ldS, ldS);
  for (; r + 2 <= R; r += 2) kt_tile<2, NV>(Q + (int64_t)r * hd, hd, kt, S + (int64_t)r * ldS, ldS);
  for (; r < R; r++) kt_tile<1, NV>(Q + (int64_t)r * hd, hd, kt, S + (int64_t)r * ldS, ldS);
}

// Scores of tokens [0, n) padded to a multiple of W, as scores_block writes them, through Kt.
// AVX-512 only (Isa: a dependent name, so only attend_rows_t's W == 16 branch instantiates it).
template <int DT, typename Isa = I>
static void scores_kt(const float* Q, int R, int hd, const uint8_t* const* krow, int n, float* kt, float* S,
                      int ldS) {
  static_assert(kBlock == 2 * Isa::W, "the AVX-512 micro-kernel covers a block in 2 vectors");
  transpose_k<DT, Isa>(krow, n, hd, kt);
  if (n > Isa::W)
    scores_kt_nv<2>(Q, R, hd, kt, S, ldS);
  else
    scores_kt_nv<1>(Q, R, hd, kt, S, ldS);
}

// Attention of R query rows per KV head for nh consecutive KV heads (starting at s.kv_head)
// over tokens [t0, t1) of sequence view s. Q, O: [nh][R][hd] (pre-scaled q; O receives the
// *unnormalized* accumulator), m, l: [nh][R]; lim: the KV positions each row sees (shared by
// the heads). The caller normalizes: out = O / l * v_mul.
// Token blocks are visited in order; inside a block the heads are processed one after another,
// so the block's K/V bytes (a contiguous region per page: all heads of each token) are consumed
// together, and while head h of block i is computed, head h's rows of block i+1 are prefetched.
// Scratch: S [R][kBlock], scale [R], vis [2R]; pack (f32, 2*kBlock*hd) only when not null.
template <int DT>
static void attend_rows_t(const SeqView& s, int nh, const float* Q, int R, int64_t t0, int64_t t1, RowLimits lim,
                          float soft_cap, float* O, float* m, float* l, const Scratch& sc) {
  const int hd = s.head_dim;
  float* S = sc.S;
  float* scale = sc.scale;
  float* pack = sc.pack;
  int* vis = sc.vis;
  Rows cur, nxt;
  int64_t t = t0;
  int n = (int)(t1 - t < kBlock ? t1 - t : kBlock);
  if (n <= 0) return;
  fill_rows(s, t, n, cur);
  for (int h = 0; h < nh; h++) prefetch_rows(cur, n, s.row_bytes, (int64_t)h * s.row_bytes);
  const uint8_t* kr[kBlock];
  const uint8_t* vr[kBlock];
  while (n > 0) {
    int64_t tn = t + n;
    int nn = (int)(t1 - tn < kBlock ? t1 - tn : kBlock);
    if (nn > 0) fill_rows(s, tn, nn, nxt);
    for (int h = 0; h < nh; h++) {
      const int64_t hoff = (int64_t)h * s.row_bytes;
      PrefetchRanges pr;  // head h's rows of the next block, issued during this block's value loop
      Prefetcher pf;
      if (nn > 0) {
        pr.reset(nxt, nn, s.row_bytes, hoff);
        pf.reset(pr);
      }
      pf.spread((int64_t)n * pv_calls(R, hd));
      for (int i = 0; i < kBlock; i++) {
        kr[i] = cur.k[i] + hoff;
        vr[i] = cur.v[i] + hoff;
      }
      const float* Qh = Q + (int64_t)h * R * hd;
      float* Oh = O + (int64_t)h * R * hd;
      float* mh = m + (int64_t)h * R;
      float* lh = l + (int64_t)h * R;
      // K and V as the kernels read them: packed to f32 tiles (prefill, R >= 16), e4m3 known to
      // hold no NaN code (the loaders skip the fix-up), or the cache rows as they are
      const bool packed = pack != nullptr && DT != RKV_DTYPE_F32;
      const bool finite = !packed && DT == RKV_DTYPE_FP8_E4M3 && !block_has_e4m3_nan(kr, vr, n, s.row_bytes);
      const uint8_t* pvr[kBlock];
      if (packed) pack_block<DT>(vr, n, hd, pack + (int64_t)kBlock * hd, pvr);
      bool scored = false;
      if constexpr (I::W == 16) {
        if (sc.kt != nullptr) {
          scores_kt<DT>(Qh, R, hd, kr, n, sc.kt, S, kBlock);
          scored = true;
        }
      }
      if (!scored) {
        if (packed) {
          const uint8_t* pk[kBlock];
          pack_block<DT>(kr, n, hd, pack, pk);
          scores_block<RKV_DTYPE_F32>(Qh, R, hd, pk, n, S, kBlock);
        } else if (finite) {
          scores_block<kE4M3Finite>(Qh, R, hd, kr, n, S, kBlock);
        } else {
          scores_block<DT>(Qh, R, hd, kr, n, S, kBlock);
        }
      }
      softmax_block(S, R, kBlock, t, n, lim, soft_cap, mh, lh, scale, vis);
      if (packed)
        pv_block<RKV_DTYPE_F32>(S, R, kBlock, pvr, n, Oh, hd, scale, vis, 0, pf);
      else if (finite)
        pv_block<kE4M3Finite>(S, R, kBlock, vr, n, Oh, hd, scale, vis, 0, pf);
      else
        pv_block<DT>(S, R, kBlock, vr, n, Oh, hd, scale, vis, 0, pf);
      pf.finish();
    }
    cur = nxt;
    t = tn;
    n = nn;
  }
}

static void attend_rows(const SeqView& s, int nh, const float* Q, int R, int64_t t0, int64_t t1, RowLimits lim,
                        float soft_cap, float* O, float* m, float* l, const Scratch& sc) {
  switch (s.dtype) {
    case RKV_DTYPE_F32: attend_rows_t<RKV_DTYPE_F32>(s, nh, Q, R, t0, t1, lim, soft_cap, O, m, l, sc); break;
    case RKV_DTYPE_F16: attend_rows_t<RKV_DTYPE_F16>(s, nh, Q, R, t0, t1, lim, soft_cap, O, m, l, sc); break;
    case RKV_DTYPE_BF16: attend_rows_t<RKV_DTYPE_BF16>(s, nh, Q, R, t0, t1, lim, soft_cap, O, m, l, sc); break;
    case RKV_DTYPE_FP8_E4M3: attend_rows_t<RKV_DTYPE_FP8_E4M3>(s, nh, Q, R, t0, t1, lim, soft_cap, O, m, l, sc); break;
    default: attend_rows_t<RKV_DTYPE_FP8_E5M2>(s, nh, Q, R, t0, t1, lim, soft_cap, O, m, l, sc); break;
  }
}

// The K ranges (all heads) of tokens [ta, tb) of one sequence, one per page touched.
static inline void token_ranges(const SeqView& s, int64_t ta, int64_t tb, PrefetchRanges& pr) {
  pr.n = 0;
  if (tb <= ta) return;
  const int64_t region = (int64_t)s.num_kv_heads * s.row_bytes;
  pr.v_delta = (intptr_t)((uintptr_t)s.v_base - (uintptr_t)s.k_base);
  for (int64_t t = ta; t < tb && pr.n < kBlock;) {
    const int64_t pi = t / s.page_size, off = t - pi * s.page_size;
    const int64_t take = (s.page_size - off < tb - t) ? s.page_size - off : tb - t;
    const uintptr_t a = (uintptr_t)(s.k_base + ((int64_t)s.pages[pi] * s.page_size + off) * region);
    pr.start[pr.n] = a;
    pr.end[pr.n] = a + take * region;
    pr.n++;
    t += take;
  }
}

// Tokens per group of the grouped decode loop (see grouped_block): about kGroupBytes of K
// (or V) rows, 4 to 16 tokens (a power of two: groups tile kBlock), and a multiple of the score
// tiles' token count. Smaller groups read memory closer to front to back; larger ones load and
// store the value accumulators O less often. 16 KiB measured best on a 2-core Zen 5 (8 KV heads of 128: f32 4 tokens, bf16 8; 8 KiB
// and 32 KiB lost 5-10% before the value tiles took over the prefetching).
constexpr int64_t kGroupBytes = 16384;
static inline int token_group(const SeqView& s, int R) {
  const int64_t region = (int64_t)s.num_kv_heads * s.row_bytes;
  int g = 4;
  while (g < 16 && (int64_t)(2 * g) * region <= kGroupBytes) g *= 2;
  return std::max(g, score_group(R));
}

// Where the grouped loop reads next: a group of tokens [ta, tb) of the K or the V pool.
struct GroupRef {
  int64_t ta = 0, tb = 0;
  bool v = false;
};

// A cursor over the first page range of group g (its K or V lines) that spreads them over about
// `steps` tile steps; pr receives all the group's ranges.
static inline LineCursor group_cursor(const SeqView& s, const GroupRef& g, int64_t steps, PrefetchRanges& pr) {
  token_ranges(s, g.ta, g.tb, pr);
  LineCursor lc;
  if (pr.n > 0) {
    const intptr_t shift = g.v ? pr.v_delta : 0;
    lc.cur = pr.start[0] + shift;
    lc.end = pr.end[0] + shift;
    lc.per = (int)((pr.lines() + steps - 1) / std::max<int64_t>(steps, 1));
  }
  return lc;
}

// Issues what the cursor did not reach and the group's other page ranges (a group that crosses
// a page boundary).
static inline void finish_group(const PrefetchRanges& pr, bool v, LineCursor& lc) {
  lc.per = 1 << 20;
  lc.step(1);
  const intptr_t shift = v ? pr.v_delta : 0;
  for (int i = 1; i < pr.n; i++) {
    LineCursor rest{pr.start[i] + shift, pr.end[i] + shift, 1 << 20};
    rest.step(1);
  }
}

// Decode over all nh KV heads of each token (heads contiguous in a token row), f32 / bf16 / f16
// KV. A block's K and then its V are read in groups of g tokens (token_group), every head of a
// group before the next group: a group's rows are contiguous in a page, so memory is read almost
// front to back, and while one group is computed the next one in reading order (across the K/V
// and block boundaries) is prefetched into L1 (LineCursor). Reading each head over a whole block
// instead (rows at a stride of nh * row_bytes) with the next block prefetched into L2 (the loop
// fp8 keeps: headwise_block) capped a bare read of that pattern near 0.65 of the read bandwidth
// on one Zen 5 core, against 0.97 for 4-token groups. The block's first value group rescales O;
// later ones add to it. Scratch: S [nh][R][kBlock], scale [nh*R], vis [nh][2R].
template <int DT>
static void grouped_block(const SeqView& s, int nh, const float* Q, int R, int64_t t, int n, RowLimits lim,
                          float soft_cap, float* O, float* m, float* l, const Scratch& sc, const Rows& cur, int g,
                          const GroupRef& after) {
  const int hd = s.head_dim;
  const uint8_t* rows[kBlock];
  PrefetchRanges pr;
  for (int j0 = 0; j0 < n; j0 += g) {
    const GroupRef next = j0 + g < n ? GroupRef{t + j0 + g, t + std::min(j0 + 2 * g, n), false}
                                     : GroupRef{t, t + std::min(g, n), true};
    // one share per head (stepping inside the score tiles measured 5-10% slower)
    LineCursor lc = group_cursor(s, next, nh, pr);
    for (int h = 0; h < nh; h++) {
      const int64_t hoff = (int64_t)h * s.row_bytes;
      for (int i = 0; i < g; i++) rows[i] = cur.k[j0 + i] + hoff;  // entries past n repeat row 0 (masked)
      scores_padded<DT>(Q + (int64_t)h * R * hd, R, hd, rows, g, sc.S + (int64_t)h * R * kBlock + j0, kBlock);
      lc.step(1);
    }
    finish_group(pr, next.v, lc);
  }
  for (int h = 0; h < nh; h++)
    softmax_block(sc.S + (int64_t)h * R * kBlock, R, kBlock, t, n, lim, soft_cap, m + (int64_t)h * R,
                  l + (int64_t)h * R, sc.scale + (int64_t)h * R, sc.vis + (int64_t)h * 2 * R);
  for (int j0 = 0; j0 < n; j0 += g) {
    const int nj = n - j0 < g ? n - j0 : g;
    const bool last = j0 + g >= n;
    const GroupRef next = last ? after : GroupRef{t + j0 + g, t + std::min(j0 + 2 * g, n), true};
    LineCursor lc = group_cursor(s, next, (int64_t)nh * nj * pv_calls(R, hd), pr);
    for (int h = 0; h < nh; h++) {
      const int64_t hoff = (int64_t)h * s.row_bytes;
      for (int i = 0; i < nj; i++) rows[i] = cur.v[j0 + i] + hoff;
      pv_block<DT>(sc.S + (int64_t)h * R * kBlock + j0, R, kBlock, rows, nj, O + (int64_t)h * R * hd, hd,
                   j0 == 0 ? sc.scale + (int64_t)h * R : nullptr, sc.vis + (int64_t)h * 2 * R, j0, lc);
    }
    finish_group(pr, next.v, lc);
  }
}

template <int DT>
static void attend_grouped_t(const SeqView& s, int nh, const float* Q, int R, int64_t t0, int64_t t1,
                             RowLimits lim, float soft_cap, float* O, float* m, float* l, const Scratch& sc) {
  const int g = token_group(s, R);
  Rows cur;
  int64_t t = t0;
  int n = (int)(t1 - t < kBlock ? t1 - t : kBlock);
  if (n <= 0) return;
  {
    // the first group up front
    PrefetchRanges pr;
    LineCursor lc = group_cursor(s, GroupRef{t0, t0 + std::min<int64_t>(g, n), false}, 1, pr);
    finish_group(pr, false, lc);
  }
  while (n > 0) {
    fill_rows(s, t, n, cur);
    const int64_t tn = t + n;
    // after this block's last V group: the next block's first K group, prefetched during that V group
    const GroupRef after{tn, std::min<int64_t>(tn + g, t1), false};
    grouped_block<DT>(s, nh, Q, R, t, n, lim, soft_cap, O, m, l, sc, cur, g, after);
    t = tn;
    n = (int)(t1 - t < kBlock ? t1 - t : kBlock);
  }
}

// Prefetch steps a head's scores of one token count for: about half the time of its value
// tiles, so the next block's lines are spread over the whole block, not only its value loop.
static inline int token_major_score_steps(int R, int hd) { return (pv_calls(R, hd) + 1) / 2; }

// The token-major decode loop for 1-byte (fp8) KV: each head over a whole block, its rows at a
// stride of nh * row_bytes, with the next block's K and V prefetched into L1 over this block's
// tiles. For fp8 the grouped loop (grouped_block) measured 0.72-0.76x as many calls/s on one
// Zen 5 core (4-, 8- or 16-token groups, with or without the in-tile cursor); why is not known.
// Scratch: S [nh][R][kBlock], scale [nh*R], vis [nh][2R].
template <int DT>
static void headwise_block(const SeqView& s, int nh, const float* Q, int R, int64_t t, int n, RowLimits lim,
                           float soft_cap, float* O, float* m, float* l, const Scratch& sc, const Rows& cur,
                           HeadwisePrefetcher& pf) {
  constexpr int kSub = 32;
  const int hd = s.head_dim;
  const int score_steps = token_major_score_steps(R, hd);
  const uint8_t* rows[kSub];
  for (int j0 = 0; j0 < n; j0 += kSub) {
    const int nj = n - j0 < kSub ? n - j0 : kSub;
    for (int h = 0; h < nh; h++) {
      const int64_t hoff = (int64_t)h * s.row_bytes;
      for (int i = 0; i < kSub; i++) rows[i] = cur.k[j0 + i] + hoff;
      scores_block<DT>(Q + (int64_t)h * R * hd, R, hd, rows, nj, sc.S + (int64_t)h * R * kBlock + j0, kBlock);
      pf.step(nj * score_steps);
    }
  }
  for (int h = 0; h < nh; h++)
    softmax_block(sc.S + (int64_t)h * R * kBlock, R, kBlock, t, n, lim, soft_cap, m + (int64_t)h * R,
                  l + (int64_t)h * R, sc.scale + (int64_t)h * R, sc.vis + (int64_t)h * 2 * R);
  for (int j0 = 0; j0 < n; j0 += kSub) {
    const int nj = n - j0 < kSub ? n - j0 : kSub;
    for (int h = 0; h < nh; h++) {
      const int64_t hoff = (int64_t)h * s.row_bytes;
      for (int i = 0; i < kSub; i++) rows[i] = cur.v[j0 + i] + hoff;
      pv_block<DT>(sc.S + (int64_t)h * R * kBlock + j0, R, kBlock, rows, nj, O + (int64_t)h * R * hd, hd,
                   j0 == 0 ? sc.scale + (int64_t)h * R : nullptr, sc.vis + (int64_t)h * 2 * R, j0, pf);
    }
  }
}

// Blocks ahead whose K/V the head-wise loop prefetches (2 measured no better from memory on
// a 2-core Zen 3, and it leaves more lines in flight that the next call may not use).
constexpr int kPrefetchAhead = 1;

template <int DT>
static void attend_headwise_t(const SeqView& s, int nh, const float* Q, int R, int64_t t0, int64_t t1,
                              RowLimits lim, float soft_cap, float* O, float* m, float* l, const Scratch& sc) {
  const int hd = s.head_dim;
  Rows cur;
  int64_t t = t0;
  int n = (int)(t1 - t < kBlock ? t1 - t : kBlock);
  if (n <= 0) return;
  {
    // the first blocks up front
    PrefetchRanges pr;
    HeadwisePrefetcher pf;
    const int64_t te = t0 + (int64_t)kBlock * kPrefetchAhead < t1 ? t0 + (int64_t)kBlock * kPrefetchAhead : t1;
    for (int64_t ta = t0; ta < te; ta += kBlock) {
      token_ranges(s, ta, ta + kBlock < te ? ta + kBlock : te, pr);
      pf.reset(pr);
      pf.finish();
    }
  }
  while (n > 0) {
    fill_rows(s, t, n, cur);
    PrefetchRanges pr;
    HeadwisePrefetcher pf;
    const int64_t ta = t + (int64_t)kBlock * kPrefetchAhead;
    if (ta < t1) {
      token_ranges(s, ta, ta + kBlock < t1 ? ta + kBlock : t1, pr);
      pf.reset(pr);
    }
    pf.spread((int64_t)n * nh * (pv_calls(R, hd) + token_major_score_steps(R, hd)));
    if constexpr (DT == RKV_DTYPE_FP8_E4M3) {
      // e4m3 through f16: the block scanned for NaN codes (blocks without any skip the fix-up).
      // kE4M3Lut needs no scan (its tables give NaN for them). It used to keep the scan for its
      // read ahead of the strided tiles; with the KV pool on huge pages (LargePages) that read
      // cost more than it gave: Zen 5, 1 thread, 32768 tokens, calls/s, scan -> none: pages in
      // order 65.7-68.2 -> 69.6-71.6, shuffled level; on base pages shuffled 47.5-50.4 -> 43.6-45.4.
      PrefetchRanges here;
      token_ranges(s, t, t + n, here);
      const bool has_nan = ranges_have_e4m3_nan(here);
      if (!has_nan) headwise_block<kE4M3Finite>(s, nh, Q, R, t, n, lim, soft_cap, O, m, l, sc, cur, pf);
      else headwise_block<DT>(s, nh, Q, R, t, n, lim, soft_cap, O, m, l, sc, cur, pf);
    } else {
      headwise_block<DT>(s, nh, Q, R, t, n, lim, soft_cap, O, m, l, sc, cur, pf);
    }
    pf.finish();
    t += n;
    n = (int)(t1 - t < kBlock ? t1 - t : kBlock);
  }
}

// Decode in a permuted element order reads K and V a chunk at a time (kBf16Pairs: 32 elements,
// kE4M3Lut: 64), so every load must start at a chunk boundary: head_dim % chunk == 0, on AVX-512,
// and no 3-vector value tiles (pv_block takes 8-row tiles, 3 vectors wide, only for 8 <= R < 16;
// its other row tiles take 4-, 2- and, past an odd chunk count, 1-vector tiles, so with head_dim
// % 64 == 0 only 4-vector ones).
static_assert(I::W != 16 || (pv_cbmax<8>() == 3 && pv_cbmax<6>() == 4 && pv_cbmax<4>() == 4 && pv_cbmax<3>() == 4 &&
                             pv_cbmax<2>() == 4 && pv_cbmax<1>() == 4),
              "chunked_order_fits assumes these value tile widths");
static inline bool chunked_order_fits(int R, int hd, int chunk) {
  return I::W == 16 && hd % chunk == 0 && !(R >= 8 && R < 16);
}
static inline bool bf16_pairs_fit(int R, int hd) { return chunked_order_fits(R, hd, 32); }
// Whether e4m3 decode can widen rows by table lookup (kE4M3Lut, AVX512-VBMI): every K and V
// lookup at a 64-element boundary, i.e. head_dim % 64 == 0 and only 4-vector value tiles.
static inline bool e4m3_lut_fit(int R, int hd) { return chunked_order_fits(R, hd, 64); }

// Decode with K / V rows widened into a permuted element order (kBf16Pairs, kE4M3Lut): Q permuted
// into sc.q_pairs by to(src, dst, n), O (nh * R rows, which may hold partial sums of earlier
// calls) permuted in by to and back out by from(p, n); scores and softmax do not depend on the
// order. bf16 takes the grouped loop, e4m3 the head-wise one (attend_token_major).
template <int DT, typename To, typename From>
static void attend_reordered(const SeqView& s, int nh, const float* Q, int R, int64_t t0, int64_t t1,
                             RowLimits lim, float soft_cap, float* O, float* m, float* l, const Scratch& sc, To to,
                             From from) {
  const int64_t n = (int64_t)nh * R * s.head_dim;
  to(Q, sc.q_pairs, n);
  to(O, O, n);
  if constexpr (DT == kE4M3Lut)
    attend_headwise_t<DT>(s, nh, sc.q_pairs, R, t0, t1, lim, soft_cap, O, m, l, sc);
  else
    attend_grouped_t<DT>(s, nh, sc.q_pairs, R, t0, t1, lim, soft_cap, O, m, l, sc);
  from(O, n);
}

// bf16 decode in pair order. Isa: a dependent name, so only an I with to_pairs (AVX-512)
// instantiates it. Zen 5, 1 thread, batch 4, 8 KV heads of 128, GQA 4, alternating JMH runs: in
// cache 27.0-28.3 -> 28.6-28.7 GB/s; 32768 tokens from memory, pages in order, 38.9-43.5 ->
// 39.1-46.3 calls/s (a mean of +4%; the memory noise is larger than the gain); 2 threads level.
template <typename Isa = I>
static void attend_bf16_pairs(const SeqView& s, int nh, const float* Q, int R, int64_t t0, int64_t t1,
                              RowLimits lim, float soft_cap, float* O, float* m, float* l, const Scratch& sc) {
  attend_reordered<kBf16Pairs>(s, nh, Q, R, t0, t1, lim, soft_cap, O, m, l, sc, &Isa::to_pairs, &Isa::from_pairs);
}

// e4m3 decode by table lookup; its permutation is its own inverse. The tables give NaN for the
// NaN codes, so neither a fix-up path nor the NaN scan is needed.
// Isa: a dependent name, so only an I with load_cvt4 and to_lut_order (AVX512-VBMI) instantiates it.
template <typename Isa = I>
static void attend_e4m3_lut(const SeqView& s, int nh, const float* Q, int R, int64_t t0, int64_t t1,
                            RowLimits lim, float soft_cap, float* O, float* m, float* l, const Scratch& sc) {
  attend_reordered<kE4M3Lut>(s, nh, Q, R, t0, t1, lim, soft_cap, O, m, l, sc, &Isa::to_lut_order,
                             [](float* p, int64_t n) { Isa::to_lut_order(p, p, n); });
}

template <int DT>
static void attend_grouped(const SeqView& s, int nh, const float* Q, int R, int64_t t0, int64_t t1, RowLimits lim,
                           float soft_cap, float* O, float* m, float* l, const Scratch& sc) {
  if constexpr (DT == RKV_DTYPE_BF16 && I::W == 16) {
    if (sc.q_pairs != nullptr && bf16_pairs_fit(R, s.head_dim))
      return attend_bf16_pairs<>(s, nh, Q, R, t0, t1, lim, soft_cap, O, m, l, sc);
  }
  attend_grouped_t<DT>(s, nh, Q, R, t0, t1, lim, soft_cap, O, m, l, sc);
}

static void attend_token_major(const SeqView& s, int nh, const float* Q, int R, int64_t t0, int64_t t1,
                               RowLimits lim, float soft_cap, float* O, float* m, float* l, const Scratch& sc) {
  switch (s.dtype) {
    case RKV_DTYPE_F32: attend_grouped<RKV_DTYPE_F32>(s, nh, Q, R, t0, t1, lim, soft_cap, O, m, l, sc); break;
    case RKV_DTYPE_F16: attend_grouped<RKV_DTYPE_F16>(s, nh, Q, R, t0, t1, lim, soft_cap, O, m, l, sc); break;
    case RKV_DTYPE_BF16: attend_grouped<RKV_DTYPE_BF16>(s, nh, Q, R, t0, t1, lim, soft_cap, O, m, l, sc); break;
    case RKV_DTYPE_FP8_E4M3: attend_headwise_t<RKV_DTYPE_FP8_E4M3>(s, nh, Q, R, t0, t1, lim, soft_cap, O, m, l, sc); break;
    default: attend_headwise_t<RKV_DTYPE_FP8_E5M2>(s, nh, Q, R, t0, t1, lim, soft_cap, O, m, l, sc); break;
  }
}
