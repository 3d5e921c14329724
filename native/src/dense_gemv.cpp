// Small-m dense layer (decode batches), see dense_gemv.h. Scalar, AVX2+FMA+F16C and AVX-512
// variants of one kernel (dense_gemv_impl.h), chosen once per process by rkv_isa.h's probe, so
// a portable x86-64-v3 build still uses AVX-512 where the CPU has it.
#include "dense_gemv.h"

#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <new>
#include <type_traits>
#include <vector>

#include "rkv_common.h"
#include "rkv_dtype.h"
#include "rkv_isa.h"
#include "rkv_parallel.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
// GCC 12's AVX-512 headers build intrinsics on a self-initialized _mm512_undefined_* operand,
// which -W(maybe-)uninitialized reports once inlined (GCC bug 105593, fixed in 13).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

namespace rkv {
namespace dense {
namespace {

template <int DT>
struct Elem;
template <>
struct Elem<RKV_DTYPE_F32> {
  using T = float;
  static float to_float(float v) { return v; }
};
template <>
struct Elem<RKV_DTYPE_BF16> {
  using T = uint16_t;
  static float to_float(uint16_t v) { return bf16_to_float(v); }
};
template <>
struct Elem<RKV_DTYPE_F16> {
  using T = uint16_t;
  static float to_float(uint16_t v) { return f16_to_float(v); }
};

// How far ahead of the loads the weight stream is prefetched for m <= 2 (bytes / element size;
// past the row end it runs into the next rows, which are next in the stream). At a core's
// ~40 GB/s, 1 KiB ahead is ~25 ns, far less than a miss; 8 KiB ran fastest.
// Measured: docs/measurements/kernel-constants.md#small-m-gemv-prefetch-distance-for-one-or-two-rows
constexpr int kPrefetchBytes = 8192;
template <int DT>
constexpr int64_t kPrefetchElems = kPrefetchBytes / (int64_t)sizeof(typename Elem<DT>::T);
// m = 1 with rows too long for x to stay in L1 (dense_gemv_impl.h): two rows at a time, each
// prefetched this many elements ahead (4 KiB of bf16 / f16), the fastest of 1024 / 2048 / 4096.
// Measured: docs/measurements/kernel-constants.md#small-m-gemv-prefetch-distance-of-long-rows
constexpr int64_t kLongRowPrefetchElems = 2048;

// L1 data cache size (sysconf; 32 KiB where a VM does not report it, the smallest current x86
// L1), clamped to 16-64 KiB.
int64_t l1_bytes() {
  static const int64_t bytes = [] {
    const long l1 = sysconf(_SC_LEVEL1_DCACHE_SIZE);
    const int64_t b = l1 <= 0 ? 32 * 1024 : l1;
    return b < 16 * 1024 ? int64_t{16 * 1024} : b > 64 * 1024 ? int64_t{64 * 1024} : b;
  }();
  return bytes;
}

// Bytes of x per k-chunk (dense_gemv_impl.h). m >= 3: half of L1, the rest for the 4-row weight
// tiles and their prefetches. m = 2: a third, since each 4-row tile's chunk is bigger against x and
// the next one is in flight beside it. Where gemv_x_chunk_l2() (Zen 1 / Zen+), m >= 3 takes a
// quarter of L2 if that is more: those cores are bound by their arithmetic, and fewer chunks
// mean fewer passes over x.
// Measured: docs/measurements/kernel-constants.md#small-m-gemv-x-chunk-size
int64_t x_chunk_bytes(int64_t m) {
  if (m <= 2) return l1_bytes() / 3;
  // a quarter of L2 (sysconf; 0 where a VM does not report it: half of L1 then)
  static const int64_t from_l2 = gemv_x_chunk_l2() ? std::max<int64_t>(sysconf(_SC_LEVEL2_CACHE_SIZE), 0) / 4 : 0;
  return from_l2 > l1_bytes() / 2 ? from_l2 : l1_bytes() / 2;
}

using RangeFn = void (*)(const float* x, const void* w, float* y, int64_t m, int64_t n, int64_t k, int64_t j0,
                         int64_t j1, bool acc);

// ---------------------------------------------------------------- scalar (any CPU)
namespace scalar {
struct I {
  using V = float;
  static constexpr int W = 1;
  static constexpr int kNR = 2;
  static V zero() { return 0.f; }
  static V loadx(const float* p) { return *p; }
  template <int DT>
  static V load(const typename Elem<DT>::T* p) { return Elem<DT>::to_float(*p); }
  static V fma(V a, V b, V c) { return a * b + c; }
  static V add(V a, V b) { return a + b; }
  static float hsum(V v) { return v; }
};
#include "dense_gemv_impl.h"
}  // namespace scalar

#if defined(__x86_64__)
// ---------------------------------------------------------------- AVX2 + FMA + F16C
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
namespace avx2 {
#include "rkv_reduce_avx2.h"
struct I {
  using V = __m256;
  static constexpr int W = 8;
  // 4 x 3 accumulators + 3 weight vectors + x: all 16 registers. 12 independent FMA chains
  // (8 just cover 2 pipes x 4 cycles of latency, and stall whenever a load is late)
  // Measured: docs/measurements/kernel-constants.md#avx2-small-m-gemv-12-fma-chains
  static constexpr int kNR = 3;
  static V zero() { return _mm256_setzero_ps(); }
  static V loadx(const float* p) { return _mm256_loadu_ps(p); }
  template <int DT>
  static V load(const typename Elem<DT>::T* p) {
    if constexpr (DT == RKV_DTYPE_F32) {
      return _mm256_loadu_ps(p);
    } else if constexpr (DT == RKV_DTYPE_BF16) {
      __m256i v = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
      return _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
    } else {
      return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    }
  }
  static V fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static V add(V a, V b) { return _mm256_add_ps(a, b); }
  static float hsum(V v) { return hsum8(v); }
};
#include "dense_gemv_impl.h"

// m <= 2 with bf16 weights read as element pairs (where avx2_bf16_pairs holds; k % 16 == 0): one
// 32-byte load of 16 weights, a shift for the even elements and a mask for the odd ones, against
// x permuted to match (permute_pairs), instead of a zero-extending load and a shift per 8. On
// Zen 1's 128-bit units the widening had bound this kernel: at m = 1, 12.2-12.4 GB/s of weights
// with them in cache, against 14-15 GB/s of read.
static void permute_pairs(const float* x, int64_t k, float* xp) {
  for (int64_t b = 0; b < k; b += 16)
    for (int i = 0; i < 8; i++) {
      xp[b + i] = x[b + 2 * i];
      xp[b + 8 + i] = x[b + 2 * i + 1];
    }
}

// MR rows of permuted x (row stride k) against NR weight rows (stride k), each weight row
// prefetched pf elements ahead; y row stride n.
template <int MR, int NR>
static inline void pair_rows(const float* xp, int64_t k, const uint16_t* w, int64_t pf, float* y, int64_t n,
                             bool acc) {
  constexpr int U = 4;  // accumulators per (row, weight row): one per 8 elements of a 32-element step
  const __m256i odd = _mm256_set1_epi32((int)0xFFFF0000u);
  __m256 a[MR][NR][U];
  for (int r = 0; r < MR; r++)
    for (int c = 0; c < NR; c++)
      for (int u = 0; u < U; u++) a[r][c][u] = _mm256_setzero_ps();
  int64_t kk = 0;
  for (; kk + 32 <= k; kk += 32) {
    for (int c = 0; c < NR; c++) __builtin_prefetch(w + c * k + kk + pf, 0, kWeightPrefetchLocality);
    for (int c = 0; c < NR; c++) {
      const __m256i v0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + c * k + kk));
      const __m256i v1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + c * k + kk + 16));
      const __m256 w0 = _mm256_castsi256_ps(_mm256_slli_epi32(v0, 16)), w1 = _mm256_castsi256_ps(_mm256_and_si256(v0, odd));
      const __m256 w2 = _mm256_castsi256_ps(_mm256_slli_epi32(v1, 16)), w3 = _mm256_castsi256_ps(_mm256_and_si256(v1, odd));
      for (int r = 0; r < MR; r++) {
        const float* xr = xp + r * k + kk;
        a[r][c][0] = _mm256_fmadd_ps(_mm256_load_ps(xr), w0, a[r][c][0]);
        a[r][c][1] = _mm256_fmadd_ps(_mm256_load_ps(xr + 8), w1, a[r][c][1]);
        a[r][c][2] = _mm256_fmadd_ps(_mm256_load_ps(xr + 16), w2, a[r][c][2]);
        a[r][c][3] = _mm256_fmadd_ps(_mm256_load_ps(xr + 24), w3, a[r][c][3]);
      }
    }
  }
  if (kk < k) {  // 16 left (k % 16 == 0)
    for (int c = 0; c < NR; c++) {
      const __m256i v0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + c * k + kk));
      const __m256 w0 = _mm256_castsi256_ps(_mm256_slli_epi32(v0, 16)), w1 = _mm256_castsi256_ps(_mm256_and_si256(v0, odd));
      for (int r = 0; r < MR; r++) {
        const float* xr = xp + r * k + kk;
        a[r][c][0] = _mm256_fmadd_ps(_mm256_load_ps(xr), w0, a[r][c][0]);
        a[r][c][1] = _mm256_fmadd_ps(_mm256_load_ps(xr + 8), w1, a[r][c][1]);
      }
    }
  }
  for (int r = 0; r < MR; r++)
    for (int c = 0; c < NR; c++) {
      __m256 t = a[r][c][0];
      for (int u = 1; u < U; u++) t = _mm256_add_ps(t, a[r][c][u]);
      const float s = I::hsum(t);
      y[r * n + c] = acc ? y[r * n + c] + s : s;
    }
}

// Whether the pairs path takes m rows of x of k elements: as gemv_range's whole-row paths, m = 1,
// or m = 2 with x in three quarters of L1.
static bool takes_pairs(int64_t m, int64_t k) {
  return k % 16 == 0 && (m == 1 || (m == 2 && 2 * k * (int64_t)sizeof(float) <= l1_bytes() * 3 / 4));
}

// Output columns [j0, j1), one weight row at a time, or two (x loaded once per pair) where one
// row of x outgrows three quarters of L1.
static void gemv_bf16_pairs_range(const float* xp, const uint16_t* w, float* y, int64_t m, int64_t n, int64_t k,
                                  int64_t j0, int64_t j1, bool acc) {
  int64_t j = j0;
  if (m == 2) {
    for (; j < j1; j++) pair_rows<2, 1>(xp, k, w + j * k, kPrefetchElems<RKV_DTYPE_BF16>, y + j, n, acc);
    return;
  }
  if (k * (int64_t)sizeof(float) > l1_bytes() * 3 / 4)
    for (; j + 2 <= j1; j += 2) pair_rows<1, 2>(xp, k, w + j * k, kLongRowPrefetchElems, y + j, n, acc);
  for (; j < j1; j++) pair_rows<1, 1>(xp, k, w + j * k, kPrefetchElems<RKV_DTYPE_BF16>, y + j, n, acc);
}
}  // namespace avx2
#pragma GCC pop_options

// ---------------------------------------------------------------- AVX-512 (F/BW/VL/DQ)
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")
namespace avx512 {
#include "rkv_reduce_avx512.h"
struct I {
  using V = __m512;
  static constexpr int W = 16;
  static constexpr int kNR = 4;  // 4 x 4 accumulators + 4 weight vectors + x of 32 registers
  static V zero() { return _mm512_setzero_ps(); }
  static V loadx(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, V v) { _mm512_storeu_ps(p, v); }
  template <int DT>
  static V load(const typename Elem<DT>::T* p) {
    if constexpr (DT == RKV_DTYPE_F32) {
      return _mm512_loadu_ps(p);
    } else if constexpr (DT == RKV_DTYPE_BF16) {
      __m512i v = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
      return _mm512_castsi512_ps(_mm512_slli_epi32(v, 16));
    } else {
      return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    }
  }
  static V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static V add(V a, V b) { return _mm512_add_ps(a, b); }
  static float hsum(V v) { return _mm512_reduce_add_ps(v); }
  // lane j = the sum of a[j]'s lanes, for 16 vectors at once (rkv_reduce_avx512.h)
  static V reduce16(const V* a) { return reduce_16x16(a); }
};
#include "dense_gemv_impl.h"
}  // namespace avx512
#pragma GCC pop_options

// ---------------------------------------------------------------- AVX512-BF16 dot products
// bf16 weights with m >= kDotMinRows on a CPU with AVX512-BF16: x rounded to bf16 once per
// call, then vdpbf16ps (two bf16 products per f32 lane, 32 multiply-adds per instruction, no
// widening). Widened to f32, each weight element cost an FMA per row of x, which at m = 8 / 16
// needs 2x / 4x the FMA rate of a core to keep up with its memory (docs/measurements.md, Zen 5); the rounding
// is the one the m > 16 path (oneDNN's bf16 matmul) already makes, RNE as rkv::float_to_bf16.
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,avx2,fma,f16c")
namespace avx512bf16 {
#include "dense_gemv_blocks.h"
#include "rkv_bf16_round_avx512.h"
#include "rkv_reduce_avx512.h"

static inline __m512bh load_bh(const uint16_t* p) { return (__m512bh)_mm512_loadu_si512(p); }
static inline __m512bh load_bh(const uint16_t* p, __mmask32 mk) { return (__m512bh)_mm512_maskz_loadu_epi16(mk, p); }

// kb elements of MR rows of x (bf16, stride ldx) against NR weight rows (stride ld), 32 per
// step; the tail is masked (zeros add nothing). Prefetches each weight row pf elements ahead.
// Not inlined: inlined into dot_range through for_x_blocks, the tiles ran 3-5% slower (Zen 5,
// m = 8 / 16, A/B), as they were measured out of line.
template <int MR, int NR>
__attribute__((noinline)) static void dot_tile(const uint16_t* x, int64_t ldx, int64_t kb, const uint16_t* w,
                                               int64_t ld, int64_t pf, float* y, int64_t n, bool acc) {
  __m512 a[MR][NR];
  for (int r = 0; r < MR; r++)
    for (int c = 0; c < NR; c++) a[r][c] = _mm512_setzero_ps();
  int64_t kk = 0;
  for (; kk + 32 <= kb; kk += 32) {
    if (pf)
      for (int c = 0; c < NR; c++) __builtin_prefetch(w + c * ld + kk + pf, 0, kWeightPrefetchLocality);
    __m512bh wv[NR];
    for (int c = 0; c < NR; c++) wv[c] = load_bh(w + c * ld + kk);
    for (int r = 0; r < MR; r++) {
      const __m512bh xv = load_bh(x + r * ldx + kk);
      for (int c = 0; c < NR; c++) a[r][c] = _mm512_dpbf16_ps(a[r][c], xv, wv[c]);
    }
  }
  if (kk < kb) {
    const __mmask32 mk = (__mmask32)((uint64_t{1} << (kb - kk)) - 1);
    __m512bh wv[NR];
    for (int c = 0; c < NR; c++) wv[c] = load_bh(w + c * ld + kk, mk);
    for (int r = 0; r < MR; r++) {
      const __m512bh xv = load_bh(x + r * ldx + kk, mk);
      for (int c = 0; c < NR; c++) a[r][c] = _mm512_dpbf16_ps(a[r][c], xv, wv[c]);
    }
  }
  __m512 t[16];
  for (int i = 0; i < 16; i++) t[i] = i < MR * NR ? a[i / NR][i % NR] : _mm512_setzero_ps();
  alignas(64) float sums[16];
  _mm512_store_ps(sums, reduce_16x16(t));
  for (int r = 0; r < MR; r++)
    for (int c = 0; c < NR; c++) y[r * n + c] = acc ? y[r * n + c] + sums[r * NR + c] : sums[r * NR + c];
}

// Rows of x (a packed chunk of kb elements, row stride ldx) in blocks of 4 against NR weight
// rows (stride ld); the first block prefetches (the others find the weight rows in L1).
template <int NR>
static inline void dot_column(const uint16_t* x, int64_t m, int64_t ldx, int64_t kb, const uint16_t* w, int64_t ld,
                              int64_t pf, float* y, int64_t n, bool acc) {
  for_x_blocks(m, [&](auto mr, int64_t i0) {
    dot_tile<mr.value, NR>(x + i0 * ldx, ldx, kb, w, ld, i0 == 0 ? pf : 0, y + i0 * n, n, acc);
  });
}

// Row stride of a packed chunk of kb elements: whole 64-byte lines.
static inline int64_t packed_ld(int64_t kb) { return (kb + 31) / 32 * 32; }

// x rounded to bf16 and packed chunk by chunk (dot_range): the kc-element chunk starting at k0
// holds the m rows side by side (row stride packed_ld(kb)) at xb + m * k0 (kc is a multiple of
// 64, so only the last chunk's rows are padded; xb holds m * (k + 32) elements). Packed, the
// rows of a chunk lie in consecutive L1 sets; at their natural stride k (a power of two for most
// layers) all m rows and the weight rows mapped to the same few sets and evicted each other.
void pack_x(const float* x, int64_t m, int64_t k, int64_t kc, uint16_t* xb) {
  for (int64_t k0 = 0; k0 < k; k0 += kc) {
    const int64_t kb = k - k0 < kc ? k - k0 : kc, ld = packed_ld(kb);
    for (int64_t i = 0; i < m; i++) round_to_bf16(x + i * k + k0, kb, xb + m * k0 + i * ld);
  }
}

// Output columns [j0, j1) over k-chunks of kc elements (dot_chunk), each 4-row weight tile
// prefetching the same chunk of the next (as the widening path does for m >= 3). From 8 rows on
// this beats the widening path; below 8 rows it does not, hence kDotMinRows. From memory the
// chunks make each weight row a run of 1.5 KiB per pass, which the hardware prefetchers barely
// follow: that bounds it.
// Measured: docs/measurements/kernel-constants.md#small-m-gemv-bf16-dot-products-from-8-rows
void dot_range(const uint16_t* xb, const uint16_t* w, float* y, int64_t m, int64_t n, int64_t k, int64_t kc,
               int64_t j0, int64_t j1, bool acc) {
  for (int64_t k0 = 0; k0 < k; k0 += kc) {
    const int64_t kb = k - k0 < kc ? k - k0 : kc;
    const bool acc_chunk = acc || k0 > 0;
    const uint16_t* xc = xb + m * k0;
    const int64_t ldx = packed_ld(kb);
    int64_t j = j0;
    for (; j + 4 <= j1; j += 4) dot_column<4>(xc, m, ldx, kb, w + j * k + k0, k, 4 * k, y + j, n, acc_chunk);
    for (; j < j1; j++) dot_column<1>(xc, m, ldx, kb, w + j * k + k0, k, k, y + j, n, acc_chunk);
  }
}
}  // namespace avx512bf16
#pragma GCC pop_options
#endif

template <int DT>
RangeFn pick(CpuIsa isa) {
#if defined(__x86_64__)
  if (isa == kIsaAvx512) return &avx512::gemv_range<DT>;
  if (isa == kIsaAvx2) return &avx2::gemv_range<DT>;
#endif
  (void)isa;
  return &scalar::gemv_range<DT>;
}

// Elements per k-chunk of the dot-product path: kDotChunkElems, or fewer where the m rows of
// bf16 x would fill more than half of L1. The run length of each weight row, not the x
// footprint, decides the speed.
// Measured: docs/measurements/kernel-constants.md#small-m-gemv-dot-product-chunk-length
constexpr int64_t kDotChunkElems = 768;
int64_t dot_chunk(int64_t m) {
  const int64_t per_row = l1_bytes() / 2 / (m * (int64_t)sizeof(uint16_t)) / 64 * 64;
  return per_row < 128 ? 128 : per_row > kDotChunkElems ? kDotChunkElems : per_row;
}

// count elements of buf aligned to align bytes (a power of two, a multiple of sizeof(T)), buf grown
// as needed; nullptr where it cannot grow (the widening path, which needs no scratch, runs then).
template <typename T>
T* aligned_scratch(std::vector<T>& buf, size_t count, size_t align) {
  const size_t need = count + align / sizeof(T);
  try {
    if (buf.size() < need) buf.resize(need);
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
  return reinterpret_cast<T*>((reinterpret_cast<uintptr_t>(buf.data()) + align - 1) & ~uintptr_t{align - 1});
}

// Below this many multiply-adds one thread does the whole call (fork/join costs more).
constexpr int64_t kParallelMacs = int64_t{1} << 16;

// Runs f(j0, j1) on each thread's one contiguous range of the n weight rows (each thread streams
// its range; a multiple of 12 rows, so the register tiles of 2, 3 and 4 weight rows stay whole
// except at the end of the matrix).
template <typename F>
void for_row_ranges(int64_t m, int64_t n, int64_t k, const F& f) {
  const bool parallel = m * n * k >= kParallelMacs && n >= 8;
  rkv::parallel_region(parallel, [&] {
    const Share s = thread_share(n, 12, omp_get_num_threads(), omp_get_thread_num());
    if (s.begin < s.end) f(s.begin, s.end);
  });
}

}  // namespace

void gemv_small(const float* x, const void* w, int32_t w_dtype, float* y, int64_t m, int64_t n, int64_t k,
                bool accumulate) {
  static const CpuIsa isa = cpu_isa();
#if defined(__x86_64__)
  if (gemv_uses_bf16_dot(w_dtype, m)) {
    // 64-byte aligned, rows padded to whole lines (malloc aligns to 16: every 64-byte load of x
    // then touched two lines)
    thread_local std::vector<uint16_t> xb;
    if (uint16_t* xa = aligned_scratch(xb, static_cast<size_t>(m * (k + 32)), 64)) {
      const int64_t kc = dot_chunk(m);
      avx512bf16::pack_x(x, m, k, kc, xa);
      const auto* wb = static_cast<const uint16_t*>(w);
      for_row_ranges(m, n, k, [&](int64_t j0, int64_t j1) {
        avx512bf16::dot_range(xa, wb, y, m, n, k, kc, j0, j1, accumulate);
      });
      return;
    }
  }
  if (isa == kIsaAvx2 && w_dtype == RKV_DTYPE_BF16 && avx2::takes_pairs(m, k) && avx2_bf16_pairs()) {
    // x permuted once, by the calling thread (each thread permuting its own copy measured no better)
    thread_local std::vector<float> xb;
    if (float* xp = aligned_scratch(xb, static_cast<size_t>(m * k), 32)) {
      for (int64_t r = 0; r < m; r++) avx2::permute_pairs(x + r * k, k, xp + r * k);
      const auto* wb = static_cast<const uint16_t*>(w);
      for_row_ranges(m, n, k, [&](int64_t j0, int64_t j1) {
        avx2::gemv_bf16_pairs_range(xp, wb, y, m, n, k, j0, j1, accumulate);
      });
      return;
    }
  }
#endif
  const RangeFn fn = w_dtype == RKV_DTYPE_F32    ? pick<RKV_DTYPE_F32>(isa)
                     : w_dtype == RKV_DTYPE_BF16 ? pick<RKV_DTYPE_BF16>(isa)
                                                 : pick<RKV_DTYPE_F16>(isa);
  for_row_ranges(m, n, k, [&](int64_t j0, int64_t j1) { fn(x, w, y, m, n, k, j0, j1, accumulate); });
}

}  // namespace dense
}  // namespace rkv
