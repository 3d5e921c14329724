// Argument validation and row helpers shared by the CPU attention entry points.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>

#include "attention_cpu.h"
#include "kv_convert.h"
#include "rkv_dtype.h"
#include "rkv_softmax.h"

namespace rkv {
namespace attn {

static bool is_io_dtype(int32_t d) { return d == RKV_DTYPE_F32 || d == RKV_DTYPE_F16 || d == RKV_DTYPE_BF16; }

int validate_params(const Common& c) {
  RKV_CHECK(c.batch >= 0, "batch_size must be >= 0, got %d", c.batch);
  RKV_CHECK(c.num_qo_heads > 0 && c.num_kv_heads > 0, "num_qo_heads (%d) and num_kv_heads (%d) must be positive",
            c.num_qo_heads, c.num_kv_heads);
  RKV_CHECK(c.num_qo_heads % c.num_kv_heads == 0, "num_qo_heads (%d) must be a multiple of num_kv_heads (%d)",
            c.num_qo_heads, c.num_kv_heads);
  RKV_CHECK(c.head_dim > 0 && c.head_dim <= 1024, "head_dim must be in 1..1024, got %d", c.head_dim);
  RKV_CHECK(c.page_size > 0, "page_size must be positive, got %d", c.page_size);
  RKV_CHECK(c.num_pages >= 0, "num_pages must be >= 0, got %lld", (long long)c.num_pages);
  RKV_CHECK(is_valid_dtype(c.cache_dtype), "unknown cache dtype %d", c.cache_dtype);
  RKV_CHECK(is_io_dtype(c.q_dtype), "q dtype must be f32, f16 or bf16, got %s (%d)", dtype_name(c.q_dtype), c.q_dtype);
  RKV_CHECK(is_io_dtype(c.out_dtype), "out dtype must be f32, f16 or bf16, got %s (%d)", dtype_name(c.out_dtype),
            c.out_dtype);
  RKV_CHECK(std::isfinite(c.sm_scale) && c.sm_scale > 0.f, "sm_scale must be positive and finite, got %g",
            (double)c.sm_scale);
  RKV_CHECK(std::isfinite(c.soft_cap), "logits_soft_cap must be finite, got %g", (double)c.soft_cap);
  RKV_CHECK(c.window_left >= -1, "window_left must be -1 (no window) or >= 0, got %d", c.window_left);
  RKV_CHECK(std::isfinite(c.k_scale) && c.k_scale > 0.f && std::isfinite(c.v_scale) && c.v_scale > 0.f,
            "k_scale (%g) and v_scale (%g) must be positive and finite", (double)c.k_scale, (double)c.v_scale);
  return RKV_OK;
}

int validate_tables(int32_t batch, int64_t num_pages, int32_t page_size, const int32_t* kv_indptr,
                    const int32_t* kv_indices, const int32_t* kv_last_page_len, std::vector<int64_t>& lens) {
  RKV_CHECK(batch >= 0, "batch_size must be >= 0, got %d", batch);
  RKV_CHECK(page_size > 0, "page_size must be positive, got %d", page_size);
  RKV_CHECK(num_pages >= 0, "num_pages must be >= 0, got %lld", (long long)num_pages);
  lens.assign(batch, 0);
  if (batch == 0) return RKV_OK;
  RKV_CHECK_PTR(kv_indptr);
  RKV_CHECK_PTR(kv_last_page_len);
  RKV_CHECK(kv_indptr[0] == 0, "kv_indptr[0] must be 0, got %d", kv_indptr[0]);
  for (int b = 0; b < batch; b++)
    RKV_CHECK(kv_indptr[b + 1] >= kv_indptr[b], "kv_indptr is not monotone at %d: %d < %d", b + 1, kv_indptr[b + 1],
              kv_indptr[b]);
  int32_t nnz = kv_indptr[batch];
  if (nnz > 0) RKV_CHECK_PTR(kv_indices);
  for (int32_t i = 0; i < nnz; i++)
    RKV_CHECK(kv_indices[i] >= 0 && kv_indices[i] < num_pages, "kv_indices[%d] = %d is outside [0, %lld)", i,
              kv_indices[i], (long long)num_pages);
  for (int b = 0; b < batch; b++) {
    int32_t pages = kv_indptr[b + 1] - kv_indptr[b];
    if (pages == 0) continue;
    int32_t last = kv_last_page_len[b];
    RKV_CHECK(last >= 1 && last <= page_size, "kv_last_page_len[%d] = %d is outside 1..%d", b, last, page_size);
    lens[b] = (int64_t)page_size * (pages - 1) + last;
  }
  return RKV_OK;
}

Common common_of(const rkv_attention_args& a, const rkv_paged_kv& kv) {
  return Common{kv.num_pages,   kv.page_size, a.num_qo_heads, kv.num_kv_heads,    kv.head_dim,
                kv.batch_size,  kv.cache_dtype, a.q_dtype,    a.out_dtype,        a.sm_scale,
                a.logits_soft_cap, kv.k_scale,  kv.v_scale,   a.window_left};
}

int validate_common(const Common& c, const rkv_attention_args& a, const rkv_paged_kv& kv, std::vector<int64_t>& lens) {
  if (int rc = validate_params(c)) return rc;
  if (int rc = validate_tables(c.batch, c.num_pages, c.page_size, kv.kv_indptr, kv.kv_indices, kv.kv_last_page_len,
                               lens))
    return rc;
  if (c.batch == 0) return RKV_OK;
  if (kv.kv_indptr[c.batch] > 0) {
    RKV_CHECK(kv.k_cache != nullptr, "k_cache must not be NULL");
    RKV_CHECK(kv.v_cache != nullptr, "v_cache must not be NULL");
  }
  RKV_CHECK(a.q != nullptr, "q must not be NULL");
  RKV_CHECK(a.out != nullptr, "out must not be NULL");
  return RKV_OK;
}

Scales make_scales(const Common& c, const Isa& isa) {
  float kf = c.cache_dtype == RKV_DTYPE_FP8_E4M3 ? isa.e4m3_factor : 1.f;
  float ks = is_fp8(c.cache_dtype) ? c.k_scale : 1.f;
  float vs = is_fp8(c.cache_dtype) ? c.v_scale : 1.f;
  Scales s;
  s.soft_cap = c.soft_cap > 0.f ? c.soft_cap : 0.f;
  s.q_mul = logit_q_scale(c.sm_scale * ks * kf, s.soft_cap);
  s.v_mul = vs * kf;
  return s;
}

SeqView seq_view(const Common& c, const void* k_cache, const void* v_cache, const int32_t* kv_indptr,
                        const int32_t* kv_indices, int b, int h) {
  SeqView s;
  s.k_base = static_cast<const uint8_t*>(k_cache);
  s.v_base = static_cast<const uint8_t*>(v_cache);
  s.pages = kv_indices + kv_indptr[b];
  s.page_size = c.page_size;
  s.num_kv_heads = c.num_kv_heads;
  s.kv_head = h;
  s.head_dim = c.head_dim;
  s.row_bytes = c.head_dim * dtype_size(c.cache_dtype);
  s.dtype = c.cache_dtype;
  return s;
}

// Loads `rows` consecutive q rows of head_dim (starting at element index `base`) into f32, scaled.
void load_q(const void* q, int32_t dtype, int64_t base, int64_t n, float mul, float* dst) {
  // the row converter widens f16/bf16 exactly (vectorized; per element this was 5% of prefill)
  if (dtype == RKV_DTYPE_F32) {
    const float* src = static_cast<const float*>(q) + base;
    for (int64_t i = 0; i < n; i++) dst[i] = src[i] * mul;
    return;
  }
  const RowConverter rc = row_converter(dtype, RKV_DTYPE_F32, 1.0f);
  rc.fn(static_cast<const char*>(q) + base * dtype_size(dtype), dst, n, rc.scale);
  for (int64_t i = 0; i < n; i++) dst[i] *= mul;
}

void store_out(void* out, int32_t dtype, int64_t base, const float* src, int64_t n) {
  if (dtype == RKV_DTYPE_F32) {
    std::memcpy(static_cast<float*>(out) + base, src, n * sizeof(float));
    return;
  }
  for (int64_t i = 0; i < n; i++) store_from_float(out, base + i, dtype, src[i]);
}

// Normalizes one row in place: O / l * v_mul (zeros for an empty row); returns the LSE.
float finish_row(float* o, int hd, float m, float l, float v_mul) {
  SoftmaxState st{m, l};
  if (l == 0.f) {  // empty row (a NaN l propagates instead)
    std::fill(o, o + hd, 0.f);
    return -INFINITY;
  }
  float f = v_mul / l;
  for (int d = 0; d < hd; d++) o[d] *= f;
  return softmax_lse(st);
}

// a = merge(a, b) over head_dim elements with natural-log LSEs.
void merge_into(float* va, float* sa, const float* vb, float sb, int hd) {
  MergeWeights w = merge_weights(*sa, sb);
  for (int d = 0; d < hd; d++) va[d] = w.wa * va[d] + w.wb * vb[d];
  *sa = w.lse;
}

RowsScratch::RowsScratch(int64_t rows, int hd, bool prefill) : prefill(prefill) {
  const size_t bytes = layout(nullptr, static_cast<size_t>(rows), static_cast<size_t>(hd));
  block_.reset(new std::byte[bytes + 64]);  // default-initialized: not zeroed
  const uintptr_t at = reinterpret_cast<uintptr_t>(block_.get());
  layout(block_.get() + (64 - at % 64) % 64, static_cast<size_t>(rows), static_cast<size_t>(hd));
}

size_t RowsScratch::layout(std::byte* base, size_t r, size_t d) {
  size_t bytes = 0;
  auto place = [&](auto& span, size_t n) {
    span.n = n;
    span.p = base != nullptr ? reinterpret_cast<decltype(span.p)>(base + bytes) : nullptr;
    // plus a skew of 7 lines, so that buffers of a multiple of 4 KiB (Q and O of 32 rows of 64 or
    // 128) do not start at the same offset within a page: a load from one after a store to the
    // other at that offset waits on a false dependency (4K aliasing)
    bytes += (n * sizeof(*span.p) + 63) / 64 * 64 + 7 * 64;
  };
  place(Q, r * d);
  place(O, r * d);
  place(S, r * (prefill ? kPrefillBlock : kBlock));
  place(pack, prefill ? 2 * kPrefillBlock * d : 0);
  place(kt, prefill ? kPrefillBlock * d : 0);
  place(q_pairs, prefill ? 0 : r * d);
  place(m, r);
  place(l, r);
  place(scale, r);
  place(vis, 2 * r);
  place(lo, r);
  place(hi, r);
  return bytes;
}

int threads_for(int64_t items) {
  int nt = omp_get_max_threads();
  return (int)std::max<int64_t>(1, std::min<int64_t>(nt, items));
}

}  // namespace attn
}  // namespace rkv
