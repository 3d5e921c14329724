// CPU attention core, second piece: the building blocks of one token block on register tiles:
// scores S = Q . K^T (score_tile, scores_padded, scores_block), the online softmax
// (softmax_block) and the values O = O * scale + P . V (pv_tile, pv_rows, pv_block). Included via
// attention_cpu_impl.h once per ISA, inside that ISA's namespace after its `struct I` (after
// attention_cpu_prefetch.h); no include guard on purpose.

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

// K rows of f32 (prefill's packed tiles), bf16 or f16 on 8 lanes: GB rows x 3 tokens, 12 FMA chains (GB = 4) of one FMA
// per step of 8 elements (score_tile's 4 x 2 has 8 chains of two dependent FMAs per step of 16,
// exactly the FMA latency with no slack) and each q vector loaded once per step, not once per
// token. Every dot product sums in score_tile's order (lane j over elements j, j + 8, ..., then
// reduce_w), so scores are bit-identical to it; padding accumulators only feed unused lanes.
// GB = 3 (a GQA group of 3, as Llama 3.2 3B's) takes the same 3-token tile: 9 chains, each q
// vector loaded once per 3 tokens (score_tile's 3 x 2 loaded it once per 2 tokens).
// Measured: docs/measurements/kernel-constants.md#avx2-score-tile-of-3-tokens
template <int DT, int GB>
RKV_ATTN_INLINE void score_tile_x3(const float* q, int hd, const uint8_t* const* krow, float* S, int ldS) {
  static_assert(GB == 3 || GB == 4, "3 or 4 rows");
  typename I::V acc[16];
  for (int j = 0; j < 16; j++) acc[j] = I::zero();
  const uint8_t* kp[3];
  for (int t = 0; t < 3; t++) kp[t] = krow[t];
  for (int d = 0; d < hd; d += I::W) {
    typename I::V k0 = I::template load_cvt<DT>(kp[0], d), k1 = I::template load_cvt<DT>(kp[1], d),
                  k2 = I::template load_cvt<DT>(kp[2], d);
    for (int g = 0; g < GB; g++) {
      typename I::V qv = I::load(q + (int64_t)g * hd + d);
      acc[g * 3] = I::fma(qv, k0, acc[g * 3]);
      acc[g * 3 + 1] = I::fma(qv, k1, acc[g * 3 + 1]);
      acc[g * 3 + 2] = I::fma(qv, k2, acc[g * 3 + 2]);
    }
  }
  alignas(64) float sums[16];
  I::store(sums, I::reduce_w(acc));
  I::store(sums + 8, I::reduce_w(acc + 8));
  for (int g = 0; g < GB; g++)
    for (int t = 0; t < 3; t++) S[(int64_t)g * ldS + t] = sums[g * 3 + t];
}

// The tokens of n_pad (even) that 3-token tiles cover before the 2-token ones: 3 at a time
// while at least 3 remain, but a remainder of 4 is two 2-token tiles.
static inline int three_token_span(int n_pad) {
  int t = 0;
  while (t + 3 <= n_pad && n_pad - t != 4) t += 3;
  return t;
}

// GB (3 or 4) rows over n_pad tokens (even): GB x 3 tiles, then 2-token tiles for a remainder
// of 2 or 4. PF steps once per tile (LineCursor, or NoCursor).
template <int DT, int GB, typename PF>
RKV_ATTN_INLINE void rows_x3(const float* Q, int hd, const uint8_t* const* krow, int n_pad, float* S, int ldS, PF& pf) {
  const int t3 = three_token_span(n_pad);
  int t = 0;
  for (; t < t3; t += 3) {
    score_tile_x3<DT, GB>(Q, hd, krow + t, S + t, ldS);
    pf.step(1);
  }
  for (; t < n_pad; t += 2) {
    score_tile<DT, GB>(Q, hd, krow + t, S + t, ldS);
    pf.step(1);
  }
}

// The tiles rows_x3 (x3) or rows_pairs (!x3) take for GB rows over n_pad tokens.
static inline int rows_tiles(int GB, bool x3, int n_pad) {
  const int t3 = x3 || GB == 3 ? three_token_span(n_pad) : 0;
  return t3 / 3 + (n_pad - t3 + 1) / 2;
}

// AVX2 scores on K rows in kBf16Pairs order (Q permuted to match): GB rows x TB tokens, each
// token's 16-element chunk widened once (one load, a shift and a mask: its even and odd
// elements) and each q vector loaded once per chunk. 4 x 2 and 3 x 3 keep the accumulators, the
// K vectors and q in 16 registers (4 x 3 would need 19).
template <int GB, int TB>
RKV_ATTN_INLINE void score_tile_pairs(const float* q, int hd, const uint8_t* const* krow, float* S, int ldS) {
  static_assert(I::W == 8 && GB * TB <= 16, "AVX2 tiles of at most 16 scores");
  typename I::V acc[16];
  for (int j = 0; j < 16; j++) acc[j] = I::zero();
  const uint8_t* kp[TB];
  for (int t = 0; t < TB; t++) kp[t] = krow[t];
  for (int d = 0; d < hd; d += 2 * I::W) {  // hd % 16 == 0 (bf16_pairs_fit)
    typename I::V k[TB][2];
    for (int t = 0; t < TB; t++) I::template load_cvt2<kBf16Pairs>(kp[t], d, k[t][0], k[t][1]);
    for (int g = 0; g < GB; g++)
      for (int h = 0; h < 2; h++) {
        typename I::V qv = I::load(q + (int64_t)g * hd + d + h * I::W);
        // held in a register: GCC 12 otherwise folds the load into each of the TB FMAs (4 x 2:
        // 16 q loads per 16 FMAs, more than Zen 1's load ports carry beside the K loads)
        __asm__("" : "+x"(qv));
        for (int t = 0; t < TB; t++) acc[g * TB + t] = I::fma(qv, k[t][h], acc[g * TB + t]);
      }
  }
  alignas(64) float sums[16];
  I::store(sums, I::reduce_w(acc));
  if constexpr (GB * TB > 8) I::store(sums + 8, I::reduce_w(acc + 8));
  for (int g = 0; g < GB; g++)
    for (int t = 0; t < TB; t++) S[(int64_t)g * ldS + t] = sums[g * TB + t];
}

// GB (3 or 4) rows over n_pad tokens (even) in pairs order: 4 x 2 tiles; 3 x 3 tiles, then
// 3 x 2 for a remainder of 2 or 4.
template <int GB, typename PF>
RKV_ATTN_INLINE void rows_pairs(const float* Q, int hd, const uint8_t* const* krow, int n_pad, float* S, int ldS, PF& pf) {
  int t = 0;
  if constexpr (GB == 3)
    for (const int t3 = three_token_span(n_pad); t < t3; t += 3) {
      score_tile_pairs<3, 3>(Q, hd, krow + t, S + t, ldS);
      pf.step(1);
    }
  for (; t < n_pad; t += 2) {
    score_tile_pairs<GB, 2>(Q, hd, krow + t, S + t, ldS);
    pf.step(1);
  }
}

// AVX2's score tiles of 3 and 4 rows (rows_x3, rows_pairs) that step a cursor: f32, bf16, f16
// and bf16 pairs.
template <int DT>
static constexpr bool kScoreTilesStep =
    I::W == 8 && (DT == kBf16Pairs || DT == RKV_DTYPE_F32 || DT == RKV_DTYPE_BF16 || DT == RKV_DTYPE_F16);

// The score tiles of R rows over n_pad tokens that step scores_padded's cursor (the 4- and 3-row
// groups of kScoreTilesStep; none elsewhere). Mirrors scores_padded's row tiling.
template <int DT>
static inline int score_cursor_steps(int R, int n_pad) {
  if constexpr (!kScoreTilesStep<DT>) {
    return 0;
  } else {
    const bool x3 = DT != kBf16Pairs;
    return R / 4 * rows_tiles(4, x3, n_pad) + (R % 4 == 3 ? rows_tiles(3, x3, n_pad) : 0);
  }
}

template <int DT, typename PF>
RKV_ATTN_INLINE void scores_padded_rows(const float* Q, int R, int hd, const uint8_t* const* krow, int n_pad, float* S,
                                        int ldS, PF& pf) {
  int r = 0;
  if constexpr (I::W == 8 && DT == kBf16Pairs) {
    for (; r + 4 <= R; r += 4) rows_pairs<4>(Q + (int64_t)r * hd, hd, krow, n_pad, S + (int64_t)r * ldS, ldS, pf);
    if (r + 3 == R) {
      rows_pairs<3>(Q + (int64_t)r * hd, hd, krow, n_pad, S + (int64_t)r * ldS, ldS, pf);
      return;
    }
  }
  if constexpr (I::W == 8 && (DT == RKV_DTYPE_F32 || DT == RKV_DTYPE_BF16 || DT == RKV_DTYPE_F16)) {
    for (; r + 4 <= R; r += 4) rows_x3<DT, 4>(Q + (int64_t)r * hd, hd, krow, n_pad, S + (int64_t)r * ldS, ldS, pf);
    if (r + 3 == R) {
      rows_x3<DT, 3>(Q + (int64_t)r * hd, hd, krow, n_pad, S + (int64_t)r * ldS, ldS, pf);
      return;
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

// Scores of n_pad tokens (a multiple of score_group(R); rows past the real tokens are valid
// memory, their scores masked later). pf steps once per tile of score_cursor_steps.
template <int DT, typename PF = NoCursor>
static void scores_padded(const float* Q, int R, int hd, const uint8_t* const* krow, int n_pad, float* S, int ldS,
                          PF& pf = no_cursor) {
  PF p = pf;  // a local copy keeps the cursor in registers through the tiles
  scores_padded_rows<DT>(Q, R, hd, krow, n_pad, S, ldS, p);
  pf = p;
}

// The token count scores_padded's tiles for R rows step by (the largest tile width it uses):
// every multiple of it is a valid n_pad. Mirrors scores_padded's row tiling.
static inline int score_group(int R) {
  int g = 1, r = 0;
  if (I::W == 8) for (; r + 4 <= R; r += 4) g = 2;  // 4 x 3 (or 3 x 3) tiles, then 2-token tiles: any even count
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

// One S row of a softmax block (row r of R): the soft cap applied, the block-local tokens it sees
// [vis[r], vis[R + r]) recorded and every other score set to -inf. False if it sees none.
RKV_ATTN_INLINE bool visible_row(float* row, int r, int R, int64_t t0, int n, int n_pad, RowLimits lim,
                                 float soft_cap, int* vis) {
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
  if (v1 == v0) return false;
  for (int t = 0; t < v0; t++) row[t] = -INFINITY;
  for (int t = v1; t < n_pad; t++) row[t] = -INFINITY;
  return true;
}

// The row's probabilities exp2(x - m) in place (exp2(-inf) = 0 exactly); returns their lane sums.
RKV_ATTN_INLINE typename I::V exp_row(float* row, int n_pad, float m) {
  const typename I::V mv = I::set1(m);
  typename I::V sum = I::zero();
  for (int t = 0; t < n_pad; t += I::W) {
    typename I::V p = I::exp2(I::sub(I::load(row + t), mv));
    I::store(row + t, p);
    sum = I::add(sum, p);
  }
  return sum;
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
    if (!visible_row(row, r, R, t0, n, n_pad, lim, soft_cap, vis)) {
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
    l[r] = l[r] * scale[r] + I::hsum(exp_row(row, n_pad, m_new));
    m[r] = m_new;
  }
}

// Prefill's online softmax: softmax_block's contract, with the rows taken W at a time. Each group's
// row maxima and row sums come out of one transpose-reduction each (reduce_max_w / reduce_w)
// instead of a horizontal reduction per row, and its rescale factors out of one vector exp2
// instead of a scalar exp2f per row (softmax_block was 11-12% of prefill on Zen 5). Every prefill
// row goes through here, a short last group padded with empty rows, and reduce_w sums every lane
// by the same tree: a row's probabilities and state are the same whichever call, tile or group
// holds it, so chunked prefill stays bit-identical. Decode keeps softmax_block (a GQA group of a
// few rows would leave most lanes empty).
static void softmax_rows(float* S, int R, int ldS, int64_t t0, int n, RowLimits lim, float soft_cap, float* m,
                         float* l, float* scale, int* vis) {
  constexpr int W = I::W;
  const int n_pad = (n + W - 1) / W * W;
  const typename I::V ninf = I::set1(-INFINITY);
  for (int r0 = 0; r0 < R; r0 += W) {
    const int rows = R - r0 < W ? R - r0 : W;
    typename I::V part[W];  // per row: lane-wise max, then lane-wise sum
    bool empty[W];
    alignas(64) float m_old[W], l_old[W], m_new[W], rescale[W], l_new[W];
    for (int i = 0; i < W; i++) {
      part[i] = ninf;
      empty[i] = true;
      m_old[i] = -INFINITY;
      l_old[i] = 0.f;
      if (i >= rows) continue;
      const int r = r0 + i;
      float* row = S + (int64_t)r * ldS;
      m_old[i] = m[r];
      l_old[i] = l[r];
      // nothing visible in this block: state unchanged, zero probabilities
      if (!visible_row(row, r, R, t0, n, n_pad, lim, soft_cap, vis)) continue;
      empty[i] = false;
      typename I::V mx = ninf;
      for (int t = 0; t < n_pad; t += W) mx = I::max(mx, I::load(row + t));
      part[i] = mx;
    }
    // an empty row's lane: max(-inf, m_old), so the exp2 below may be NaN there; it is not used
    const typename I::V mn = I::max(I::reduce_max_w(part), I::load(m_old));
    const typename I::V sc = I::exp2(I::sub(I::load(m_old), mn));  // exp2(-inf) = 0: the initial state
    I::store(m_new, mn);
    I::store(rescale, sc);
    for (int i = 0; i < W; i++) {
      part[i] = I::zero();
      if (i >= rows) continue;
      float* row = S + (int64_t)(r0 + i) * ldS;
      if (empty[i]) {
        for (int t = 0; t < n_pad; t += W) I::store(row + t, I::zero());
        continue;
      }
      part[i] = exp_row(row, n_pad, m_new[i]);
    }
    I::store(l_new, I::fma(I::load(l_old), sc, I::reduce_w(part)));
    for (int i = 0; i < rows; i++) {
      const int r = r0 + i;
      if (empty[i]) {
        scale[r] = 1.f;
        continue;
      }
      scale[r] = rescale[i];
      m[r] = m_new[i];
      l[r] = l_new[i];
    }
  }
}

// ---- values: O[r][:] = O[r][:] * scale[r] + sum_t P[r][t] * v_t ----
// Token t of this call is token t + toff of the softmax block, whose row r sees the block
// tokens [vlo[r], vhi[r]) (Vis below): only those enter row r's sum.
struct Vis {
  const int* lo;
  const int* hi;
  int toff;
  // Uniform tiles (pv_block): the call's tokens [u0, u1) (clipped to [0, n) by the tile), which
  // every row sees
  int u0 = 0, u1 = 0;
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

// Tokens [t0, t1) of a value tile on the causal diagonal (prefill): ALL, every row takes every
// one; otherwise each row only those it sees (vis). One token per step. The same loops as
// pv_tile's own, which keep theirs inline: with a lambda in their place the grouped decode loop
// ran 6-9% slower from memory (head_dim 128), and with this helper 2-5% slower at head_dim 64 in
// some runs (code generation), so only the prefill instantiations (Diag) use it.
template <int DT, int RB, int CB, bool ALL, typename PF>
RKV_ATTN_INLINE void pv_steps(typename I::V (&acc)[RB][CB], const float* P, int ldP, const uint8_t* const* vrow,
                              int d0, Vis vis, int t0, int t1, PF& p) {
  for (int t = t0; t < t1; t++) {
    p.step(1);
    typename I::V vv[CB];
    load_v<DT, CB>(vrow[t], d0, vv);
    for (int r = 0; r < RB; r++) {
      if (!ALL && (t + vis.toff < vis.lo[r] || t + vis.toff >= vis.hi[r])) continue;
      typename I::V pr = I::set1(P[(int64_t)r * ldP + t]);
      for (int c = 0; c < CB; c++) acc[r][c] = I::fma(pr, vv[c], acc[r][c]);
    }
  }
}

// PF steps once per token: a Prefetcher or a LineCursor. Diag (prefill): a tile on the causal
// diagonal takes the tokens every row sees without per-row tests (below). Uniform: every row sees
// [vis.u0, vis.u1), so no per-row range is read.
template <int DT, int RB, int CB, bool Diag, bool Uniform, typename PF>
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
  }
  if constexpr (Uniform) {
    u0 = vis.u0;
    u1 = vis.u1;
  } else for (int r = 0; r < RB; r++) {
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
  if (Uniform || (a <= u0 && b >= u1)) {
    // every row sees every token of [u0, u1) (decode, and prefill away from the diagonal)
    int t = u0;
    // two tokens per step when both tokens' V vectors fit beside the accumulators
    // (not AVX2 pairs: with two tokens' V and the mask beside their 4 x 2 tiles, GCC shuffled
    // accumulators between registers, and Zen 1 decoded 0.96x as fast in L2, 0.89x from memory)
    constexpr bool kTwo = RB * CB + 2 * CB + 2 <= I::kRegs && !(DT == kBf16Pairs && I::W == 8);
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
  } else if constexpr (Diag) {
    // On the diagonal (prefill), the tokens of [u0, u1) every row sees, [f0, f1) (those up to the
    // first row's position), go without per-row tests; tokens stay in order, so each row's sum is
    // the same sequence of FMAs.
    // Measured: docs/measurements/kernel-constants.md#prefill-diagonal-blocks-without-per-row-tests
    const int f0 = a > u0 ? a : u0, f1 = b < u1 ? b : u1;
    if (f0 < f1) {
      pv_steps<DT, RB, CB, false>(acc, P, ldP, vrow, d0, vis, u0, f0, p);
      pv_steps<DT, RB, CB, true>(acc, P, ldP, vrow, d0, vis, f0, f1, p);
      pv_steps<DT, RB, CB, false>(acc, P, ldP, vrow, d0, vis, f1, u1, p);
    } else {
      pv_steps<DT, RB, CB, false>(acc, P, ldP, vrow, d0, vis, u0, u1, p);
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
// (even_tiles: AVX2 kBf16Pairs, whose tiles are 4 or 2 vectors wide, as pv_rows takes them)
template <int RB>
static inline int pv_row_calls(int chunks, bool even_tiles) {
  constexpr int CBMAX = pv_cbmax<RB>();
  int calls = 0, c = 0;
  if (CBMAX >= 4) for (; c + 4 <= chunks; c += 4) calls++;
  if (even_tiles) return calls + (chunks - c + 1) / 2;
  if (CBMAX == 3) for (; c + 3 <= chunks && chunks - c != 4; c += 3) calls++;
  if (CBMAX >= 2) for (; c + 2 <= chunks; c += 2) calls++;
  return calls + (chunks - c);
}

template <int DT, int RB, bool Diag, bool Uniform, typename PF>
static inline void pv_rows(const float* P, int ldP, const uint8_t* const* vrow, int n, float* O, int hd,
                           const float* scale, Vis vis, PF& pf) {
  const int chunks = hd / I::W;
  constexpr int CBMAX = pv_cbmax<RB>();
  int c = 0;
  if constexpr (DT == kE4M3Lut) {
    // 4-vector tiles only: e4m3_lut_fit admits no row tile narrower and head_dim % 64 == 0
    if constexpr (CBMAX >= 4) {
      for (; c < chunks; c += 4) pv_tile<DT, RB, 4, Diag, Uniform>(P, ldP, vrow, n, O, hd, scale, vis, c * I::W, pf);
    }
  } else if constexpr (DT == kBf16Pairs && I::W == 8) {
    // AVX2 pairs: every tile starts on a 16-element chunk, so tiles 4 or 2 vectors wide (head_dim
    // % 16 == 0: bf16_pairs_fit); 4 rows take 2 (their budget is 3)
    if constexpr (CBMAX >= 4) {
      for (; c + 4 <= chunks; c += 4) pv_tile<DT, RB, 4, Diag, Uniform>(P, ldP, vrow, n, O, hd, scale, vis, c * I::W, pf);
    }
    for (; c < chunks; c += 2) pv_tile<DT, RB, 2, Diag, Uniform>(P, ldP, vrow, n, O, hd, scale, vis, c * I::W, pf);
  } else {
    if constexpr (CBMAX >= 4) {
      for (; c + 4 <= chunks; c += 4) pv_tile<DT, RB, 4, Diag, Uniform>(P, ldP, vrow, n, O, hd, scale, vis, c * I::W, pf);
    }
    if constexpr (CBMAX == 3) {
      // 3-vector tiles, but a remainder of 4 is two 2-vector tiles, not a 3 and a 1 (a 1-vector
      // tile has RB FMA chains: too few to cover the FMA latency)
      for (; c + 3 <= chunks && chunks - c != 4; c += 3)
        pv_tile<DT, RB, 3, Diag, Uniform>(P, ldP, vrow, n, O, hd, scale, vis, c * I::W, pf);
    }
    if constexpr (CBMAX >= 2) {
      for (; c + 2 <= chunks; c += 2) pv_tile<DT, RB, 2, Diag, Uniform>(P, ldP, vrow, n, O, hd, scale, vis, c * I::W, pf);
    }
    for (; c < chunks; c++) pv_tile<DT, RB, 1, Diag, Uniform>(P, ldP, vrow, n, O, hd, scale, vis, c * I::W, pf);
  }
}

// AVX2's 3-row value tiles (GQA 3: Llama 3.2 3B, the small model) out of line. Their 3 x 4 tile needs
// 17 registers (18 with bf16 pairs' mask); inlined into the grouped decode loop, GCC spills its V
// vectors and row pointers through the stack, where on its own it keeps all but one accumulator in
// registers. Bit-identical (the same tiles).
// Measured: docs/measurements/kernel-constants.md#avx2-3-row-value-tiles-out-of-line
template <int DT, bool Diag, bool Uniform, typename PF>
__attribute__((noinline)) static void pv_rows_3(const float* P, int ldP, const uint8_t* const* vrow, int n, float* O,
                                                int hd, const float* scale, Vis vis, PF& pf) {
  pv_rows<DT, 3, Diag, Uniform>(P, ldP, vrow, n, O, hd, scale, vis, pf);
}

// pv_tile calls one pv_block makes (each steps once per token): spreads prefetches evenly.
// even_tiles: the block's DT is kBf16Pairs on AVX2 (pv_rows).
static inline int pv_calls(int R, int hd, bool even_tiles = false) {
  const int chunks = hd / I::W;
  int calls = 0, r = 0;
  if (I::W == 16 && R >= 16) for (; r + 6 <= R; r += 6) calls += pv_row_calls<6>(chunks, even_tiles);
  if (I::kAcc >= 16) for (; r + 8 <= R; r += 8) calls += pv_row_calls<8>(chunks, even_tiles);
  if (I::kAcc >= 8) for (; r + 4 <= R; r += 4) calls += pv_row_calls<4>(chunks, even_tiles);
  if (I::kAcc >= 8 && r + 3 == R) return calls + pv_row_calls<3>(chunks, even_tiles);
  if (I::kAcc >= 2) for (; r + 2 <= R; r += 2) calls += pv_row_calls<2>(chunks, even_tiles);
  for (; r < R; r++) calls += pv_row_calls<1>(chunks, even_tiles);
  return calls;
}

// pv_block's rows, tile by tile (Uniform: every row sees the call's tokens [u0, u1)).
template <int DT, bool Diag, bool Uniform, typename PF>
static inline void pv_block_rows(const float* P, int R, int ldP, const uint8_t* const* vrow, int n, float* O, int hd,
                                 const float* scale, const int* vis, int toff, int u0, int u1, PF& pf) {
  int r = 0;
  if constexpr (I::W == 16) {
    // prefill on AVX-512: 6 rows x 4 vectors (24 accumulators, 4 V + 1 P registers), which tile a
    // head_dim of 128 exactly; 8 x 3 leaves an 8 x 2 remainder and needs every register with its
    // two-token steps. A row's sum is the same sequence of FMAs whatever tile it is in.
    // Measured: docs/measurements/kernel-constants.md#prefill-value-tiles-of-6-x-4-avx-512
    if (R >= 16)
      for (; r + 6 <= R; r += 6)
        pv_rows<DT, 6, Diag, Uniform>(P + (int64_t)r * ldP, ldP, vrow, n, O + (int64_t)r * hd, hd, scale ? scale + r : nullptr, Vis{vis + r, vis + R + r, toff, u0, u1}, pf);
  }
  if constexpr (I::kAcc >= 16) {
    for (; r + 8 <= R; r += 8)
      pv_rows<DT, 8, Diag, Uniform>(P + (int64_t)r * ldP, ldP, vrow, n, O + (int64_t)r * hd, hd, scale ? scale + r : nullptr, Vis{vis + r, vis + R + r, toff, u0, u1}, pf);
  }
  if constexpr (I::kAcc >= 8) {
    for (; r + 4 <= R; r += 4)
      pv_rows<DT, 4, Diag, Uniform>(P + (int64_t)r * ldP, ldP, vrow, n, O + (int64_t)r * hd, hd, scale ? scale + r : nullptr, Vis{vis + r, vis + R + r, toff, u0, u1}, pf);
    if (r + 3 == R) {  // a GQA group of 3: one pass over V instead of a 2-row and a 1-row pass
      if constexpr (I::W == 8) pv_rows_3<DT, Diag, Uniform>(P + (int64_t)r * ldP, ldP, vrow, n, O + (int64_t)r * hd, hd, scale ? scale + r : nullptr, Vis{vis + r, vis + R + r, toff, u0, u1}, pf);
      else pv_rows<DT, 3, Diag, Uniform>(P + (int64_t)r * ldP, ldP, vrow, n, O + (int64_t)r * hd, hd, scale ? scale + r : nullptr, Vis{vis + r, vis + R + r, toff, u0, u1}, pf);
      return;
    }
  }
  if constexpr (I::kAcc >= 2) {
    for (; r + 2 <= R; r += 2)
      pv_rows<DT, 2, Diag, Uniform>(P + (int64_t)r * ldP, ldP, vrow, n, O + (int64_t)r * hd, hd, scale ? scale + r : nullptr, Vis{vis + r, vis + R + r, toff, u0, u1}, pf);
  }
  for (; r < R; r++)
    pv_rows<DT, 1, Diag, Uniform>(P + (int64_t)r * ldP, ldP, vrow, n, O + (int64_t)r * hd, hd, scale ? scale + r : nullptr, Vis{vis + r, vis + R + r, toff, u0, u1}, pf);
}

// pf steps once per token of each tile (a Prefetcher with its rate set by the caller, see
// Prefetcher::spread, or a LineCursor). vis: [2][R] visible ranges from softmax_block; toff: index
// of this call's first token in the softmax block. scale null: O is not rescaled. Where every row
// sees the same tokens (decode: one position per GQA group, and a sequence starts at its window, so
// every token of every block; prefill: the blocks before a query tile's diagonal), the range is
// read once here and the tiles take it as it is (Uniform); the tiles run the same multiply-adds
// either way. The per-row range tests in every tile (GCC builds them from xmm min / max, spilling
// through the stack) cost the value pass up to a third of its time.
// Measured: docs/measurements/kernel-constants.md#value-pass-uniform-visible-ranges
template <int DT, bool Diag = false, typename PF>
static void pv_block(const float* P, int R, int ldP, const uint8_t* const* vrow, int n, float* O, int hd,
                     const float* scale, const int* vis, int toff, PF& pf) {
  bool same = true;
  for (int r = 1; r < R; r++) same = same && vis[r] == vis[0] && vis[R + r] == vis[R];
  if (same) {
    // call-local; each tile clips them to [0, n)
    const int u0 = vis[0] - toff, u1 = vis[R] - toff;
    return pv_block_rows<DT, false, true>(P, R, ldP, vrow, n, O, hd, scale, vis, toff, u0, u1, pf);
  }
  pv_block_rows<DT, Diag, false>(P, R, ldP, vrow, n, O, hd, scale, vis, toff, 0, 0, pf);
}
