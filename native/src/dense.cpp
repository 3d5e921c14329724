// Dense ops of the model runner (CPU): linear (GEMM), RMSNorm (x.w or x.(1+w)), rotary
// embedding from an inv_freq table, SiLU*mul, embedding gather, residual add, argmax. f32 activations throughout; weights f32, bf16 or f16.
//
// GEMM strategy (y[m,n] = x[m,k] . w[n,k]^T):
//   m <= 16       (decode) dense_gemv.cpp for every weight dtype: one weight stream per thread
//                 (bf16 from m = 8 on with AVX512-BF16: x rounded to bf16, vdpbf16ps).
//   m <= 32       on Zen 1 (rkv_isa.h: gemv_up_to_32_rows) the same kernel in two blocks.
//   f32 weights   oneDNN dnnl_sgemm (row-major, B transposed); built-in kernel without oneDNN.
//   bf16 weights  on a CPU with native bf16 dot products (AVX512-BF16 or AMX): oneDNN matmul
//                 with bf16 activations and weights, f32 output; the activations are rounded
//                 to bf16 (RNE) for it, as bf16 inference does everywhere.
//   bf16 and f16  otherwise (AVX2, plain AVX-512): panels of weight rows widened to f32 (exact)
//                 and multiplied with dnnl_sgemm; the widening reads each weight once per call
//                 and costs a few percent of a compute-bound GEMM, where oneDNN's bf16 matmul
//                 without hardware support ran 3x slower than f32 (measured: AVX2 Zen 3).
//                 Without oneDNN: the built-in kernel (bf16) or dense_gemv.cpp per block of
//                 16 rows (f16).
#include <omp.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <vector>

#include "dense_gemm.h"
#include "dense_gemv.h"
#include "dense_packed.h"
#include "kv_convert.h"
#include "rkv_argmax.h"
#include "rkv_common.h"
#include "rkv_dense_math.h"
#include "rkv_isa.h"
#include "rkv_parallel.h"
#include "rkv_region_scratch.h"

#if defined(RKV_HAVE_DNNL)
#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl.hpp>
#endif

namespace {

using rkv::dense::bf16_bits_to_float;
using rkv::dense::float_to_bf16_bits;

constexpr int64_t kBf16MatmulMinRows = 8;
// Weight rows widened to f32 at a time (a panel of kPanelRows x k floats per call).
constexpr int64_t kPanelRows = 256;
// Below this many elements an OpenMP region costs more than it saves.
constexpr int64_t kParallelElems = int64_t{1} << 15;

bool mul_fits(int64_t a, int64_t b, int64_t limit) { return a == 0 || b <= limit / a; }

#if defined(RKV_HAVE_DNNL)
// One engine for the process; a stream per calling thread (streams are not shared).
dnnl::engine& cpu_engine() {
  static dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  return eng;
}
dnnl::stream& cpu_stream() {
  thread_local dnnl::stream s(cpu_engine());
  return s;
}

// True when the CPU multiplies bf16 natively (AVX512-BF16 or AMX-BF16): then oneDNN's bf16
// matmul is the fast path; otherwise it emulates it and widening to f32 is faster.
bool native_bf16_dot() {
  static const bool yes = [] {
    __builtin_cpu_init();
    return rkv::cpu_avx512_bf16() || __builtin_cpu_supports("amx-bf16");
  }();
  return yes;
}

// Runs f(j0, j1) on each OpenMP thread's share of the n output columns (multiples of 64), each
// calling dnnl_sgemm for its own columns: called inside a parallel region, oneDNN's sgemm runs on
// the calling thread only, and scales with the threads where oneDNN's own threading of one call
// does not. Returns the first thread's error, if any.
// Measured: docs/measurements/kernel-constants.md#onednn-gemm-split-by-columns
template <typename F>
int for_column_shares(int64_t m, int64_t n, int64_t k, const F& f) {
  int status = RKV_OK;
  rkv::parallel_region(m * n * k >= kParallelElems * 64, [&] {
    const rkv::dense::Share s = rkv::dense::thread_share(n, 64, omp_get_num_threads(), omp_get_thread_num());
    const int st = s.begin < s.end ? f(s.begin, s.end) : RKV_OK;
    if (st != RKV_OK) {
#pragma omp critical(rkv_dense_gemm_status)
      if (status == RKV_OK) status = st;
    }
  });
  return status;
}

int sgemm_status(dnnl_status_t st) {
  return st == dnnl_success
             ? RKV_OK
             : rkv::set_error(RKV_ERR_INTERNAL, "rkv_linear: dnnl_sgemm failed with status %d", static_cast<int>(st));
}

// y (+)= x . w^T for f32 w. Up to kSgemmOwnThreadsRows rows of x: dnnl_sgemm per thread on its
// columns (for_column_shares); more: one dnnl_sgemm threaded by oneDNN, which splits m too and
// was faster there (2 threads, GFLOP/s, own / column shares: m = 512, k = 768, n = 4096 412-423 /
// 343-354; m = 256 387 / 417; m = 64, n = k = 2048 129 / 301).
constexpr int64_t kSgemmOwnThreadsRows = 256;
int gemm_f32(const float* x, const float* w, float* y, int64_t m, int64_t n, int64_t k, bool acc) {
  if (m > kSgemmOwnThreadsRows)
    return sgemm_status(dnnl_sgemm('N', 'T', m, n, k, 1.f, x, k, w, k, acc ? 1.f : 0.f, y, n));
  return for_column_shares(m, n, k, [&](int64_t j0, int64_t j1) {
    return sgemm_status(dnnl_sgemm('N', 'T', m, j1 - j0, k, 1.f, x, k, w + j0 * k, k, acc ? 1.f : 0.f, y + j0, n));
  });
}

// Each thread's share of the output columns (for_column_shares) in equal groups of at most
// kPanelRows, rounded up to `unit` (a share of 384 went as 256 + 128, and the 128-row sgemm ran at
// half speed: m = 512, n = k = 768, 2 threads 340 against 460 GFLOP/s): fill(j0, nb, p) widens
// columns [j0, j0 + nb) of w^T into the thread's f32 panel p as dnnl_sgemm's B (trans_b 'T':
// [nb, k], 'N': [k, nb]), which then multiplies it into y's columns (ldc = n).
template <typename Fill>
int gemm_f32_panels(const float* x, float* y, int64_t m, int64_t n, int64_t k, bool acc, int64_t unit, char trans_b,
                    const char* fn, const Fill& fill) {
  return for_column_shares(m, n, k, [&](int64_t c0, int64_t c1) {
    thread_local std::vector<float> panel;
    const int64_t groups = (c1 - c0 + kPanelRows - 1) / kPanelRows;
    const int64_t rows = ((c1 - c0 + groups - 1) / groups + unit - 1) / unit * unit;
    try {
      if (panel.size() < static_cast<size_t>(rows * k)) panel.resize(static_cast<size_t>(rows * k));
    } catch (const std::bad_alloc&) {
      return rkv::set_error(RKV_ERR_OUT_OF_MEMORY, "%s: cannot allocate an f32 weight panel of %lld x %lld", fn,
                            static_cast<long long>(rows), static_cast<long long>(k));
    }
    float* p = panel.data();
    for (int64_t j0 = c0; j0 < c1; j0 += rows) {
      const int64_t nb = c1 - j0 < rows ? c1 - j0 : rows;
      fill(j0, nb, p);
      const int st = sgemm_status(dnnl_sgemm('N', trans_b, m, nb, k, 1.f, x, k, p, trans_b == 'T' ? k : nb,
                                             acc ? 1.f : 0.f, y + j0, n));
      if (st != RKV_OK) return st;
    }
    return RKV_OK;
  });
}

// y (+)= x . w^T for bf16/f16 w through f32 panels: each thread widens rows of its own columns
// (exactly) into its own panel. 2 threads, f16, GFLOP/s, one shared panel widened by all / own
// panels: m = 64, n = k = 2048 130 / 288; m = 512, n = 8192, k = 2048 355 / 425; m = 2048, n = k =
// 3072 326 / 424; m = 512, k = 768, n = 4096 440 / 448.
int gemm_widened(const float* x, const void* w, int32_t w_dtype, float* y, int64_t m, int64_t n, int64_t k,
                 bool acc) {
  const rkv::RowConverter widen = rkv::row_converter(w_dtype, RKV_DTYPE_F32, 1.f);
  const auto* wb = static_cast<const uint8_t*>(w);
  const int64_t wsize = rkv::dtype_size(w_dtype);
  return gemm_f32_panels(x, y, m, n, k, acc, 16, 'T', "rkv_linear", [&](int64_t j0, int64_t nb, float* p) {
    for (int64_t r = 0; r < nb; r++) widen.fn(wb + (j0 + r) * k * wsize, p + r * k, k, widen.scale);
  });
}

// y (+)= x . w^T for packed f32 / f16 w (dense_packed.h): the same, each group of 64-row panels
// widened into a row-major [k, rows] B, which dnnl_sgemm takes faster than the row-major paths'
// [rows, k] ('T').
// Measured: docs/measurements/kernel-constants.md#packed-weights-through-onednn-gemm
int gemm_packed_widened(const float* x, const void* w, int32_t w_dtype, float* y, int64_t m, int64_t n, int64_t k,
                        bool acc) {
  constexpr int64_t kPanel = rkv::dense::kPackedPanelRows;
  return gemm_f32_panels(x, y, m, n, k, acc, kPanel, 'N', "rkv_linear_packed", [&](int64_t j0, int64_t nb, float* p) {
    rkv::dense::widen_packed_panels(w, w_dtype, k, j0 / kPanel, nb / kPanel, p);
  });
}
#endif

// The argument checks of rkv_linear and rkv_linear_packed; *done when the call has nothing
// (more) to do (m or n zero; k zero, where y is zeroed unless accumulating).
int check_linear(const char* fn, const float* x, const void* w, int32_t w_dtype, float* y, int64_t m, int64_t n,
                 int64_t k, int32_t accumulate, bool* done) {
  RKV_CHECK(m >= 0 && n >= 0 && k >= 0, "%s: negative shape m=%lld n=%lld k=%lld", fn, static_cast<long long>(m),
            static_cast<long long>(n), static_cast<long long>(k));
  RKV_CHECK(w_dtype == RKV_DTYPE_F32 || w_dtype == RKV_DTYPE_BF16 || w_dtype == RKV_DTYPE_F16,
            "%s: weight dtype %s (%d) is not supported (f32, bf16 or f16)", fn, rkv::dtype_name(w_dtype), w_dtype);
  const int64_t lim = std::numeric_limits<int64_t>::max() / 8;
  RKV_CHECK(mul_fits(m, k, lim) && mul_fits(n, k, lim) && mul_fits(m, n, lim),
            "%s: shape m=%lld n=%lld k=%lld overflows", fn, static_cast<long long>(m), static_cast<long long>(n),
            static_cast<long long>(k));
  *done = true;
  if (m == 0 || n == 0) return RKV_OK;
  RKV_CHECK_PTR(y);
  if (k == 0) {
    if (!accumulate) std::memset(y, 0, static_cast<size_t>(m * n) * sizeof(float));
    return RKV_OK;
  }
  RKV_CHECK_PTR(x);
  RKV_CHECK_PTR(w);
  const int64_t wbytes = n * k * rkv::dtype_size(w_dtype);
  RKV_CHECK(!rkv::overlaps(y, m * n * 4, x, m * k * 4) && !rkv::overlaps(y, m * n * 4, w, wbytes),
            "%s: y must not overlap x or w", fn);
  *done = false;
  return RKV_OK;
}

}  // namespace

#if defined(RKV_HAVE_DNNL)
namespace rkv {
namespace dense {
int matmul_bf16(const float* x, const uint16_t* w, bool packed, float* y, int64_t m, int64_t n, int64_t k,
                bool accumulate) {
  using dnnl::memory;
  thread_local std::vector<uint16_t> xb;
  try {
    xb.resize(static_cast<size_t>(m * k));
  } catch (const std::bad_alloc&) {
    return rkv::set_error(RKV_ERR_OUT_OF_MEMORY, "rkv_linear: cannot allocate %lld bf16 activations",
                          static_cast<long long>(m * k));
  }
  uint16_t* xbp = xb.data();
  const int64_t total = m * k;
  rkv::parallel_for(total, total >= kParallelElems, [&](int64_t i) { xbp[i] = float_to_bf16_bits(x[i]); });
  try {
    memory::desc src_md({m, k}, memory::data_type::bf16, memory::format_tag::ab);
    // w is [n, k] row-major (w^T: ba), or packed (dense_packed.h: BA16a64b2a)
    memory::desc wei_md({k, n}, memory::data_type::bf16,
                        packed ? memory::format_tag::BA16a64b2a : memory::format_tag::ba);
    memory::desc dst_md({m, n}, memory::data_type::f32, memory::format_tag::ab);
    dnnl::primitive_attr attr;
    if (accumulate) {
      dnnl::post_ops po;
      po.append_sum(1.f);
      attr.set_post_ops(po);
    }
    // oneDNN's primitive cache makes re-creating the primitive for a seen shape cheap.
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src_md, wei_md, dst_md), attr, cpu_engine());
    dnnl::matmul prim(pd);
    memory src(src_md, cpu_engine(), xbp);
    memory wei(wei_md, cpu_engine(), const_cast<uint16_t*>(w));
    memory dst(dst_md, cpu_engine(), y);
    prim.execute(cpu_stream(), {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wei}, {DNNL_ARG_DST, dst}});
    cpu_stream().wait();
  } catch (const dnnl::error& e) {
    if (e.status == dnnl_unimplemented) return RKV_ERR_UNSUPPORTED;
    return rkv::set_error(RKV_ERR_INTERNAL, "rkv_linear: oneDNN bf16 matmul failed: %s", e.what());
  }
  return RKV_OK;
}
}  // namespace dense
}  // namespace rkv
#endif

extern "C" {

RKV_API int rkv_linear(const float* x, const void* w, int32_t w_dtype, float* y, int64_t m, int64_t n, int64_t k,
                       int32_t accumulate) {
  bool done = false;
  if (int st = check_linear("rkv_linear", x, w, w_dtype, y, m, n, k, accumulate, &done); st != RKV_OK || done)
    return st;
  const bool acc = accumulate != 0;
  // Decode batches: bound by streaming the weights once (dense_gemv.cpp).
  if (m <= rkv::dense::kGemvMaxRows) {
    rkv::dense::gemv_small(x, w, w_dtype, y, m, n, k, acc);
    return RKV_OK;
  }
  const auto decode_kernel_blocks = [&] {
    return rkv::dense::for_gemv_blocks(m, [&](int64_t i0, int64_t rows) {
      rkv::dense::gemv_small(x + i0 * k, w, w_dtype, y + i0 * n, rows, n, k, acc);
      return RKV_OK;
    });
  };
  // Zen 1: two blocks of the small-m kernel beat the GEMMs up to 32 rows (rkv_isa.h)
  if (m <= 2 * rkv::dense::kGemvMaxRows && rkv::gemv_up_to_32_rows()) return decode_kernel_blocks();
  if (w_dtype == RKV_DTYPE_F32) {
#if defined(RKV_HAVE_DNNL)
    if (rkv::onednn_gemms()) return gemm_f32(x, static_cast<const float*>(w), y, m, n, k, acc);
#endif
    rkv::dense::gemm_builtin<float>(x, static_cast<const float*>(w), y, m, n, k, acc);
    return RKV_OK;
  }
#if defined(RKV_HAVE_DNNL)
  if (rkv::onednn_gemms() && (w_dtype == RKV_DTYPE_F16 || !native_bf16_dot()))
    return gemm_widened(x, w, w_dtype, y, m, n, k, acc);
#endif
  if (w_dtype == RKV_DTYPE_F16) return decode_kernel_blocks();
  const auto* wb = static_cast<const uint16_t*>(w);
#if defined(RKV_HAVE_DNNL)
  if (rkv::onednn_gemms() && m >= kBf16MatmulMinRows) {
    int st = rkv::dense::matmul_bf16(x, wb, false, y, m, n, k, acc);
    if (st != RKV_ERR_UNSUPPORTED) return st;
  }
#endif
  // bf16 without oneDNN's matmul: where the small-m kernel rounds x for vdpbf16ps from 8 rows (as
  // that matmul does), it runs over blocks of 8-16 rows, so every row gets the same arithmetic
  // (the packed weights do the same); elsewhere x stays exact, in the small-m kernel as here.
  if (rkv::dense::gemv_uses_bf16_dot(w_dtype, rkv::dense::kGemvMaxRows)) return decode_kernel_blocks();
  rkv::dense::gemm_builtin<uint16_t>(x, wb, y, m, n, k, acc);
  return RKV_OK;
}

RKV_API int32_t rkv_linear_pack_supported(int32_t w_dtype, int64_t n, int64_t k) {
  return rkv::dense::packed_supported(w_dtype, n, k) ? 1 : 0;
}

static int pack_or_unpack(const char* fn, void* w, int32_t w_dtype, int64_t n, int64_t k, bool to_packed) {
  RKV_CHECK(n >= 0 && k >= 0, "%s: negative shape n=%lld k=%lld", fn, static_cast<long long>(n),
            static_cast<long long>(k));
  if (!rkv::dense::packed_supported(w_dtype, n, k)) {
    return rkv::set_error(RKV_ERR_UNSUPPORTED,
                          "%s: no packed layout for %s [%lld, %lld] on this CPU (n %% 64 == 0, k %% 16 == 0, AVX-512; "
                          "bf16 also k %% 32 == 0 and AVX512-BF16)",
                          fn, rkv::dtype_name(w_dtype), static_cast<long long>(n), static_cast<long long>(k));
  }
  RKV_CHECK_PTR(w);
  return rkv::dense::pack_panels(w, w_dtype, n, k, to_packed);
}

RKV_API int rkv_linear_pack(void* w, int32_t w_dtype, int64_t n, int64_t k) {
  return pack_or_unpack("rkv_linear_pack", w, w_dtype, n, k, true);
}

RKV_API int rkv_linear_unpack(void* w, int32_t w_dtype, int64_t n, int64_t k) {
  return pack_or_unpack("rkv_linear_unpack", w, w_dtype, n, k, false);
}

RKV_API int rkv_linear_packed(const float* x, const void* w, int32_t w_dtype, float* y, int64_t m, int64_t n,
                              int64_t k, int32_t accumulate) {
  bool done = false;
  if (int st = check_linear("rkv_linear_packed", x, w, w_dtype, y, m, n, k, accumulate, &done); st != RKV_OK || done)
    return st;
  if (!rkv::dense::packed_supported(w_dtype, n, k)) {
    return rkv::set_error(RKV_ERR_UNSUPPORTED, "rkv_linear_packed: no packed layout for %s [%lld, %lld] on this CPU",
                          rkv::dtype_name(w_dtype), static_cast<long long>(n), static_cast<long long>(k));
  }
  if (m <= rkv::dense::kGemvMaxRows) return rkv::dense::gemv_packed(x, w, w_dtype, y, m, n, k, accumulate != 0);
#if defined(RKV_HAVE_DNNL)
  if (rkv::onednn_gemms()) {
    if (w_dtype != RKV_DTYPE_BF16) return gemm_packed_widened(x, w, w_dtype, y, m, n, k, accumulate != 0);
    const int st = rkv::dense::matmul_bf16(x, static_cast<const uint16_t*>(w), true, y, m, n, k, accumulate != 0);
    if (st != RKV_ERR_UNSUPPORTED) return st;
  }
#endif
  return rkv::dense::gemm_packed_blocks(x, w, w_dtype, y, m, n, k, accumulate != 0);
}

RKV_API int rkv_rmsnorm(const float* x, const float* w, float* y, int64_t rows, int32_t dim, float eps,
                        float w_offset) {
  RKV_CHECK(rows >= 0, "rkv_rmsnorm: rows must not be negative, got %lld", static_cast<long long>(rows));
  RKV_CHECK(dim > 0, "rkv_rmsnorm: dim must be positive, got %d", dim);
  RKV_CHECK(std::isfinite(eps) && eps >= 0, "rkv_rmsnorm: eps must be >= 0 and finite, got %g", eps);
  RKV_CHECK(std::isfinite(w_offset), "rkv_rmsnorm: w_offset must be finite, got %g", w_offset);
  if (rows == 0) return RKV_OK;
  RKV_CHECK_PTR(x);
  RKV_CHECK_PTR(w);
  RKV_CHECK_PTR(y);
  RKV_CHECK(x == y || !rkv::overlaps(x, rows * dim * 4, y, rows * dim * 4), "rkv_rmsnorm: y must equal x or not overlap it");
  rkv::parallel_for(rows, rows * dim >= kParallelElems, [&](int64_t r) {
    const float* xr = x + r * dim;
    float* yr = y + r * dim;
    float ss = 0.f;
#pragma omp simd reduction(+ : ss)
    for (int32_t i = 0; i < dim; i++) ss += xr[i] * xr[i];
    const float inv = 1.f / std::sqrt(ss / static_cast<float>(dim) + eps);
#pragma omp simd
    for (int32_t i = 0; i < dim; i++) yr[i] = rkv::dense::rms_apply(xr[i], inv, w[i], w_offset);
  });
  return RKV_OK;
}

RKV_API int rkv_rope_table(float* q, float* k, const int32_t* positions, int64_t num_tokens, int32_t num_q_heads,
                           int32_t num_kv_heads, int32_t head_dim, const double* inv_freq) {
  RKV_CHECK(num_tokens >= 0, "rkv_rope: num_tokens must not be negative, got %lld", static_cast<long long>(num_tokens));
  RKV_CHECK(num_q_heads >= 0 && num_kv_heads >= 0, "rkv_rope: head counts must not be negative (%d, %d)",
            num_q_heads, num_kv_heads);
  RKV_CHECK(head_dim > 0 && head_dim % 2 == 0, "rkv_rope: head_dim must be positive and even, got %d", head_dim);
  if (num_tokens == 0) return RKV_OK;
  RKV_CHECK_PTR(positions);
  RKV_CHECK_PTR(inv_freq);
  RKV_CHECK(num_q_heads == 0 || q != nullptr, "rkv_rope: q must not be NULL");
  RKV_CHECK(num_kv_heads == 0 || k != nullptr, "rkv_rope: k must not be NULL");
  const int32_t half = head_dim / 2;
  for (int32_t i = 0; i < half; i++) {
    RKV_CHECK(std::isfinite(inv_freq[i]) && inv_freq[i] >= 0, "rkv_rope: inv_freq[%d] = %g is not finite and >= 0", i,
              inv_freq[i]);
  }
  for (int64_t t = 0; t < num_tokens; t++) {
    RKV_CHECK(positions[t] >= 0, "rkv_rope: positions[%lld] = %d is negative", static_cast<long long>(t),
              positions[t]);
  }
  const int64_t work = num_tokens * (num_q_heads + num_kv_heads) * head_dim;
  rkv::RegionScratch region;
  rkv::parallel_region(work >= kParallelElems, [&] {
    std::optional<std::vector<float>> cs;  // cos then sin of one token's angles
    if (region.build(cs, static_cast<size_t>(head_dim))) {
      float* c = cs->data();
      float* s = c + half;
#pragma omp for schedule(static)
      for (int64_t t = 0; t < num_tokens; t++) {
        // Angles in double from a double table: exact to ~1e-16 relative at any realistic position.
        const double pos = positions[t];
        for (int32_t i = 0; i < half; i++) {
          const double a = pos * inv_freq[i];
          c[i] = static_cast<float>(std::cos(a));
          s[i] = static_cast<float>(std::sin(a));
        }
        auto rotate = [&](float* base, int32_t heads) {
          for (int32_t h = 0; h < heads; h++) {
            float* v = base + (t * heads + h) * static_cast<int64_t>(head_dim);
#pragma omp simd
            for (int32_t i = 0; i < half; i++) {
              const float x1 = v[i], x2 = v[i + half];
              v[i] = x1 * c[i] - x2 * s[i];
              v[i + half] = x2 * c[i] + x1 * s[i];
            }
          }
        };
        if (num_q_heads > 0) rotate(q, num_q_heads);
        if (num_kv_heads > 0) rotate(k, num_kv_heads);
      }
    }
  });
  if (region.failed()) return rkv::set_error(RKV_ERR_OUT_OF_MEMORY, "rkv_rope: out of memory");
  return RKV_OK;
}

RKV_API int rkv_rope(float* q, float* k, const int32_t* positions, int64_t num_tokens, int32_t num_q_heads,
                     int32_t num_kv_heads, int32_t head_dim, float theta) {
  RKV_CHECK(head_dim > 0 && head_dim % 2 == 0, "rkv_rope: head_dim must be positive and even, got %d", head_dim);
  RKV_CHECK(std::isfinite(theta) && theta > 0, "rkv_rope: theta must be positive and finite, got %g", theta);
  return rkv::no_throw("rkv_rope", [&] {
    // inv_freq[i] = theta^(-2i/d), computed in double.
    std::vector<double> inv_freq(static_cast<size_t>(head_dim / 2));
    for (int32_t i = 0; i < head_dim / 2; i++) inv_freq[i] = std::pow(static_cast<double>(theta), -2.0 * i / head_dim);
    return rkv_rope_table(q, k, positions, num_tokens, num_q_heads, num_kv_heads, head_dim, inv_freq.data());
  });
}

RKV_API int rkv_embedding(const int32_t* ids, int64_t n, const void* table, int32_t dtype, int32_t vocab, int32_t dim,
                          float* out) {
  RKV_CHECK(n >= 0, "rkv_embedding: n must not be negative, got %lld", static_cast<long long>(n));
  RKV_CHECK(vocab > 0 && dim > 0, "rkv_embedding: vocab and dim must be positive (%d, %d)", vocab, dim);
  RKV_CHECK(dtype == RKV_DTYPE_F32 || dtype == RKV_DTYPE_BF16 || dtype == RKV_DTYPE_F16,
            "rkv_embedding: table dtype %s (%d) is not supported (f32, bf16 or f16)", rkv::dtype_name(dtype), dtype);
  if (n == 0) return RKV_OK;
  RKV_CHECK_PTR(ids);
  RKV_CHECK_PTR(table);
  RKV_CHECK_PTR(out);
  // Every id is checked before anything is written.
  for (int64_t i = 0; i < n; i++) {
    RKV_CHECK(ids[i] >= 0 && ids[i] < vocab, "rkv_embedding: ids[%lld] = %d is outside [0, %d)",
              static_cast<long long>(i), ids[i], vocab);
  }
  rkv::parallel_for(n, n * dim >= kParallelElems, [&](int64_t i) {
    float* o = out + i * dim;
    const int64_t row = static_cast<int64_t>(ids[i]) * dim;
    if (dtype == RKV_DTYPE_F32) {
      std::memcpy(o, static_cast<const float*>(table) + row, static_cast<size_t>(dim) * sizeof(float));
    } else if (dtype == RKV_DTYPE_BF16) {
      const uint16_t* t = static_cast<const uint16_t*>(table) + row;
#pragma omp simd
      for (int32_t j = 0; j < dim; j++) o[j] = bf16_bits_to_float(t[j]);
    } else {
      const uint16_t* t = static_cast<const uint16_t*>(table) + row;
      for (int32_t j = 0; j < dim; j++) o[j] = rkv::f16_to_float(t[j]);
    }
  });
  return RKV_OK;
}

RKV_API int rkv_add_inplace(float* y, const float* x, int64_t n) {
  RKV_CHECK(n >= 0, "rkv_add_inplace: n must not be negative, got %lld", static_cast<long long>(n));
  if (n == 0) return RKV_OK;
  RKV_CHECK_PTR(y);
  RKV_CHECK_PTR(x);
  rkv::parallel_for_simd(n, n >= 4 * kParallelElems, [&](int64_t i) { y[i] += x[i]; });
  return RKV_OK;
}

RKV_API int rkv_argmax(const float* logits, int64_t rows, int32_t vocab, int32_t* out) {
  RKV_CHECK(rows >= 0, "rkv_argmax: rows must not be negative, got %lld", static_cast<long long>(rows));
  RKV_CHECK(vocab > 0, "rkv_argmax: vocab must be positive, got %d", vocab);
  if (rows == 0) return RKV_OK;
  RKV_CHECK_PTR(logits);
  RKV_CHECK_PTR(out);
  rkv::parallel_for(rows, rows * vocab >= 4 * kParallelElems, [&](int64_t r) {
    out[r] = rkv::dense::argmax_row(logits + r * vocab, vocab);
  });
  return RKV_OK;
}

}  // extern "C"
