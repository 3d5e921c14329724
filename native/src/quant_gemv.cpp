// rkv_quant_linear: y (+)= x . w^T with w in ggml's block formats as stored (quant_blocks.h).
//
// Decode batches (m <= 16) are bound by streaming the weights once, as the dense kernels are. The
// activation rows are first quantized to 8 bits (per 32 values for Q8_0 / Q4_0 / Q5_0, per 256
// with sums of each 16 and 32 for Q4_K / Q6_K: llama.cpp's recipe), so that each block's dot
// product is an integer one: unsigned weight bytes times signed activation bytes, summed in pairs
// (vpmaddubsw) and then in 32 bits (vpmaddwd / vpdpwssd), or in one step with AVX-512 VNNI's
// vpdpbusd (on 256-bit registers, AVX512-VL). Signed Q8_0 weights take |w| and sign(x, w); the
// weights' offsets (Q4_0's 8, Q5_0's 16, Q6_K's 32) and Q4_K's mins are taken off with the
// activation sums. Each block's integer sum is then scaled in f32 by d_w * d_x. The SIMD kernels
// (quant_gemv_impl.h) are compiled for AVX2 and for AVX-512 VNNI under target pragmas and chosen
// at run time, so the portable (x86-64-v3) build runs the VNNI path where the CPU has it.
// Threads take contiguous ranges of weight rows; each weight row is read from memory once and
// multiplied with up to 4 rows of x at a time (the next 4 rows read it from L1).
//
// Larger m (prefill) is compute-bound: panels of weight rows are dequantized to f32 and
// multiplied by rkv_linear's GEMMs (oneDNN where built with it).
#include <omp.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <vector>

#include "dense_gemv.h"
#include "quant_blocks.h"
#include "quant_dequant.h"
#include "rkv_common.h"
#include "rkv_isa.h"
#include "rkv_parallel.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

// GCC 12's AVX-512 headers trip -W(maybe-)uninitialized on their own "__Y = __Y" idiom once
// inlined (as in dense_gemm.h); the warnings are about the headers, not this code.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace rkv {
namespace quant {
namespace {

constexpr int kMaxRowsPerPass = 4;
constexpr int64_t kDecodeMaxRows = 16;

enum Path { kScalar = 0, kAvx2 = 1, kVnni = 2 };

Path choose_path() {
#if defined(__x86_64__)
  if (cpu_avx512_vnni()) return kVnni;
  if (cpu_isa() >= kIsaAvx2) return kAvx2;
#endif
  return kScalar;
}

// Q8_0 weights go through the paired-block VNNI path as unsigned w + 128 when a row holds an even
// number of blocks, elsewhere as |w| times sign(x, w).
bool q8_0_unsigned(Path path, int64_t k) { return path == kVnni && (k / 32) % 2 == 0; }

// Q4_0 and Q5_0 take the two-block VNNI path (rows_nibble_pairs, activations in its order) when a
// row holds an even number of blocks.
bool nibble_pairs(int32_t fmt, Path path, int64_t k) {
  return path == kVnni && (k / 32) % 2 == 0 && (fmt == RKV_QUANT_Q4_0 || fmt == RKV_QUANT_Q5_0);
}

int64_t offset_of(int32_t fmt, Path path, int64_t k) {
  if (fmt == RKV_QUANT_Q8_0) return q8_0_unsigned(path, k) ? 128 : 0;
  return fmt == RKV_QUANT_Q4_0 ? 8 : fmt == RKV_QUANT_Q5_0 ? 16 : 0;
}

// The quantized activations of m rows (quant_blocks.h: ActRow), in one per-thread buffer.
struct Acts {
  std::vector<int8_t> qs;
  std::vector<float> d, d8;
  std::vector<int32_t> corr;
  std::vector<int16_t> s16, s32;
  ActRow row(int64_t r, int64_t k) {
    return {qs.data() + r * k, d.data() + r * (k / 32), d8.data() + r * (k / 4), corr.data() + r * (k / 4),
            s16.data() + r * (k / 16), s32.data() + r * (k / 32)};
  }
};

// Per 32 values: d = max|x| / 127, q = roundf(x / d) (ggml's quantize_row_q8_0 with d kept in f32).
void quantize_row_32(const float* x, int64_t k, int64_t offset, ActRow a) {
  for (int64_t b = 0; b < k / 32; b++) {
    const float* xb = x + b * 32;
    float amax = 0.f;
    for (int j = 0; j < 32; j++) amax = std::fmax(amax, std::fabs(xb[j]));
    const float d = amax / 127.f;
    const float id = d != 0.f ? 1.f / d : 0.f;
    int32_t sum = 0;
    for (int j = 0; j < 32; j++) {
      const int q = static_cast<int>(std::roundf(xb[j] * id));
      a.qs[b * 32 + j] = static_cast<int8_t>(q);
      sum += q;
    }
    a.d[b] = d;
    for (int l = 0; l < 8; l++) {
      a.d8[b * 8 + l] = d;
      a.corr[b * 8 + l] = -static_cast<int32_t>(offset / 8) * sum;
    }
  }
}

// Per 256 values as ggml's quantize_row_q8_K: iscale = -127 / (the value of largest magnitude),
// q = min(127, nearest(iscale * x)), d = 1 / iscale; plus the sums of each 16 and 32 values.
void quantize_row_256(const float* x, int64_t k, ActRow a) {
  for (int64_t b = 0; b < k / 256; b++) {
    const float* xb = x + b * 256;
    int8_t* q = a.qs + b * 256;
    float amax = 0.f, max = 0.f;
    for (int j = 0; j < 256; j++) {
      const float ax = std::fabs(xb[j]);
      if (ax > amax) {
        amax = ax;
        max = xb[j];
      }
    }
    if (amax == 0.f) {
      a.d[b] = 0.f;
      std::memset(q, 0, 256);
    } else {
      const float iscale = -127.f / max;
      for (int j = 0; j < 256; j++) {
        const int v = static_cast<int>(std::nearbyint(iscale * xb[j]));
        q[j] = static_cast<int8_t>(v < 127 ? v : 127);
      }
      a.d[b] = 1.f / iscale;
    }
    for (int s = 0; s < 16; s++) {
      int sum = 0;
      for (int j = 0; j < 16; j++) sum += q[s * 16 + j];
      a.s16[b * 16 + s] = static_cast<int16_t>(sum);
    }
    for (int s = 0; s < 8; s++) a.s32[b * 8 + s] = static_cast<int16_t>(a.s16[b * 16 + 2 * s] + a.s16[b * 16 + 2 * s + 1]);
  }
}

// ---- scalar ----

// sum over row j of w times x row a (integer dots per block, scaled in f32).
float dot_scalar(int32_t fmt, const uint8_t* wrow, int64_t k, const ActRow& a) {
  float acc = 0.f;
  if (fmt == RKV_QUANT_Q4_K) {
    for (int64_t b = 0; b < k / 256; b++) {
      const auto* blk = reinterpret_cast<const BlockQ4_K*>(wrow) + b;
      const int8_t* q = a.qs + b * 256;
      int32_t isum = 0, msum = 0;
      for (int c = 0; c < 4; c++) {
        uint8_t sc0, m0, sc1, m1;
        scale_min_k4(2 * c, blk->scales, &sc0, &m0);
        scale_min_k4(2 * c + 1, blk->scales, &sc1, &m1);
        int32_t lo = 0, hi = 0;
        for (int l = 0; l < 32; l++) {
          lo += (blk->qs[32 * c + l] & 0xF) * q[64 * c + l];
          hi += (blk->qs[32 * c + l] >> 4) * q[64 * c + 32 + l];
        }
        isum += sc0 * lo + sc1 * hi;
        msum += m0 * a.s32[b * 8 + 2 * c] + m1 * a.s32[b * 8 + 2 * c + 1];
      }
      acc += f16(blk->d) * a.d[b] * static_cast<float>(isum) - f16(blk->dmin) * a.d[b] * static_cast<float>(msum);
    }
    return acc;
  }
  if (fmt == RKV_QUANT_Q6_K) {
    for (int64_t b = 0; b < k / 256; b++) {
      const auto* blk = reinterpret_cast<const BlockQ6_K*>(wrow) + b;
      const int8_t* q = a.qs + b * 256;
      int32_t isum = 0;
      for (int h = 0; h < 2; h++) {
        const uint8_t* ql = blk->ql + 64 * h;
        const uint8_t* qh = blk->qh + 32 * h;
        const int8_t* sc = blk->scales + 8 * h;
        const int8_t* qx = q + 128 * h;
        for (int l = 0; l < 32; l++) {
          const int is = l / 16;
          int q[4];
          q6_k_values(ql, qh, l, q);
          isum += sc[is] * (q[0] - 32) * qx[l] + sc[is + 2] * (q[1] - 32) * qx[l + 32] +
                  sc[is + 4] * (q[2] - 32) * qx[l + 64] + sc[is + 6] * (q[3] - 32) * qx[l + 96];
        }
      }
      acc += f16(blk->d) * a.d[b] * static_cast<float>(isum);
    }
    return acc;
  }
  const int64_t bb = block_bytes(fmt);
  for (int64_t b = 0; b < k / 32; b++) {
    const uint8_t* blk = wrow + b * bb;
    uint16_t dh;
    std::memcpy(&dh, blk, 2);
    const int8_t* q = a.qs + b * 32;
    int32_t isum = 0;
    if (fmt == RKV_QUANT_Q8_0) {
      const auto* w = reinterpret_cast<const int8_t*>(blk + 2);
      for (int j = 0; j < 32; j++) isum += w[j] * q[j];
    } else if (fmt == RKV_QUANT_Q4_0) {
      const uint8_t* w = blk + 2;
      for (int j = 0; j < 16; j++) isum += ((w[j] & 0xF) - 8) * q[j] + ((w[j] >> 4) - 8) * q[j + 16];
    } else {
      uint32_t qh;
      std::memcpy(&qh, blk + 2, 4);
      const uint8_t* w = blk + 6;
      for (int j = 0; j < 16; j++) {
        int lo, hi;
        q5_0_values(w, qh, j, &lo, &hi);
        isum += (lo - 16) * q[j] + (hi - 16) * q[j + 16];
      }
    }
    acc += f16(dh) * a.d[b] * static_cast<float>(isum);
  }
  return acc;
}

#if defined(__x86_64__)
// ---- AVX2, and AVX-512 VNNI (vpdpbusd / vpdpwssd, 256- and 512-bit), chosen at run time ----
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
namespace avx2 {
#define RKV_QUANT_VNNI 0
#include "quant_gemv_impl.h"
#undef RKV_QUANT_VNNI
}  // namespace avx2
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")
namespace vnni {
#define RKV_QUANT_VNNI 1
#include "quant_gemv_impl.h"
#undef RKV_QUANT_VNNI
}  // namespace vnni
#pragma GCC pop_options
#endif

// One row of x quantized for the dot products of a 32-value (k256 false) or 256-value format.
void quantize_row(Path path, bool k256, const float* x, int64_t k, int64_t offset, bool pairs, ActRow a) {
#if defined(__x86_64__)
  if (path == kVnni) return k256 ? vnni::quantize_row_256_avx2(x, k, a) : vnni::quantize_row_32_avx2(x, k, offset, pairs, a);
  if (path == kAvx2) return k256 ? avx2::quantize_row_256_avx2(x, k, a) : avx2::quantize_row_32_avx2(x, k, offset, false, a);
#endif
  (void)path;
  (void)pairs;
  if (k256) quantize_row_256(x, k, a);
  else quantize_row_32(x, k, offset, a);
}

// Weight rows [j0, j1) against x rows a[0, mr) on the chosen path.
void rows(Path path, int32_t fmt, const uint8_t* w, int64_t j0, int64_t j1, int64_t k, const ActRow* a, int mr,
          float* y, int64_t ldy, bool acc) {
#if defined(__x86_64__)
  if (path == kVnni) return vnni::rows_path<kVnni>(fmt, w, j0, j1, k, a, mr, y, ldy, acc);
  if (path == kAvx2) return avx2::rows_path<kAvx2>(fmt, w, j0, j1, k, a, mr, y, ldy, acc);
#endif
  (void)path;
  const int64_t row_bytes = k / block_values(fmt) * block_bytes(fmt);
  for (int64_t j = j0; j < j1; j++)
    for (int r = 0; r < mr; r++) {
      const float v = dot_scalar(fmt, w + j * row_bytes, k, a[r]);
      y[r * ldy + j] = acc ? y[r * ldy + j] + v : v;
    }
}

int decode(const rkv_quant_linear_params& p) {
  const int64_t m = p.m, n = p.n, k = p.k;
  thread_local Acts acts;
  try {
    acts.qs.resize(static_cast<size_t>(m * k));
    acts.d.resize(static_cast<size_t>(m * (k / 32)));
    acts.d8.resize(static_cast<size_t>(m * (k / 4)));
    acts.corr.resize(static_cast<size_t>(m * (k / 4)));
    acts.s16.resize(static_cast<size_t>(m * (k / 16)));
    acts.s32.resize(static_cast<size_t>(m * (k / 32)));
  } catch (const std::bad_alloc&) {
    return set_error(RKV_ERR_OUT_OF_MEMORY, "rkv_quant_linear: cannot allocate %lld quantized activations",
                     static_cast<long long>(m * k));
  }
  ActRow a[kDecodeMaxRows];
  const bool k256 = block_values(p.format) == 256;
  const Path path = choose_path();
  for (int64_t r = 0; r < m; r++) {
    a[r] = acts.row(r, k);
    quantize_row(path, k256, p.x + r * p.ldx, k, offset_of(p.format, path, k), nibble_pairs(p.format, path, k), a[r]);
  }
  const auto* w = static_cast<const uint8_t*>(p.w);
  rkv::parallel_region(n * k >= (int64_t{1} << 15), [&] {
    const dense::Share s = dense::thread_share(n, 1, omp_get_num_threads(), omp_get_thread_num());
    for (int64_t r0 = 0; r0 < m; r0 += kMaxRowsPerPass) {
      const int mr = static_cast<int>(m - r0 < kMaxRowsPerPass ? m - r0 : kMaxRowsPerPass);
      if (s.begin < s.end) rows(path, p.format, w, s.begin, s.end, k, a + r0, mr, p.y + r0 * p.ldy, p.ldy, p.accumulate != 0);
    }
  });
  return RKV_OK;
}

// Prefill: panels of weight rows dequantized to f32, multiplied by rkv_linear's GEMMs into a
// contiguous [m, rows] block, then added into y's band.
constexpr int64_t kPanelBytes = int64_t{8} << 20;

int prefill(const rkv_quant_linear_params& p) {
  const int64_t m = p.m, n = p.n, k = p.k;
  const int64_t row_bytes = rkv_quant_row_bytes(p.format, k);
  int64_t rows = kPanelBytes / (4 * k);
  rows = rows < 64 ? 64 : rows / 64 * 64;
  if (rows > n) rows = n;
  thread_local std::vector<float> panel, out, xc;
  try {
    panel.resize(static_cast<size_t>(rows * k));
    out.resize(static_cast<size_t>(m * rows));
    if (p.ldx != k) xc.resize(static_cast<size_t>(m * k));
  } catch (const std::bad_alloc&) {
    return set_error(RKV_ERR_OUT_OF_MEMORY, "rkv_quant_linear: cannot allocate a %lld x %lld f32 weight panel",
                     static_cast<long long>(rows), static_cast<long long>(k));
  }
  const float* x = p.x;
  if (p.ldx != k) {
    for (int64_t r = 0; r < m; r++) std::memcpy(xc.data() + r * k, p.x + r * p.ldx, static_cast<size_t>(k) * 4);
    x = xc.data();
  }
  const auto* w = static_cast<const uint8_t*>(p.w);
  for (int64_t j0 = 0; j0 < n; j0 += rows) {
    const int64_t nb = n - j0 < rows ? n - j0 : rows;
    float* pp = panel.data();
    rkv::parallel_for(nb, nb * k >= (int64_t{1} << 16),
                      [&](int64_t r) { dequantize_row(p.format, w + (j0 + r) * row_bytes, k, pp + r * k); });
    const bool direct = p.ldy == nb;  // the whole output in one panel: straight into y
    float* o = direct ? p.y : out.data();
    const int st = rkv_linear(x, pp, RKV_DTYPE_F32, o, m, nb, k, direct ? p.accumulate : 0);
    if (st != RKV_OK) return st;
    if (!direct) {
      const bool acc = p.accumulate != 0;
      rkv::parallel_for(m, m * nb >= (int64_t{1} << 15), [&](int64_t r) {
        float* yr = p.y + r * p.ldy + j0;
        const float* src = o + r * nb;
        for (int64_t c = 0; c < nb; c++) yr[c] = acc ? yr[c] + src[c] : src[c];
      });
    }
  }
  return RKV_OK;
}

bool overlaps(const void* a, int64_t abytes, const void* b, int64_t bbytes) {
  auto pa = reinterpret_cast<uintptr_t>(a), pb = reinterpret_cast<uintptr_t>(b);
  return abytes > 0 && bbytes > 0 && pa < pb + static_cast<uintptr_t>(bbytes) &&
         pb < pa + static_cast<uintptr_t>(abytes);
}

}  // namespace

const char* dot_path_name() {
  switch (choose_path()) {
    case kVnni: return "avx512_vnni";
    case kAvx2: return "avx2";
    default: return "scalar";
  }
}

}  // namespace quant
}  // namespace rkv

extern "C" {

RKV_API int rkv_quant_linear(const rkv_quant_linear_params* p) {
  RKV_CHECK_PTR(p);
  const int64_t m = p->m, n = p->n, k = p->k;
  RKV_CHECK(m >= 0 && n >= 0 && k >= 0, "rkv_quant_linear: negative shape m=%lld n=%lld k=%lld",
            static_cast<long long>(m), static_cast<long long>(n), static_cast<long long>(k));
  const int64_t row_bytes = rkv_quant_row_bytes(p->format, k);
  RKV_CHECK(row_bytes >= 0, "rkv_quant_linear: format %d (%s) with rows of %lld values: not a whole number of blocks "
            "of a known format", p->format, rkv::quant::format_name(p->format), static_cast<long long>(k));
  RKV_CHECK(p->ldx >= k && p->ldy >= n, "rkv_quant_linear: ldx %lld < k %lld or ldy %lld < n %lld",
            static_cast<long long>(p->ldx), static_cast<long long>(k), static_cast<long long>(p->ldy),
            static_cast<long long>(n));
  const int64_t lim = std::numeric_limits<int64_t>::max() / 8;
  RKV_CHECK((m == 0 || (p->ldx <= lim / m && p->ldy <= lim / m)) && (n == 0 || row_bytes <= lim / n),
            "rkv_quant_linear: shape m=%lld n=%lld k=%lld overflows", static_cast<long long>(m),
            static_cast<long long>(n), static_cast<long long>(k));
  if (m == 0 || n == 0) return RKV_OK;
  RKV_CHECK_PTR(p->y);
  if (k == 0) {
    if (!p->accumulate)
      for (int64_t r = 0; r < m; r++) std::memset(p->y + r * p->ldy, 0, static_cast<size_t>(n) * 4);
    return RKV_OK;
  }
  RKV_CHECK_PTR(p->x);
  RKV_CHECK_PTR(p->w);
  const int64_t ybytes = ((m - 1) * p->ldy + n) * 4;
  RKV_CHECK(!rkv::quant::overlaps(p->y, ybytes, p->x, ((m - 1) * p->ldx + k) * 4) &&
                !rkv::quant::overlaps(p->y, ybytes, p->w, n * row_bytes),
            "rkv_quant_linear: y must not overlap x or w");
  return m <= rkv::quant::kDecodeMaxRows ? rkv::quant::decode(*p) : rkv::quant::prefill(*p);
}

}  // extern "C"
