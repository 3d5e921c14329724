// CPU attention core, first piece: the K/V row pointers of a token block (Rows, fill_rows), the
// prefetching of the rows to come (prefetch_rows; PrefetchRanges and the paced PrefetcherT, as
// prefill's Prefetcher and the head-wise decode's HeadwisePrefetcher; the grouped decode's
// LineCursor) and the scans of a block for e4m3 NaN codes. Included via attention_cpu_impl.h
// once per ISA, inside that ISA's namespace after its `struct I`; no include guard on purpose.

// The rows of a block of N tokens: kBlock (decode) or kPrefillBlock (prefill).
template <int N>
struct RowsN {
  const uint8_t* k[N];
  const uint8_t* v[N];
};
using Rows = RowsN<kBlock>;

// Fills the K/V row pointers of tokens [t0, t0 + n) of one sequence and KV head; entries
// n..N-1 repeat the first row (valid memory; their scores are masked).
template <int N>
static inline void fill_rows(const SeqView& s, int64_t t0, int n, RowsN<N>& r) {
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
  for (int i = n; i < N; i++) {
    r.k[i] = r.k[0];
    r.v[i] = r.v[0];
  }
}

template <int N>
static inline void prefetch_rows(const RowsN<N>& r, int n, int row_bytes, int64_t hoff) {
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
  uintptr_t start[kPrefillBlock];  // the larger of the two blocks
  uintptr_t end[kPrefillBlock];
  intptr_t v_delta = 0;  // v address - k address (the same for every row)
  int n = 0;

  template <int N>
  void reset(const RowsN<N>& r, int rows, int row_bytes, int64_t head_off) {
    static_assert(N <= kPrefillBlock, "one range per row at most");
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
// The head-wise token-major decode's (fp8): into L1, as its tiles read each line soon after.
// Measured: docs/measurements/kernel-constants.md#fp8-head-wise-decode-prefetches-into-l1
using HeadwisePrefetcher = PrefetcherT<3>;

// A cursor that issues nothing (score tiles outside the grouped decode loop).
struct NoCursor {
  inline void step(int) {}
};
static NoCursor no_cursor;

// The grouped decode loop's prefetcher (grouped_block): one contiguous range, `per` lines
// (prefetcht0) per step: per head in the score pass (per tile of AVX2's 3- and 4-row score tiles),
// per token inside the value tiles. Its state stays in registers through a tile's token loop (a
// Prefetcher copied into each tile spilled).
// T0, not NTA: prefetchnta runs this loop several times slower on an Intel Xeon and is level
// on Zen 5.
// Measured: docs/measurements/kernel-constants.md#grouped-decode-prefetch-hint
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
