// CPU append prefill attention: right-aligned causal mask, optional bidirectional regions and
// sliding window (rkv_mask.h); work items are (sequence, kv head, query tile), each reading only
// the KV range its rows see.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <new>
#include <optional>
#include <vector>

#include "attention_cpu.h"
#include "rkv_mask.h"
#include "rkv_parallel.h"
#include "rkv_region_scratch.h"
#include "rkv_softmax.h"

using namespace rkv;
using namespace rkv::attn;

extern "C" {

RKV_API int rkv_append_prefill_attention(const rkv_prefill_params* p) {
  RKV_CHECK(p != nullptr, "params must not be NULL");
  return no_throw("rkv_append_prefill_attention", [&]() -> int {
    const rkv_attention_args& a = p->attn;
    const rkv_paged_kv& kv = p->kv;
    const Common c = common_of(a, kv);
    std::vector<int64_t> lens;
    int rc = validate_common(c, a, kv, lens);
    if (rc != RKV_OK || c.batch == 0) return rc;
    const void *q = a.q, *k_cache = kv.k_cache, *v_cache = kv.v_cache;
    void* out = a.out;
    float* lse = a.lse;
    const int32_t q_dtype = a.q_dtype, out_dtype = a.out_dtype, num_qo_heads = a.num_qo_heads;
    const int32_t num_kv_heads = kv.num_kv_heads, head_dim = kv.head_dim, batch_size = kv.batch_size;
    const int32_t window_left = a.window_left;
    const int32_t *qo_indptr = p->qo_indptr, *kv_indptr = kv.kv_indptr, *kv_indices = kv.kv_indices;
    const int32_t *bidir_indptr = p->bidir_indptr, *bidir_regions = p->bidir_regions;
    RKV_CHECK_PTR(qo_indptr);
    RKV_CHECK(qo_indptr[0] == 0, "qo_indptr[0] must be 0, got %d", qo_indptr[0]);
    for (int b = 0; b < batch_size; b++) {
      int32_t ql = qo_indptr[b + 1] - qo_indptr[b];
      RKV_CHECK(ql >= 0, "qo_indptr is not monotone at %d: %d < %d", b + 1, qo_indptr[b + 1], qo_indptr[b]);
      RKV_CHECK(ql <= lens[b], "sequence %d has q_len %d > kv_len %lld", b, ql, (long long)lens[b]);
    }
    RKV_CHECK(!(bidir_indptr == nullptr && bidir_regions != nullptr),
              "bidir_regions is set but bidir_indptr is NULL");
    if (bidir_indptr != nullptr) {
      RKV_CHECK(bidir_indptr[0] == 0, "bidir_indptr[0] must be 0, got %d", bidir_indptr[0]);
      for (int b = 0; b < batch_size; b++) {
        RKV_CHECK(bidir_indptr[b + 1] >= bidir_indptr[b], "bidir_indptr is not monotone at %d", b + 1);
        if (bidir_indptr[b + 1] > bidir_indptr[b]) RKV_CHECK_PTR(bidir_regions);
        for (int32_t r = bidir_indptr[b]; r < bidir_indptr[b + 1]; r++) {
          int32_t s = bidir_regions[2 * r], e = bidir_regions[2 * r + 1];
          RKV_CHECK(s >= 0 && s < e && e <= lens[b], "bidirectional region %d of sequence %d is [%d, %d), not inside [0, %lld)",
                    r, b, s, e, (long long)lens[b]);
        }
      }
    }

    const Isa isa = choose_isa(head_dim);
    const Scales sc = make_scales(c, isa);
    const int G = num_qo_heads / num_kv_heads;
    const int hd = head_dim;
    // Query tile: about 128 rows (q tokens x GQA heads) reuse each K/V block, so a block's K
    // transpose and V packing serve more rows; AVX-512 only (AVX2 gains little from it and a
    // 512 KiB L2 can lose).
    // Measured: docs/measurements/kernel-constants.md#prefill-query-tiles-of-128-rows
    // A short prefill on many cores takes 64-row tiles where 128 would leave fewer than two
    // items per thread (a prompt of 32 tokens with GQA 4 and 8 KV heads: 8 items for 16 cores).
    auto tiles_of = [&](int tile) {
      int64_t tiles = 0;
      for (int b = 0; b < batch_size; b++) tiles += (qo_indptr[b + 1] - qo_indptr[b] + tile - 1) / tile;
      return tiles * num_kv_heads;
    };
    int qt = std::max(1, (isa.width >= 16 ? 128 : 64) / G);
    if (qt > 1 && tiles_of(qt) < 2 * (int64_t)omp_get_max_threads()) qt = std::max(1, 64 / G);
    const int Rmax = qt * G;

    struct Item {
      int32_t b, h, i0, i1;
    };
    std::vector<Item> items;
    for (int b = 0; b < batch_size; b++) {
      int32_t ql = qo_indptr[b + 1] - qo_indptr[b];
      // later tiles see more KV: schedule them first
      for (int32_t i0 = ((ql - 1) / qt) * qt; i0 >= 0 && ql > 0; i0 -= qt)
        for (int h = 0; h < num_kv_heads; h++) items.push_back({b, h, i0, std::min(ql, i0 + qt)});
    }
    const int64_t n_items = (int64_t)items.size();
    // The q rows an item reads and the out rows it writes: G heads of each of its query tokens,
    // one contiguous run per token, tokens num_qo_heads rows apart. Prefetched (out for writing)
    // one item ahead: loaded on demand, a tile's 64 q rows stall on the cache one row at a time.
    // Measured: docs/measurements/kernel-constants.md#prefill-q-and-out-rows-prefetched-one-item-ahead
    const int64_t q_es = dtype_size(q_dtype), out_es = dtype_size(out_dtype);
    auto prefetch_item_rows = [&](const Item& x) {
      for (int32_t i = x.i0; i < x.i1; i++) {
        const int64_t e = ((int64_t)(qo_indptr[x.b] + i) * num_qo_heads + (int64_t)x.h * G) * hd;
        const char* pq = static_cast<const char*>(q) + e * q_es;
        const char* po = static_cast<const char*>(out) + e * out_es;
        for (int64_t o = 0; o < G * hd * q_es; o += 64) __builtin_prefetch(pq + o, 0, 3);
        for (int64_t o = 0; o < G * hd * out_es; o += 64) __builtin_prefetch(po + o, 1, 3);
      }
    };

    RegionScratch region;
    rkv::parallel_region_n(threads_for(n_items), [&] {
      std::optional<RowsScratch> ws;
      if (region.build(ws, Rmax, hd, true)) {
        const ScratchSpan<float> &Q = ws->Q, &O = ws->O;
        const ScratchSpan<float> &m = ws->m, &l = ws->l;
        const ScratchSpan<int64_t> &lo = ws->lo, &hi = ws->hi;
#pragma omp for schedule(dynamic, 1)
        for (int64_t it = 0; it < n_items; it++) {
          const Item& w = items[it];
          if (it + 1 < n_items) prefetch_item_rows(items[it + 1]);
          const int64_t kv_len = lens[w.b];
          const int32_t q_len = qo_indptr[w.b + 1] - qo_indptr[w.b];
          const int64_t off = kv_len - q_len;  // global position of query 0
          const int nq = w.i1 - w.i0;
          const int R = nq * G;
          // row visibility: [window_begin, last visible]; the tile reads KV [kv_begin, kv_end) only
          int64_t kv_begin = INT64_MAX, kv_end = 0;
          for (int i = 0; i < nq; i++) {
            const int64_t p = off + w.i0 + i;
            const int64_t ext = bidir_indptr != nullptr
                                    ? causal_last(p, bidir_regions, bidir_indptr[w.b], bidir_indptr[w.b + 1])
                                    : p;
            const int64_t begin = window_begin(p, window_left);
            int64_t row = qo_indptr[w.b] + w.i0 + i;
            for (int g = 0; g < G; g++) {
              lo[i * G + g] = begin;
              hi[i * G + g] = ext + 1;
              load_q(q, q_dtype, (row * num_qo_heads + w.h * G + g) * hd, hd, sc.q_mul, Q.data() + (size_t)(i * G + g) * hd);
            }
            kv_begin = std::min(kv_begin, begin);
            kv_end = std::max(kv_end, ext + 1);
          }
          std::fill(O.begin(), O.begin() + (size_t)R * hd, 0.f);
          std::fill(m.begin(), m.begin() + R, -INFINITY);
          std::fill(l.begin(), l.begin() + R, 0.f);
          SeqView s = seq_view(c, k_cache, v_cache, kv_indptr, kv_indices, w.b, w.h);
          const Scratch scratch = ws->view(R >= 16);
          isa.attend(s, 1, Q.data(), R, kv_begin, kv_end, RowLimits{lo.data(), hi.data()}, sc.soft_cap, O.data(), m.data(),
                     l.data(), scratch);
          for (int i = 0; i < nq; i++) {
            int64_t row = qo_indptr[w.b] + w.i0 + i;
            for (int g = 0; g < G; g++) {
              int r = i * G + g;
              float row_lse = finish_row(O.data() + (size_t)r * hd, hd, m[r], l[r], sc.v_mul);
              int64_t orow = row * num_qo_heads + w.h * G + g;
              store_out(out, out_dtype, orow * hd, O.data() + (size_t)r * hd, hd);
              if (lse) lse[orow] = row_lse;
            }
          }
        }
      }
    });
    if (region.failed())
      return set_error(RKV_ERR_OUT_OF_MEMORY, "append prefill attention: cannot allocate per-thread scratch");
    return RKV_OK;
  });
}

}  // extern "C"
