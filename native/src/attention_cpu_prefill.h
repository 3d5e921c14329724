// CPU attention core, third piece: the head-by-head loop of prefill (attend_rows_t, attend_rows:
// one KV head after another per token block) and the blocks only it uses: K/V rows packed to f32
// tiles (pack_block) and, on AVX-512, scores from a transposed K tile (transpose_k, kt_tile,
// scores_kt). Included via attention_cpu_impl.h once per ISA, inside that ISA's namespace after
// its `struct I` (after attention_cpu_tiles.h); no include guard on purpose.

// Converts kPrefillBlock rows of the cache dtype into a contiguous f32 tile (GEMM-style packing for
// prefill, where each K/V tile is reused by many query rows) and repoints rows at it.
template <int DT>
static void pack_block(const uint8_t* const* src, int n, int hd, float* dst, const uint8_t** out_rows) {
  for (int t = 0; t < n; t++) {
    float* d = dst + (int64_t)t * hd;
    for (int c = 0; c < hd; c += I::W) I::store(d + c, I::template load_cvt<DT>(src[t], c));
    out_rows[t] = reinterpret_cast<const uint8_t*>(d);
  }
  for (int t = n; t < kPrefillBlock; t++) out_rows[t] = out_rows[0];
}

// ---- prefill scores from a transposed K tile (AVX-512) ----
// With K transposed to f32 Kt[d][t] (kPrefillBlock columns), S = Q . K^T is a GEMM micro-kernel: MR
// query rows x 32 of the block's tokens in registers, per element of head_dim one broadcast q
// value per row and 2 K vectors, no horizontal reductions (the row tiles spent a third of their
// instructions in transpose-reductions and loaded q once per two FMAs: prefill scores ran at
// about 0.4 of the FMA peak). Each score is one FMA chain over d = 0 .. hd-1 whatever MR
// is, so a row's scores never depend on the call's other rows (chunked prefill stays
// bit-identical to whole-prompt prefill).
// Kt[d][t] for the block's tokens, W x W sub-tiles transposed in registers; tokens from n to the
// next multiple of W are zero (their scores are masked).
// (Isa: only AVX-512's I has transpose_w; a dependent name, so other ISAs never instantiate it.)
template <int DT, typename Isa = I>
static void transpose_k(const uint8_t* const* krow, int n, int hd, float* kt) {
  for (int t0 = 0; t0 < n; t0 += Isa::W)
    for (int d0 = 0; d0 < hd; d0 += Isa::W) {
      typename Isa::V r[Isa::W];
      for (int i = 0; i < Isa::W; i++) r[i] = t0 + i < n ? Isa::template load_cvt<DT>(krow[t0 + i], d0) : Isa::zero();
      Isa::transpose_w(r);
      for (int j = 0; j < Isa::W; j++) Isa::store(kt + (int64_t)(d0 + j) * kPrefillBlock + t0, r[j]);
    }
}

template <int MR, int NV>
RKV_ATTN_INLINE void kt_tile(const float* Q, int hd, const float* kt, float* S, int ldS) {
  typename I::V acc[MR][NV];
  for (int r = 0; r < MR; r++)
    for (int v = 0; v < NV; v++) acc[r][v] = I::zero();
  for (int d = 0; d < hd; d++) {
    typename I::V k[NV];
    for (int v = 0; v < NV; v++) k[v] = I::load(kt + (int64_t)d * kPrefillBlock + v * I::W);
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
  static_assert(kPrefillBlock % (2 * Isa::W) == 0, "the AVX-512 micro-kernel takes 2 vectors of tokens a call");
  transpose_k<DT, Isa>(krow, n, hd, kt);
  for (int t0 = 0; t0 < n; t0 += 2 * Isa::W) {
    if (n - t0 > Isa::W)
      scores_kt_nv<2>(Q, R, hd, kt + t0, S + t0, ldS);
    else
      scores_kt_nv<1>(Q, R, hd, kt + t0, S + t0, ldS);
  }
}

// Attention of R query rows per KV head for nh consecutive KV heads (starting at s.kv_head)
// over tokens [t0, t1) of sequence view s. Q, O: [nh][R][hd] (pre-scaled q; O receives the
// *unnormalized* accumulator), m, l: [nh][R]; lim: the KV positions each row sees (shared by
// the heads). The caller normalizes: out = O / l * v_mul.
// Token blocks are visited in order; inside a block the heads are processed one after another,
// so the block's K/V bytes (a contiguous region per page: all heads of each token) are consumed
// together, and while head h of block i is computed, head h's rows of block i+1 are prefetched.
// Scratch: S [R][kPrefillBlock], scale [R], vis [2R]; pack (f32, 2*kPrefillBlock*hd) only when not null.
template <int DT>
static void attend_rows_t(const SeqView& s, int nh, const float* Q, int R, int64_t t0, int64_t t1, RowLimits lim,
                          float soft_cap, float* O, float* m, float* l, const Scratch& sc) {
  const int hd = s.head_dim;
  float* S = sc.S;
  float* scale = sc.scale;
  float* pack = sc.pack;
  int* vis = sc.vis;
  RowsN<kPrefillBlock> cur, nxt;
  int64_t t = t0;
  int n = (int)(t1 - t < kPrefillBlock ? t1 - t : kPrefillBlock);
  if (n <= 0) return;
  fill_rows(s, t, n, cur);
  for (int h = 0; h < nh; h++) prefetch_rows(cur, n, s.row_bytes, (int64_t)h * s.row_bytes);
  const uint8_t* kr[kPrefillBlock];
  const uint8_t* vr[kPrefillBlock];
  while (n > 0) {
    int64_t tn = t + n;
    int nn = (int)(t1 - tn < kPrefillBlock ? t1 - tn : kPrefillBlock);
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
      for (int i = 0; i < kPrefillBlock; i++) {
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
      const uint8_t* pvr[kPrefillBlock];
      if (packed) pack_block<DT>(vr, n, hd, pack + (int64_t)kPrefillBlock * hd, pvr);
      bool scored = false;
      if constexpr (I::W == 16) {
        if (sc.kt != nullptr) {
          scores_kt<DT>(Qh, R, hd, kr, n, sc.kt, S, kPrefillBlock);
          scored = true;
        }
      }
      if (!scored) {
        if (packed) {
          const uint8_t* pk[kPrefillBlock];
          pack_block<DT>(kr, n, hd, pack, pk);
          scores_block<RKV_DTYPE_F32>(Qh, R, hd, pk, n, S, kPrefillBlock);
        } else if (finite) {
          scores_block<kE4M3Finite>(Qh, R, hd, kr, n, S, kPrefillBlock);
        } else {
          scores_block<DT>(Qh, R, hd, kr, n, S, kPrefillBlock);
        }
      }
      softmax_rows(S, R, kPrefillBlock, t, n, lim, soft_cap, mh, lh, scale, vis);
      if (packed)
        pv_block<RKV_DTYPE_F32, true>(S, R, kPrefillBlock, pvr, n, Oh, hd, scale, vis, 0, pf);
      else if (finite)
        pv_block<kE4M3Finite, true>(S, R, kPrefillBlock, vr, n, Oh, hd, scale, vis, 0, pf);
      else
        pv_block<DT, true>(S, R, kPrefillBlock, vr, n, Oh, hd, scale, vis, 0, pf);
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
