// CPU attention core, last piece: the token-major decode loops (attend_token_major: every KV
// head of each token together). f32 / bf16 / f16 take the grouped loop (grouped_block,
// attend_grouped_t), fp8 the head-wise one (headwise_block, attend_headwise_t); bf16 and e4m3 on
// AVX-512 may read rows in a permuted element order (attend_reordered). Included via
// attention_cpu_impl.h once per ISA, inside that ISA's namespace after its `struct I` (after
// attention_cpu_prefill.h); no include guard on purpose.

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
// (or V) rows, 4 (8 where decode_groups_of_8 holds) to 16 tokens (a power of two: groups tile
// kBlock), and a multiple of the score tiles' token count. Smaller groups read memory closer to
// front to back; larger ones load and store the value accumulators O less often; 16 KiB ran
// fastest.
// Measured: docs/measurements/kernel-constants.md#decode-token-groups-of-16-kib
constexpr int64_t kGroupBytes = 16384;
static inline int token_group(const SeqView& s, int R) {
  const int64_t region = (int64_t)s.num_kv_heads * s.row_bytes;
  int g = decode_groups_of_8() ? 8 : 4;
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
  const int per_head = score_cursor_steps<DT>(R, g);  // see the score pass below
  for (int j0 = 0; j0 < n; j0 += g) {
    const GroupRef next = j0 + g < n ? GroupRef{t + j0 + g, t + std::min(j0 + 2 * g, n), false}
                                     : GroupRef{t, t + std::min(g, n), true};
    // AVX2's 3- and 4-row score tiles take a share each (score_cursor_steps); elsewhere one share
    // per head (stepping inside the score tiles ran slower on Zen 5). On Zen 1 a head's share in one
    // burst (64 lines for 8-token groups of f32 rows of 8 KV heads of 128) fills the miss buffers.
    // Measured: docs/measurements/kernel-constants.md#decode-prefetch-shares-per-score-tile
    LineCursor lc = group_cursor(s, next, (int64_t)nh * std::max(per_head, 1), pr);
    for (int h = 0; h < nh; h++) {
      const int64_t hoff = (int64_t)h * s.row_bytes;
      for (int i = 0; i < g; i++) rows[i] = cur.k[j0 + i] + hoff;  // entries past n repeat row 0 (masked)
      scores_padded<DT>(Q + (int64_t)h * R * hd, R, hd, rows, g, sc.S + (int64_t)h * R * kBlock + j0, kBlock, lc);
      if (per_head == 0) lc.step(1);
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
    LineCursor lc = group_cursor(s, next, (int64_t)nh * nj * pv_calls(R, hd, DT == kBf16Pairs && I::W == 8), pr);
    for (int h = 0; h < nh; h++) {
      const int64_t hoff = (int64_t)h * s.row_bytes;
      for (int i = 0; i < nj; i++) rows[i] = cur.v[j0 + i] + hoff;
      pv_block<DT>(sc.S + (int64_t)h * R * kBlock + j0, R, kBlock, rows, nj, O + (int64_t)h * R * hd, hd,
                   j0 == 0 ? sc.scale + (int64_t)h * R : nullptr, sc.vis + (int64_t)h * 2 * R, j0, lc);
    }
    finish_group(pr, next.v, lc);
  }
}

// On AVX2 out of line: once the 3-row value tiles were (pv_rows_3), GCC inlined grouped_block into
// attend_grouped_t, and bf16 pairs at GQA 4 decoded 0.92-0.95x as fast on Zen 1.
template <int DT>
__attribute__((noinline)) static void grouped_block_outlined(const SeqView& s, int nh, const float* Q, int R, int64_t t,
                                                             int n, RowLimits lim, float soft_cap, float* O, float* m,
                                                             float* l, const Scratch& sc, const Rows& cur, int g,
                                                             const GroupRef& after) {
  grouped_block<DT>(s, nh, Q, R, t, n, lim, soft_cap, O, m, l, sc, cur, g, after);
}

template <int DT>
static void attend_grouped_t(const SeqView& s, int nh, const float* Q, int R, int64_t t0, int64_t t1,
                             RowLimits lim, float soft_cap, float* O, float* m, float* l, const Scratch& sc) {
  // AVX2 bf16 pairs (where avx2_bf16_pairs holds) with more than 4 rows: 16-token groups. Their
  // 4-row value tiles are 2 vectors wide (8 multiply-adds a token), so a tile's setup weighs more
  // than in the 3 x 4 tiles of GQA 3.
  // Measured: docs/measurements/kernel-constants.md#avx2-bf16-pairs-16-token-groups-past-4-rows
  const int g = DT == kBf16Pairs && I::W == 8 && R > 4 ? 16 : token_group(s, R);
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
    if constexpr (I::W == 8) grouped_block_outlined<DT>(s, nh, Q, R, t, n, lim, soft_cap, O, m, l, sc, cur, g, after);
    else grouped_block<DT>(s, nh, Q, R, t, n, lim, soft_cap, O, m, l, sc, cur, g, after);
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
      // kE4M3Lut needs no scan (its tables give NaN for them), and with the KV pool on huge pages
      // (LargePages) the scan's read ahead of the strided tiles costs more than it gives.
      // Measured: docs/measurements/kernel-constants.md#e4m3-lookup-decode-without-the-nan-scan
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

// Decode in a permuted element order reads K and V a chunk at a time (kBf16Pairs: 32 elements on
// AVX-512, 16 on AVX2; kE4M3Lut: 64), so every load must start at a chunk boundary. On AVX-512:
// head_dim % chunk == 0 and no 3-vector value tiles (pv_block takes 8-row tiles, 3 vectors wide, only for 8 <= R < 16;
// its other row tiles take 4-, 2- and, past an odd chunk count, 1-vector tiles, so with head_dim
// % 64 == 0 only 4-vector ones).
static_assert(I::W != 16 || (pv_cbmax<8>() == 3 && pv_cbmax<6>() == 4 && pv_cbmax<4>() == 4 && pv_cbmax<3>() == 4 &&
                             pv_cbmax<2>() == 4 && pv_cbmax<1>() == 4),
              "chunked_order_fits assumes these value tile widths");
static inline bool chunked_order_fits(int R, int hd, int chunk) {
  return I::W == 16 && hd % chunk == 0 && !(R >= 8 && R < 16);
}
// bf16 pairs: on AVX-512 32-element chunks; on AVX2 16-element ones, where pv_rows takes value
// tiles of 4 or 2 vectors for every row tile, on the CPUs where pairs pay (avx2_bf16_pairs).
static inline bool bf16_pairs_fit(int R, int hd) {
  if constexpr (I::W == 8) return hd % 16 == 0 && avx2_bf16_pairs();
  return chunked_order_fits(R, hd, 32);
}
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

// bf16 decode in pair order (kBf16Pairs: one 64-byte load widens into even and odd elements).
// Isa: a dependent name, so only an I with to_pairs (AVX-512, AVX2) instantiates it.
// Measured: docs/measurements/kernel-constants.md#bf16-decode-in-pair-order
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
  if constexpr (DT == RKV_DTYPE_BF16 && (I::W == 16 || I::W == 8)) {
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
