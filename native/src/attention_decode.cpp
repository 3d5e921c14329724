// CPU paged decode attention: one query per sequence over its pages (from the start of its
// sliding window, if any), split-KV across threads (attention_split_kv.h) when there are too
// few sequences for the threads.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <new>
#include <optional>
#include <vector>

#include "attention_cpu.h"
#include "attention_split_kv.h"
#include "rkv_mask.h"
#include "rkv_parallel.h"
#include "rkv_region_scratch.h"
#include "rkv_softmax.h"

using namespace rkv;
using namespace rkv::attn;

namespace {

// A decode split plan for one window, with its partial-result scratch.
struct WindowPlan {
  int32_t window_left;
  DecodePlan plan;
};

}  // namespace

// The tables' lengths of one step, the split plans made for it (one per window_left seen) and
// the partial-result scratch, reused by every layer.
struct rkv_decode_plan {
  int32_t batch = -1;
  int64_t num_pages = 0;
  int32_t page_size = 0;
  std::vector<int64_t> lens;
  std::vector<WindowPlan> windows;
  std::vector<float> part_o, part_s;
};

namespace {

// The split-KV plan of a window: sequences start at their window (positions before it, whole
// pages included, are never read).
DecodePlan plan_for(const std::vector<int64_t>& lens, int32_t window_left) {
  std::vector<int64_t> begin(lens.size(), 0);
  for (size_t b = 0; b < lens.size(); b++)
    if (lens[b] > 0) begin[b] = window_begin(lens[b] - 1, window_left);
  return plan_decode(begin, lens, omp_get_max_threads());
}

int decode_planned(const Common& c, const void* q, void* out, float* lse, const void* k_cache, const void* v_cache,
                   const int32_t* kv_indptr, const int32_t* kv_indices, const DecodePlan& plan,
                   std::vector<float>& part_o, std::vector<float>& part_s) {
  const int32_t num_qo_heads = c.num_qo_heads, num_kv_heads = c.num_kv_heads, q_dtype = c.q_dtype;
  const int32_t out_dtype = c.out_dtype;
  const Isa isa = choose_isa(c.head_dim);
  const Scales sc = make_scales(c, isa);
  const int G = num_qo_heads / num_kv_heads;
  const int hd = c.head_dim;
  const std::vector<DecodeItem>& items = plan.items;
  const std::vector<DecodeGroup>& groups = plan.groups;
  const int64_t nparts = plan.nparts;
  const int64_t row_elems = (int64_t)num_qo_heads * hd;  // one sequence's output
  try {
    if (part_o.size() < (size_t)(nparts * row_elems)) part_o.resize((size_t)(nparts * row_elems));
    if (part_s.size() < (size_t)(nparts * num_qo_heads)) part_s.resize((size_t)(nparts * num_qo_heads));
  } catch (const std::bad_alloc&) {
    return set_error(RKV_ERR_OUT_OF_MEMORY, "decode attention: cannot allocate split-KV scratch");
  }
  const int64_t n_items = (int64_t)items.size();

  RegionScratch region;
  rkv::parallel_region_n(threads_for(n_items), [&] {
    std::optional<RowsScratch> ws;
    if (region.build(ws, num_qo_heads, hd, false)) {
      const ScratchSpan<float> &Q = ws->Q, &O = ws->O;
      const ScratchSpan<float> &m = ws->m, &l = ws->l;
      const ScratchSpan<int64_t> &lo = ws->lo, &hi = ws->hi;
      const Scratch scratch = ws->view(false);
#pragma omp for schedule(dynamic, 1)
      for (int64_t it = 0; it < n_items; it++) {
        const DecodeItem& w = items[it];
        const int64_t qrow = (int64_t)w.b * num_qo_heads;  // first q head row of this sequence
        load_q(q, q_dtype, qrow * hd, row_elems, sc.q_mul, Q.data());
        std::fill(O.begin(), O.end(), 0.f);
        std::fill(m.begin(), m.end(), -INFINITY);
        std::fill(l.begin(), l.end(), 0.f);
        std::fill(lo.begin(), lo.end(), w.t0);  // the item's whole range is visible
        std::fill(hi.begin(), hi.end(), w.t1);
        if (w.t1 > w.t0) {
          SeqView s = seq_view(c, k_cache, v_cache, kv_indptr, kv_indices, w.b, 0);
          isa.attend_token_major(s, num_kv_heads, Q.data(), G, w.t0, w.t1, RowLimits{lo.data(), hi.data()}, sc.soft_cap,
                                 O.data(), m.data(), l.data(), scratch);
        }
        for (int g = 0; g < num_qo_heads; g++) {
          float row_lse = finish_row(O.data() + (int64_t)g * hd, hd, m[g], l[g], sc.v_mul);
          if (w.part < 0) {
            if (lse) lse[qrow + g] = row_lse;
          } else {
            part_s[(size_t)(w.part * num_qo_heads + g)] = row_lse;
          }
        }
        if (w.part < 0) {
          store_out(out, out_dtype, qrow * hd, O.data(), row_elems);
        } else {
          std::memcpy(&part_o[(size_t)(w.part * row_elems)], O.data(), row_elems * sizeof(float));
        }
      }
      // split-KV: combine each sequence's chunks (in KV order) with merge_state arithmetic
#pragma omp for schedule(static)
      for (int64_t gi = 0; gi < (int64_t)groups.size(); gi++) {
        const DecodeGroup& gr = groups[gi];
        const int64_t qrow = (int64_t)gr.b * num_qo_heads;
        for (int g = 0; g < num_qo_heads; g++) {
          float* acc = O.data() + (int64_t)g * hd;
          float s = part_s[(size_t)(gr.part0 * num_qo_heads + g)];
          std::memcpy(acc, &part_o[(size_t)(gr.part0 * row_elems + (int64_t)g * hd)], hd * sizeof(float));
          for (int64_t k = 1; k < gr.nparts; k++) {
            int64_t p = gr.part0 + k;
            merge_into(acc, &s, &part_o[(size_t)(p * row_elems + (int64_t)g * hd)],
                       part_s[(size_t)(p * num_qo_heads + g)], hd);
          }
          if (lse) lse[qrow + g] = s;
        }
        store_out(out, out_dtype, qrow * hd, O.data(), row_elems);
      }
    }
  });
  if (region.failed()) return set_error(RKV_ERR_OUT_OF_MEMORY, "decode attention: cannot allocate per-thread scratch");
  return RKV_OK;
}

}  // namespace

extern "C" {

RKV_API int rkv_decode_attention(const rkv_decode_params* p) {
  RKV_CHECK(p != nullptr, "params must not be NULL");
  return no_throw("rkv_decode_attention", [&]() -> int {
    const rkv_attention_args& a = p->attn;
    const rkv_paged_kv& kv = p->kv;
    const Common c = common_of(a, kv);
    std::vector<int64_t> lens;
    int rc = validate_common(c, a, kv, lens);
    if (rc != RKV_OK || c.batch == 0) return rc;
    std::vector<float> part_o, part_s;
    return decode_planned(c, a.q, a.out, a.lse, kv.k_cache, kv.v_cache, kv.kv_indptr, kv.kv_indices,
                          plan_for(lens, a.window_left), part_o, part_s);
  });
}

RKV_API int rkv_decode_plan_create(rkv_decode_plan** out) {
  RKV_CHECK_PTR(out);
  *out = new (std::nothrow) rkv_decode_plan();
  if (!*out) return set_error(RKV_ERR_OUT_OF_MEMORY, "rkv_decode_plan_create: out of memory");
  return RKV_OK;
}

RKV_API int rkv_decode_plan_destroy(rkv_decode_plan* plan) {
  delete plan;
  return RKV_OK;
}

RKV_API int rkv_decode_plan_tables(rkv_decode_plan* plan, const int32_t* kv_indptr, const int32_t* kv_indices,
                                 const int32_t* kv_last_page_len, int32_t batch_size, int64_t num_pages,
                                 int32_t page_size) {
  return no_throw("rkv_decode_plan_tables", [&]() -> int {
    RKV_CHECK_PTR(plan);
    plan->batch = -1;  // invalid until the tables pass
    plan->windows.clear();
    if (int rc = validate_tables(batch_size, num_pages, page_size, kv_indptr, kv_indices, kv_last_page_len, plan->lens))
      return rc;
    plan->batch = batch_size;
    plan->num_pages = num_pages;
    plan->page_size = page_size;
    return RKV_OK;
  });
}

RKV_API int64_t rkv_decode_plan_splits(const rkv_decode_plan* plan) {
  return plan ? (int64_t)plan->windows.size() : -1;
}

RKV_API int rkv_decode_attention_run(rkv_decode_plan* plan, const rkv_decode_params* p) {
  RKV_CHECK_PTR(plan);
  RKV_CHECK(p != nullptr, "params must not be NULL");
  const rkv_attention_args& a = p->attn;
  const rkv_paged_kv& kv = p->kv;
  RKV_CHECK(plan->batch >= 0, "rkv_decode_attention_run: the plan holds no valid batch (rkv_decode_plan_tables first)");
  RKV_CHECK(plan->batch == kv.batch_size && plan->num_pages == kv.num_pages && plan->page_size == kv.page_size,
            "rkv_decode_attention_run: batch %d, %lld pages of %d differ from the plan's batch %d, %lld pages of %d",
            kv.batch_size, (long long)kv.num_pages, kv.page_size, plan->batch, (long long)plan->num_pages,
            plan->page_size);
  const Common c = common_of(a, kv);
  if (int rc = validate_params(c)) return rc;
  if (c.batch == 0) return RKV_OK;
  RKV_CHECK(kv.kv_indptr != nullptr, "kv_indptr must not be NULL");
  RKV_CHECK(kv.kv_last_page_len != nullptr, "kv_last_page_len must not be NULL");
  if (kv.kv_indptr[c.batch] > 0) {
    RKV_CHECK(kv.kv_indices != nullptr, "kv_indices must not be NULL");
    RKV_CHECK(kv.k_cache != nullptr, "k_cache must not be NULL");
    RKV_CHECK(kv.v_cache != nullptr, "v_cache must not be NULL");
  }
  RKV_CHECK(a.q != nullptr, "q must not be NULL");
  RKV_CHECK(a.out != nullptr, "out must not be NULL");
  const int32_t window_left = a.window_left;
  const WindowPlan* wp = nullptr;
  for (const WindowPlan& w : plan->windows)
    if (w.window_left == window_left) wp = &w;
  if (!wp) {
    try {
      plan->windows.push_back({window_left, plan_for(plan->lens, window_left)});
    } catch (const std::bad_alloc&) {
      return set_error(RKV_ERR_OUT_OF_MEMORY, "decode attention: cannot allocate the split plan");
    }
    wp = &plan->windows.back();
  }
  return decode_planned(c, a.q, a.out, a.lse, kv.k_cache, kv.v_cache, kv.kv_indptr, kv.kv_indices, wp->plan,
                        plan->part_o, plan->part_s);
}

}  // extern "C"
