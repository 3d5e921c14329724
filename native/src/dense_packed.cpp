// Packed linear weights (dense_packed.h): the layout, the in-place packing, and the small-m
// GEMV over it (one range of 64-row panels per thread, each panel read as one stream; panels()
// below says how the passes go). Per 64-byte vector (16 rows x 2 columns of k) and row of x:
// m < 8, two FMAs on the widened even / odd columns against broadcast f32 x (exact x, as
// gemv_small); m >= 8, one vdpbf16ps against a broadcast bf16 pair of x (x rounded, as
// gemv_small and oneDNN past 16 rows).
#include "dense_packed.h"

#include <omp.h>

#include <cstdint>
#include <cstring>
#include <new>
#include <utility>
#include <vector>

#include "dense_gemv.h"
#include "rkv_common.h"
#include "rkv_dtype.h"
#include "rkv_isa.h"

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

// Software prefetch distance of the panel stream. Zen 5, 1 thread, bf16, n = 8192, k = 3072, of
// read (a prototype of these loops): none / 4 / 8 / 16 KiB: m = 8 0.66 / 0.69 / 0.72 / 0.67,
// m = 16 0.35 / 0.57 / 0.72 / 0.70.
constexpr int64_t kPrefetchBytes = 8192;
// Columns of k per chunk when a panel is read in several passes (m >= 5): 16 KiB of panel, which
// stays in L1 between the passes while the next chunk is prefetched. Zen 5, 1 thread, k = 3072,
// of read, chunks of 128 / 512 / 2048 columns: m = 8 0.76-0.84 / 0.66-0.68 / 0.67-0.68, m = 16
// 0.43-0.56 / 0.47-0.51 / 0.47-0.57.
constexpr int64_t kChunkCols = 128;
// Below this many multiply-adds one thread does the whole call.
constexpr int64_t kParallelMacs = int64_t{1} << 16;

}  // namespace

bool packed_supported(int32_t w_dtype, int64_t n, int64_t k) {
#if defined(__x86_64__) && defined(RKV_HAVE_DNNL)
  return w_dtype == RKV_DTYPE_BF16 && n > 0 && k > 0 && n % kPackedPanelRows == 0 && k % 16 == 0 &&
         cpu_isa() == kIsaAvx512 && cpu_avx512_bf16();
#else
  (void)w_dtype, (void)n, (void)k;
  return false;
#endif
}

// On the calling thread only: an OpenMP region here, on a thread other than the engine's, gave
// the process a second OpenMP thread pool, more pool threads than cores, and libgomp then stops
// spinning between regions: every kernel call of the engine woke its worker from the kernel
// (small model, continuous batching, 2 threads: 700 -> 640 tok/s). Callers pack matrices in
// parallel from their own threads.
int pack_panels(uint16_t* w, int64_t n, int64_t k, bool to_packed) {
  const int64_t panel = kPackedPanelRows * k;
  std::vector<uint16_t> tmp;
  try {
    tmp.resize(static_cast<size_t>(panel));
  } catch (const std::bad_alloc&) {
    return set_error(RKV_ERR_OUT_OF_MEMORY, "rkv_linear_pack: cannot allocate a panel of %lld elements",
                     static_cast<long long>(panel));
  }
  for (int64_t p = 0; p < n / kPackedPanelRows; p++) {
    uint16_t* base = w + p * panel;
    std::memcpy(tmp.data(), base, static_cast<size_t>(panel) * sizeof(uint16_t));
    for (int64_t j = 0; j < kPackedPanelRows; j++)
      for (int64_t c = 0; c < k; c++) {
        const int64_t packed = ((c / 2) * kPackedPanelRows + j) * 2 + c % 2, plain = j * k + c;
        if (to_packed) base[packed] = tmp[static_cast<size_t>(plain)];
        else base[plain] = tmp[static_cast<size_t>(packed)];
      }
  }
  return RKV_OK;
}

#if defined(__x86_64__)
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,avx2,fma,f16c")
namespace {
#include "rkv_bf16_round_avx512.h"

// One pass: k-pairs [q0, q0 + pairs) of sub-columns sub0 .. sub0 + NV - 1 of the panel at w (u32
// pairs, 64 per k-pair), M rows of x, interleaved by k-pair (gemv_packed); y row stride n. DOT: xb
// holds bf16 pairs; else x holds f32 pairs. J accumulator sets over alternate k-pairs (m = 1, 2: enough
// independent FMA chains). pf: prefetch the whole 256-byte k-pair row that far ahead.
template <int M, int NV, int J, bool DOT, int kHint>
__attribute__((noinline)) void panel_pass(const uint32_t* w, const float* x, const uint32_t* xb, int64_t ldq, int64_t q0,
                                          int64_t pairs, int sub0, int64_t pf, float* y, int64_t n,
                                          bool acc) {
  __m512 a[J][M][NV];
  for (int j = 0; j < J; j++)
    for (int i = 0; i < M; i++)
      for (int v = 0; v < NV; v++) a[j][i][v] = _mm512_setzero_ps();
  const __m512i hi_mask = _mm512_set1_epi32(static_cast<int>(0xFFFF0000u));
  for (int64_t q = q0; q < q0 + pairs; q += J) {
    for (int j = 0; j < J; j++) {
      const uint32_t* row = w + (q + j) * kPackedPanelRows;
      if (pf) {
        const char* ahead = reinterpret_cast<const char*>(row + 16 * sub0) + pf;
        for (int l = 0; l < NV; l++) _mm_prefetch(ahead + 64 * l, static_cast<_mm_hint>(kHint));
      }
      __m512i wv[NV];
      for (int v = 0; v < NV; v++) wv[v] = _mm512_loadu_si512(row + 16 * (sub0 + v));
      if constexpr (DOT) {
        for (int i = 0; i < M; i++) {
          const __m512bh xv = (__m512bh)_mm512_set1_epi32(static_cast<int>(xb[(q + j) * ldq + i]));
          for (int v = 0; v < NV; v++) a[j][i][v] = _mm512_dpbf16_ps(a[j][i][v], (__m512bh)wv[v], xv);
        }
      } else {
        // one vector's even / odd columns at a time against x broadcast from memory in each FMA
        // (embedded broadcasts): with all 2 x NV widened vectors and 2 x m broadcasts held in
        // registers beside 16 accumulators, GCC 12 kept most accumulators on the stack, a load and
        // a store per FMA pair (m = 4, in L2: 36 against 46 GB/s row-major)
        const float* xq = x + (q + j) * ldq * 2;
        for (int v = 0; v < NV; v++) {
          const __m512 even = _mm512_castsi512_ps(_mm512_slli_epi32(wv[v], 16));
          const __m512 odd = _mm512_castsi512_ps(_mm512_and_si512(wv[v], hi_mask));
          for (int i = 0; i < M; i++)
            a[j][i][v] = _mm512_fmadd_ps(odd, _mm512_set1_ps(xq[2 * i + 1]),
                                         _mm512_fmadd_ps(even, _mm512_set1_ps(xq[2 * i]), a[j][i][v]));
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

// The passes of one sub-column group over rows of x in blocks of MB (the last one shorter); the
// first block prefetches.
template <int M, int MB, int NV, int J, bool DOT, int kHint, int... Bs>
inline void row_blocks(std::integer_sequence<int, Bs...>, const uint32_t* panel, const float* x, const uint32_t* xb,
                       int64_t q0, int64_t pairs, int sub0, int64_t pf, float* yp, int64_t n, bool acc) {
  (panel_pass<(M - Bs * MB < MB ? M - Bs * MB : MB), NV, J, DOT, kHint>(panel, x + 2 * Bs * MB, xb + Bs * MB, M, q0,
                                                                         pairs, sub0, Bs == 0 ? pf : 0,
                                                                         yp + Bs * MB * n, n, acc),
   ...);
}

// All passes over panels [p0, p1). Rows of x go in blocks of MB (4 with f32 FMAs, 8 with dot
// products) against NV sub-columns at a time (MB x NV = 16 accumulators). When one block covers
// all 4 sub-columns (m <= 4), a panel is one pass over all of k, prefetched kPrefetchBytes ahead
// with NTA hints (to L1 only: with T0 hints the stream also went through L2 into the L3, which
// cost the engine's other kernels their cached data: small model, 1 thread, 150 -> 182 tok/s).
// Otherwise k goes in chunks of kChunkCols, each read by several passes (blocks x sub-column
// groups): the first block of each group prefetches its lines of the next chunk into L1 (T0, as
// the later passes read them again), so memory sees one sequential stream spread over the passes.
template <int M, int MB, int NV, int J, bool DOT>
void panels(const uint16_t* w, const float* x, const uint32_t* xb, float* y, int64_t n, int64_t k, int64_t p0,
            int64_t p1, bool acc) {
  constexpr bool kSingle = M <= MB && NV == 4;
  // equal chunks (a multiple of 16 columns each), so that a chunk's prefetch distance lands on the
  // same place of the next chunk, also across panels
  const int64_t chunks = kSingle ? 1 : (k + kChunkCols - 1) / kChunkCols;
  const int64_t chunk_pairs = ((k / 16 + chunks - 1) / chunks) * 8, all_pairs = k / 2;
  const int64_t pf = kSingle ? kPrefetchBytes : chunk_pairs * kPackedPanelRows * 4;
  constexpr int kHint = kSingle ? _MM_HINT_NTA : _MM_HINT_T0;
  for (int64_t p = p0; p < p1; p++) {
    const uint32_t* panel = reinterpret_cast<const uint32_t*>(w + p * kPackedPanelRows * k);
    float* yp = y + p * kPackedPanelRows;
    for (int64_t q0 = 0; q0 < all_pairs; q0 += chunk_pairs) {
      const int64_t pairs = all_pairs - q0 < chunk_pairs ? all_pairs - q0 : chunk_pairs;
      const bool acc_chunk = acc || q0 > 0;
      for (int g = 0; g < 4 / NV; g++)
        row_blocks<M, MB, NV, J, DOT, kHint>(std::make_integer_sequence<int, (M + MB - 1) / MB>{}, panel, x, xb, q0,
                                             pairs, g * NV, pf, yp, n, acc_chunk);
    }
  }
}
}  // namespace
#pragma GCC pop_options

namespace {
using PanelsFn = void (*)(const uint16_t* w, const float* x, const uint32_t* xb, float* y, int64_t n, int64_t k,
                          int64_t p0, int64_t p1, bool acc);

// m >= 8: dot products, blocks of 8 rows x 2 sub-columns (4 x 4, a broadcast per 4 vectors instead
// of 2, ran 0.88x: A/B, 1 thread, m = 8 / 12 / 16); m < 8: f32 FMAs, blocks of 4 rows x 4
// sub-columns (x broadcast once per 4 vectors; blocks of m rows x 2 sub-columns broadcast each x
// twice as often and ran at 0.53 of read against 0.65 row-major, m = 6, 2 threads). J > 1 where
// m x NV alone is too few independent chains (k / 2 is even: k % 16 == 0).
template <int M>
PanelsFn panels_for() {
  if constexpr (M >= 8) return &panels<M, 8, 2, 1, true>;
  else if constexpr (M <= 2) return &panels<M, 4, 4, 2, false>;
  else return &panels<M, 4, 4, 1, false>;
}

template <int... Ms>
PanelsFn pick_panels(int64_t m, std::integer_sequence<int, Ms...>) {
  PanelsFn fn = nullptr;
  ((m == Ms + 1 ? (fn = panels_for<Ms + 1>(), 0) : 0), ...);
  return fn;
}
}  // namespace

int gemv_packed(const float* x, const uint16_t* w, float* y, int64_t m, int64_t n, int64_t k, bool accumulate) {
  const PanelsFn fn = pick_panels(m, std::make_integer_sequence<int, 16>{});
  // x interleaved by k-pair (row i's pair q at q * m + i): a k-pair's m rows share one or two
  // lines. Row by row at stride k (a multiple of 1024 for most layers), m rows of x fell into the
  // same one or two L1 sets and evicted each other (Zen 5, 1 thread, m = 16: 0.43-0.47 -> 0.52 of read).
  thread_local std::vector<uint32_t> xs;
  // m * k / 2 pairs, bf16 (one word each) or f32 (two); then, for rounding, one row of bf16
  const size_t words = static_cast<size_t>(m * k + k / 2);
  try {
    if (xs.size() < words) xs.resize(words);
  } catch (const std::bad_alloc&) {
    return set_error(RKV_ERR_OUT_OF_MEMORY, "rkv_linear_packed: cannot allocate %lld words of activations",
                     static_cast<long long>(words));
  }
  const int64_t pairs = k / 2;
  if (m >= 8) {
    // dot products: x rounded to bf16 (RNE) once per call, row by row, then interleaved
    uint32_t* xp = xs.data();
    uint32_t* row = xs.data() + m * k;
    for (int64_t i = 0; i < m; i++) {
      round_to_bf16(x + i * k, k, reinterpret_cast<uint16_t*>(row));
      for (int64_t q = 0; q < pairs; q++) xp[q * m + i] = row[q];
    }
  } else {
    float* xf = reinterpret_cast<float*>(xs.data());
    for (int64_t i = 0; i < m; i++)
      for (int64_t q = 0; q < pairs; q++) {
        xf[(q * m + i) * 2] = x[i * k + 2 * q];
        xf[(q * m + i) * 2 + 1] = x[i * k + 2 * q + 1];
      }
  }
  const float* xf = reinterpret_cast<const float*>(xs.data());
  const uint32_t* xb = xs.data();
  const int64_t np = n / kPackedPanelRows;
  const bool parallel = m * n * k >= kParallelMacs && np >= 2;
#pragma omp parallel if (parallel)
  {
    const Share s = thread_share(np, 1, omp_get_num_threads(), omp_get_thread_num());
    if (s.begin < s.end) fn(w, xf, xb, y, n, k, s.begin, s.end, accumulate);
  }
  return RKV_OK;
}
#else
int gemv_packed(const float*, const uint16_t*, float*, int64_t, int64_t, int64_t, bool) {
  return set_error(RKV_ERR_UNSUPPORTED, "rkv_linear_packed: packed weights need x86-64 with AVX512-BF16");
}
#endif

}  // namespace dense
}  // namespace rkv
