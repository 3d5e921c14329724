// Packed linear weights (dense_packed.h): the layouts, the in-place packing, the small-m GEMV
// over them (one range of 64-row panels per thread, each panel read as one stream; panels()
// below says how the passes go) and the widening of packed panels for the prefill GEMMs.
// Per weight vector (16 rows) and row of x:
//   bf16, m < 8   two FMAs on the widened even / odd columns of a k-pair against broadcast f32 x
//                 (exact x, as gemv_small);
//   bf16, m >= 8  one vdpbf16ps against a broadcast bf16 pair of x (x rounded, as gemv_small and
//                 oneDNN past 16 rows);
//   f32, f16      one FMA on the (widened) column against broadcast f32 x (exact, as gemv_small).
#include "dense_packed.h"

#include <omp.h>

#include <cstdint>
#include <cstring>
#include <new>
#include <utility>
#include <vector>

#include "dense_amx.h"
#include "dense_gemv.h"
#include "rkv_common.h"
#include "rkv_dtype.h"
#include "rkv_isa.h"
#include "rkv_parallel.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC 12 AVX-512 header idiom (bug 105593)
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

namespace rkv {
namespace dense {
namespace {

// Software prefetch distance of a panel read in one pass (m <= 4): 8 KiB kept the stream fastest
// across row counts.
// Measured: docs/measurements/kernel-constants.md#packed-gemv-single-pass-prefetch-distance
constexpr int64_t kPrefetchBytes = 8192;
// Bytes of panel per chunk of k when a panel is read in several passes (m >= 5): 16 KiB stays in
// L1 between the passes while the next chunk is prefetched; larger chunks ran slower.
// Measured: docs/measurements/kernel-constants.md#packed-gemv-chunk-size-of-multi-pass-panels
constexpr int64_t kChunkBytes = 16384;
// Where far_prefetch_l2() (Intel CPUs), the chunked passes also prefetch their share of the
// chunk after next, this far past the next one's lines, into L2 (prefetcht1): it raised f32 on an
// Intel core and cost Zen 5, hence Intel only.
// Measured: docs/measurements/kernel-constants.md#packed-gemv-far-prefetch-into-l2
constexpr int64_t kFarPrefetchBytes = 32768;
// Below this many multiply-adds one thread does the whole call.
constexpr int64_t kParallelMacs = int64_t{1} << 16;

// Elements of k per panel step: bf16 panels go by k-pairs ([k/2][64][2]), f32 and f16 by
// single columns ([k][64]).
int64_t step_cols(int32_t w_dtype) { return w_dtype == RKV_DTYPE_BF16 ? 2 : 1; }

template <typename E>
int pack_typed(E* w, int64_t n, int64_t k, int64_t pair, bool to_packed) {
  const int64_t panel = kPackedPanelRows * k;
  std::vector<E> tmp;
  try {
    tmp.resize(static_cast<size_t>(panel));
  } catch (const std::bad_alloc&) {
    return set_error(RKV_ERR_OUT_OF_MEMORY, "rkv_linear_pack: cannot allocate a panel of %lld elements",
                     static_cast<long long>(panel));
  }
  for (int64_t p = 0; p < n / kPackedPanelRows; p++) {
    E* base = w + p * panel;
    std::memcpy(tmp.data(), base, static_cast<size_t>(panel) * sizeof(E));
    for (int64_t j = 0; j < kPackedPanelRows; j++)
      for (int64_t c = 0; c < k; c++) {
        const int64_t packed = ((c / pair) * kPackedPanelRows + j) * pair + c % pair, plain = j * k + c;
        if (to_packed) base[packed] = tmp[static_cast<size_t>(plain)];
        else base[plain] = tmp[static_cast<size_t>(packed)];
      }
  }
  return RKV_OK;
}

}  // namespace

bool packed_supported(int32_t w_dtype, int64_t n, int64_t k) {
#if defined(__x86_64__)
  if (n <= 0 || k <= 0 || n % kPackedPanelRows != 0 || k % 16 != 0 || cpu_isa() != kIsaAvx512) return false;
  // bf16 needs native dot products (the GEMV from 8 rows, oneDNN's matmul past 16), and k % 32 == 0:
  // oneDNN's BA16a64b2a pads k to its 32-row blocks, so a panel of k = 32 j + 16 is not where it
  // looks for the next one. f32 and f16 are multiplied in f32 (FMAs; widened panels into dnnl_sgemm).
  if (w_dtype == RKV_DTYPE_BF16) return k % 32 == 0 && cpu_avx512_bf16();
  return w_dtype == RKV_DTYPE_F32 || w_dtype == RKV_DTYPE_F16;
#else
  (void)w_dtype, (void)n, (void)k;
  return false;
#endif
}

// On the calling thread only: an OpenMP region here, on a thread other than the engine's, gives
// the process a second OpenMP thread pool, more pool threads than cores, and libgomp then stops
// spinning between regions, so every kernel call of the engine wakes its worker from the kernel.
// Callers pack matrices in parallel from their own threads.
// Measured: docs/measurements/kernel-constants.md#packing-on-the-calling-thread
int pack_panels(void* w, int32_t w_dtype, int64_t n, int64_t k, bool to_packed) {
  if (w_dtype == RKV_DTYPE_F32) return pack_typed(static_cast<uint32_t*>(w), n, k, 1, to_packed);
  return pack_typed(static_cast<uint16_t*>(w), n, k, step_cols(w_dtype), to_packed);
}

#if defined(__x86_64__)
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,avx2,fma,f16c")
namespace {
#include "rkv_bf16_round_avx512.h"

// Every pass prefetches with T0 (kWeightPrefetchLocality, dense_gemv.h).
constexpr _mm_hint kHint = static_cast<_mm_hint>(kWeightPrefetchLocality);

// How a pass multiplies (the file comment): bf16 k-pairs with f32 x or with dot products, or one
// column of f32 / f16 weights at a time.
enum class Kind { kBf16Exact, kBf16Dot, kF32, kF16 };

// Bytes of one panel step (64 rows) and of one weight vector (16 rows) in memory.
template <Kind K>
constexpr int64_t kStepBytes = K == Kind::kF16 ? 128 : 256;
template <Kind K>
constexpr int64_t kVecBytes = kStepBytes<K> / 4;

// One pass: steps [s0, s0 + steps) of sub-columns sub0 .. sub0 + NV - 1 of the panel at w, M rows
// of x, interleaved by step (gemv_packed); y row stride n. x: f32, two per row and step for
// kBf16Exact, one for kF32 / kF16; xb: bf16 pairs for kBf16Dot. J accumulator sets over alternate
// steps (m = 1, 2: enough independent FMA chains). Prefetches: LPS == 0 (a single pass), each
// step's own lines pf_len bytes ahead (0: none); otherwise step s0 + t prefetches the LPS lines at
// pf_at + 64 LPS t while t < pf_len, and (far != 0) those far bytes past them into L2. noipa
// keeps pf_len a run-time value: specialized on the constant, GCC 12 hoists all of an
// iteration's prefetches ahead of its loads, which slows one-stream decode end to end.
// Measured: docs/measurements/kernel-constants.md#packed-gemv-run-time-prefetch-length-noipa
template <Kind K, int M, int NV, int J, int LPS>
__attribute__((noinline, noipa)) void panel_pass(const uint8_t* w, const float* x, const uint32_t* xb, int64_t ldq,
                                          int64_t s0, int64_t steps, int sub0, const uint8_t* pf_at,
                                          int64_t pf_len, int64_t far, float* y, int64_t n, bool acc) {
  __m512 a[J][M][NV];
  for (int j = 0; j < J; j++)
    for (int i = 0; i < M; i++)
      for (int v = 0; v < NV; v++) a[j][i][v] = _mm512_setzero_ps();
  const __m512i hi_mask = _mm512_set1_epi32(static_cast<int>(0xFFFF0000u));
  for (int64_t s = s0; s < s0 + steps; s += J) {
    for (int j = 0; j < J; j++) {
      const uint8_t* row = w + (s + j) * kStepBytes<K> + kVecBytes<K> * sub0;
      if constexpr (LPS == 0) {
        if (pf_len) {
          for (int l = 0; l < NV * kVecBytes<K> / 64; l++)
            _mm_prefetch(row + pf_len + 64 * l, kHint);
        }
      } else if (s + j - s0 < pf_len) {
        const uint8_t* at = pf_at + (s + j - s0) * (64 * LPS);
        for (int l = 0; l < LPS; l++) _mm_prefetch(at + 64 * l, kHint);
        if (far != 0)
          for (int l = 0; l < LPS; l++) _mm_prefetch(at + far + 64 * l, _MM_HINT_T1);
      }
      if constexpr (K == Kind::kBf16Dot) {
        __m512i wv[NV];
        for (int v = 0; v < NV; v++) wv[v] = _mm512_loadu_si512(row + 64 * v);
        for (int i = 0; i < M; i++) {
          const __m512bh xv = (__m512bh)_mm512_set1_epi32(static_cast<int>(xb[(s + j) * ldq + i]));
          for (int v = 0; v < NV; v++) a[j][i][v] = _mm512_dpbf16_ps(a[j][i][v], (__m512bh)wv[v], xv);
        }
      } else if constexpr (K == Kind::kBf16Exact) {
        // one vector's even / odd columns at a time against x broadcast from memory in each FMA
        // (embedded broadcasts): with all 2 x NV widened vectors and 2 x m broadcasts held in
        // registers beside 16 accumulators, GCC 12 kept most accumulators on the stack, a load and
        // a store per FMA pair (m = 4, in L2: 36 against 46 GB/s row-major)
        const float* xq = x + (s + j) * ldq * 2;
        for (int v = 0; v < NV; v++) {
          const __m512i wv = _mm512_loadu_si512(row + 64 * v);
          const __m512 even = _mm512_castsi512_ps(_mm512_slli_epi32(wv, 16));
          const __m512 odd = _mm512_castsi512_ps(_mm512_and_si512(wv, hi_mask));
          for (int i = 0; i < M; i++)
            a[j][i][v] = _mm512_fmadd_ps(odd, _mm512_set1_ps(xq[2 * i + 1]),
                                         _mm512_fmadd_ps(even, _mm512_set1_ps(xq[2 * i]), a[j][i][v]));
        }
      } else if constexpr (K == Kind::kF32 && M * NV > 16) {
        // more than 16 accumulators: each broadcast of x once into a register for its NV FMAs, as
        // the dot products do. x broadcast from memory inside each FMA (below) gave GCC 12 all m
        // broadcasts at once beside 2m accumulators, which spilled (m = 13 x 2: 0.65 of read)
        const float* xs = x + (s + j) * ldq;
        __m512 wv[NV];
        for (int v = 0; v < NV; v++) wv[v] = _mm512_loadu_ps(row + 64 * v);
        for (int i = 0; i < M; i++) {
          const __m512 xv = _mm512_set1_ps(xs[i]);
          for (int v = 0; v < NV; v++) a[j][i][v] = _mm512_fmadd_ps(wv[v], xv, a[j][i][v]);
        }
      } else {
        const float* xs = x + (s + j) * ldq;
        for (int v = 0; v < NV; v++) {
          const __m512 wv =
              K == Kind::kF32 ? _mm512_loadu_ps(row + 64 * v)
                              : _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + 32 * v)));
          for (int i = 0; i < M; i++) a[j][i][v] = _mm512_fmadd_ps(wv, _mm512_set1_ps(xs[i]), a[j][i][v]);
        }
      }
    }
  }
  for (int i = 0; i < M; i++)
    for (int v = 0; v < NV; v++) {
      __m512 s = a[0][i][v];
      for (int j = 1; j < J; j++) s = _mm512_add_ps(s, a[j][i][v]);
      float* out = y + i * n + 16 * (sub0 + v);
      _mm512_storeu_ps(out, acc ? _mm512_add_ps(_mm512_loadu_ps(out), s) : s);
    }
}

// The passes of one sub-column group over rows of x in blocks of MB (the last one shorter). LPS == 0
// (a single pass): pf is its prefetch distance. Otherwise pass b0 + Bs of the chunk prefetches its
// share, lines [pass * pf, (pass + 1) * pf) of the next chunk at next, LPS lines per step.
template <Kind K, int M, int MB, int NV, int J, int LPS, int... Bs>
inline void row_blocks(std::integer_sequence<int, Bs...>, const uint8_t* panel, const float* x, const uint32_t* xb,
                       int64_t s0, int64_t steps, int sub0, const uint8_t* next, int64_t pf, int64_t far, int b0,
                       float* yp, int64_t n, bool acc) {
  constexpr int64_t kXPerRow = K == Kind::kBf16Exact ? 2 : 1;  // floats of x per row and step
  const int64_t pf_len = LPS == 0 ? pf : (pf + LPS - 1) / LPS;
  (panel_pass<K, (M - Bs * MB < MB ? M - Bs * MB : MB), NV, J, LPS>(
       panel, x + kXPerRow * Bs * MB, xb + Bs * MB, M, s0, steps, sub0, next + (b0 + Bs) * pf * 64, pf_len,
       far, yp + Bs * MB * n, n, acc),
   ...);
}

// All passes over panels [p0, p1). Rows of x go in blocks of MB against NV sub-columns at a time
// (MB x NV accumulators; panels_for says which). When one block covers all 4 sub-columns (m <= 4),
// a panel is one pass over all of k, prefetched kPrefetchBytes ahead with T0 hints
// (kWeightPrefetchLocality: NTA halves the stream on Intel and gains nothing on Zen 5).
// Otherwise k goes in chunks of kChunkBytes of panel, each read by several passes (blocks x
// sub-column groups), and each pass prefetches its share of the next chunk into L1 (T0, as the
// later passes read it again) in address order: pass b of P the b-th P-th of the chunk's lines, so
// memory sees one sequential stream, spread evenly over the passes.
// Measured: docs/measurements/kernel-constants.md#packed-gemv-prefetch-hints-and-address-order-chunk-prefetches
template <Kind K, int M, int MB, int NV, int J>
void panels(const uint8_t* w, const float* x, const uint32_t* xb, float* y, int64_t n, int64_t k, int64_t p0,
            int64_t p1, bool acc) {
  constexpr bool kSingle = M <= MB && NV == 4;
  constexpr int64_t kStepCols = K == Kind::kBf16Exact || K == Kind::kBf16Dot ? 2 : 1;
  const int64_t all_steps = k / kStepCols, panel_bytes = all_steps * kStepBytes<K>;
  // equal chunks (a multiple of 16 columns each; only a panel's last one may be shorter), so that no
  // chunk has much less work than the next one, whose lines its passes prefetch
  const int64_t chunks = kSingle ? 1 : (panel_bytes + kChunkBytes - 1) / kChunkBytes;
  const int64_t chunk_steps = ((k / 16 + chunks - 1) / chunks) * (16 / kStepCols);
  // Several passes keep their partial sums in a panel-sized buffer (row stride 64) and write y
  // once per panel: y's m rows lie n floats apart, for most layers a multiple of 4 KiB, and would
  // share a few L1 sets with each other and with the chunk.
  // Measured: docs/measurements/kernel-constants.md#packed-gemv-partial-sums-in-a-panel-buffer
  alignas(64) float yb[kSingle ? 1 : M * kPackedPanelRows];
  constexpr int kBlocks = (M + MB - 1) / MB, kPasses = kBlocks * (4 / NV);
  // lines per step of each pass's share (a step has 4 kVecBytes); 0: a single pass
  constexpr int kLps = kSingle ? 0 : (4 * kVecBytes<K> / 64 + kPasses - 1) / kPasses;
  const int64_t far = !kSingle && far_prefetch_l2() ? kFarPrefetchBytes : 0;
  for (int64_t p = p0; p < p1; p++) {
    const uint8_t* panel = w + p * panel_bytes;
    float* yp = y + p * kPackedPanelRows;
    for (int64_t s0 = 0; s0 < all_steps; s0 += chunk_steps) {
      const int64_t steps = all_steps - s0 < chunk_steps ? all_steps - s0 : chunk_steps;
      // the next chunk follows in memory, also across panels (past the last one, prefetches of
      // lines that are not read are harmless)
      const uint8_t* next = panel + (s0 + steps) * kStepBytes<K>;
      int64_t pf = kPrefetchBytes;
      if constexpr (!kSingle) {
        const int64_t rest = all_steps - s0 - steps;
        const int64_t next_steps = rest == 0 || rest > chunk_steps ? chunk_steps : rest;
        pf = (next_steps * kStepBytes<K> / 64 + kPasses - 1) / kPasses;  // lines per pass
      }
      for (int g = 0; g < 4 / NV; g++)
        row_blocks<K, M, MB, NV, J, kLps>(std::make_integer_sequence<int, kBlocks>{}, panel, x, xb, s0, steps,
                                                 g * NV, next, pf, far, g * kBlocks, kSingle ? yp : yb,
                                                 kSingle ? n : kPackedPanelRows, kSingle ? acc : s0 > 0);
    }
    if constexpr (!kSingle) {
      for (int i = 0; i < M; i++)
        for (int v = 0; v < 4; v++) {
          const __m512 s = _mm512_load_ps(yb + i * kPackedPanelRows + 16 * v);
          float* out = yp + i * n + 16 * v;
          _mm512_storeu_ps(out, acc ? _mm512_add_ps(_mm512_loadu_ps(out), s) : s);
        }
    }
  }
}

using PanelsFn = void (*)(const uint8_t* w, const float* x, const uint32_t* xb, float* y, int64_t n, int64_t k,
                          int64_t p0, int64_t p1, bool acc);

// Blocks of rows x sub-columns, MB x NV accumulators, chosen per dtype and row count by
// measurement. bf16 from 8 rows takes dot products: one m x 2 block up to 14 rows (each line of a
// chunk read by one pass), blocks of 8 x 2 beyond; bf16 with 5 to 7 rows one block of 8 x 2. f32
// takes one m x 2 block from 5 to 14 rows except 12 (two blocks of 6 x 4) and two blocks of about
// m / 2 x 2 at 15; f16 one m x 2 block at 5 and 6 rows (from 7 rows it is FMA-bound). Everything
// else runs 4 x 4, x broadcast once per 4 vectors; 30 accumulators would leave no room for the
// weights.
// Measured: docs/measurements/kernel-constants.md#packed-gemv-block-shapes-per-dtype-and-row-count
// J > 1 where m x NV alone is too few independent chains (the step counts are even: k % 16 == 0).
template <int M>
PanelsFn panels_for(int32_t w_dtype) {
  constexpr int J = M <= 2 ? 2 : 1;
  if (w_dtype == RKV_DTYPE_F32) {
    if constexpr (M >= 5 && M <= 8) return &panels<Kind::kF32, M, 8, 2, 1>;
    else if constexpr (M == 12) return &panels<Kind::kF32, M, M / 2, 4, 1>;
    else if constexpr (M >= 9 && M <= 14) return &panels<Kind::kF32, M, M, 2, 1>;
    else if constexpr (M == 15) return &panels<Kind::kF32, M, (M + 1) / 2, 2, 1>;
    else return &panels<Kind::kF32, M, 4, 4, J>;
  }
  if (w_dtype == RKV_DTYPE_F16) {
    if constexpr (M >= 5 && M <= 6) return &panels<Kind::kF16, M, M, 2, 1>;
    else return &panels<Kind::kF16, M, 4, 4, J>;
  }
  if constexpr (M >= 8 && M <= 14) return &panels<Kind::kBf16Dot, M, M, 2, 1>;
  else if constexpr (M >= 8) return &panels<Kind::kBf16Dot, M, 8, 2, 1>;
  else if constexpr (M >= 5) return &panels<Kind::kBf16Exact, M, 8, 2, 1>;
  else return &panels<Kind::kBf16Exact, M, 4, 4, J>;
}

template <int... Ms>
PanelsFn pick_panels(int64_t m, int32_t w_dtype, std::integer_sequence<int, Ms...>) {
  PanelsFn fn = nullptr;
  ((m == Ms + 1 ? (fn = panels_for<Ms + 1>(w_dtype), 0) : 0), ...);
  return fn;
}
}  // namespace

int gemv_packed(const float* x, const void* w, int32_t w_dtype, float* y, int64_t m, int64_t n, int64_t k,
                bool accumulate) {
  const PanelsFn fn = pick_panels(m, w_dtype, std::make_integer_sequence<int, 16>{});
  // x interleaved by step (row i's step s at s * m + i): a step's m rows share one or two lines.
  // Row by row at stride k (a multiple of 1024 for most layers), m rows of x fall into the same
  // one or two L1 sets and evict each other.
  // Measured: docs/measurements/kernel-constants.md#packed-gemv-x-interleaved-by-step
  thread_local std::vector<uint32_t> xs;
  // m * k f32 (bf16 dot products: m * k / 2 bf16 pairs, then one row of bf16 for the rounding)
  const size_t words = static_cast<size_t>(m * k + k / 2);
  try {
    if (xs.size() < words) xs.resize(words);
  } catch (const std::bad_alloc&) {
    return set_error(RKV_ERR_OUT_OF_MEMORY, "rkv_linear_packed: cannot allocate %lld words of activations",
                     static_cast<long long>(words));
  }
  const int64_t cols = step_cols(w_dtype), steps = k / cols;
  const int64_t np = n / kPackedPanelRows;
  const bool parallel = m * n * k >= kParallelMacs && np >= 2;
  // run(p0, p1) over each thread's share of the panels
  const auto over_panels = [&](auto&& run) {
    rkv::parallel_region(parallel, [&] {
      const Share s = thread_share(np, 1, omp_get_num_threads(), omp_get_thread_num());
      if (s.begin < s.end) run(s.begin, s.end);
    });
    return RKV_OK;
  };
  const auto* wp = static_cast<const uint8_t*>(w);
  const AmxMode amx = w_dtype == RKV_DTYPE_BF16 && m >= 8 ? amx_mode() : AmxMode::kOff;
  if (amx != AmxMode::kOff) {
    // AMX tiles (dense_amx.h): x rounded to bf16 (RNE) as for vdpbf16ps, rows kept row-major
    uint16_t* xa = reinterpret_cast<uint16_t*>(xs.data());
    for (int64_t i = 0; i < m; i++) round_to_bf16(x + i * k, k, xa + i * k);
    return over_panels([&](int64_t p0, int64_t p1) { amx_bf16_panels(amx, xa, wp, y, m, n, k, p0, p1, accumulate); });
  }
  if (w_dtype == RKV_DTYPE_BF16 && m >= 8) {
    // dot products: x rounded to bf16 (RNE) once per call, row by row, then interleaved
    uint32_t* xp = xs.data();
    uint32_t* row = xs.data() + m * k;
    for (int64_t i = 0; i < m; i++) {
      round_to_bf16(x + i * k, k, reinterpret_cast<uint16_t*>(row));
      for (int64_t s = 0; s < steps; s++) xp[s * m + i] = row[s];
    }
  } else {
    float* xf = reinterpret_cast<float*>(xs.data());
    for (int64_t i = 0; i < m; i++)
      for (int64_t s = 0; s < steps; s++)
        for (int64_t c = 0; c < cols; c++) xf[(s * m + i) * cols + c] = x[i * k + s * cols + c];
  }
  const float* xf = reinterpret_cast<const float*>(xs.data());
  const uint32_t* xb = xs.data();
  return over_panels([&](int64_t p0, int64_t p1) { fn(wp, xf, xb, y, n, k, p0, p1, accumulate); });
}

int gemm_packed_blocks(const float* x, const void* w, int32_t w_dtype, float* y, int64_t m, int64_t n, int64_t k,
                       bool accumulate) {
  return for_gemv_blocks(m, [&](int64_t i0, int64_t rows) {
    return gemv_packed(x + i0 * k, w, w_dtype, y + i0 * n, rows, n, k, accumulate);
  });
}

void widen_packed_panels(const void* w, int32_t w_dtype, int64_t k, int64_t p0, int64_t np, float* out) {
  const int64_t ld = np * kPackedPanelRows;
  for (int64_t c = 0; c < k; c++)
    for (int64_t p = 0; p < np; p++) {
      const int64_t at = ((p0 + p) * k + c) * kPackedPanelRows;  // element (64 (p0 + p), c)
      float* o = out + c * ld + p * kPackedPanelRows;
      if (w_dtype == RKV_DTYPE_F32) {
        std::memcpy(o, static_cast<const float*>(w) + at, kPackedPanelRows * sizeof(float));
      } else {
        const auto* h = reinterpret_cast<const __m256i*>(static_cast<const uint16_t*>(w) + at);
        for (int v = 0; v < 4; v++) _mm512_storeu_ps(o + 16 * v, _mm512_cvtph_ps(_mm256_loadu_si256(h + v)));
      }
    }
}
#pragma GCC pop_options
#else
int gemv_packed(const float*, const void*, int32_t, float*, int64_t, int64_t, int64_t, bool) {
  return set_error(RKV_ERR_UNSUPPORTED, "rkv_linear_packed: packed weights need x86-64 with AVX-512");
}
int gemm_packed_blocks(const float*, const void*, int32_t, float*, int64_t, int64_t, int64_t, bool) {
  return set_error(RKV_ERR_UNSUPPORTED, "rkv_linear_packed: packed weights need x86-64 with AVX-512");
}
void widen_packed_panels(const void*, int32_t, int64_t, int64_t, int64_t, float*) {}
#endif

}  // namespace dense
}  // namespace rkv
