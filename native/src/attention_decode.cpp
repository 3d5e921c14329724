// CPU paged decode attention: one query per sequence over its pages (from the start of its
// sliding window, if any), split-KV across threads (attention_split_kv.h) when there are too
// few sequences for the threads.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <new>
#include <vector>

#include "attention_cpu.h"
#include "attention_split_kv.h"
#include "rkv_mask.h"
#include "rkv_softmax.h"

using namespace rkv;
using namespace rkv::attn;

extern "C" {

RKV_API int rkv_decode_attention(const void* q, int32_t q_dtype, void* out, int32_t out_dtype, float* lse,
                                 const void* k_cache, const void* v_cache, int32_t cache_dtype, int64_t num_pages,
                                 int32_t page_size, int32_t num_qo_heads, int32_t num_kv_heads, int32_t head_dim,
                                 const int32_t* kv_indptr, const int32_t* kv_indices, const int32_t* kv_last_page_len,
                                 int32_t batch_size, float sm_scale, float logits_soft_cap, float k_scale,
                                 float v_scale, int32_t window_left) {
  Common c{num_pages, page_size, num_qo_heads, num_kv_heads, head_dim, batch_size, cache_dtype, q_dtype, out_dtype,
           sm_scale, logits_soft_cap, k_scale, v_scale, window_left};
  std::vector<int64_t> lens;
  int rc = validate_common(c, q, out, k_cache, v_cache, kv_indptr, kv_indices, kv_last_page_len, lens);
  if (rc != RKV_OK || batch_size == 0) return rc;

  const Isa isa = choose_isa(head_dim);
  const Scales sc = make_scales(c, isa);
  const int G = num_qo_heads / num_kv_heads;
  const int hd = head_dim;

  // The query is at position len - 1: a sliding window starts the range later, and the planner
  // never puts the positions before it (whole pages included) into an item.
  std::vector<int64_t> begin(lens.size(), 0);
  for (size_t b = 0; b < lens.size(); b++)
    if (lens[b] > 0) begin[b] = window_begin(lens[b] - 1, window_left);
  const DecodePlan plan = plan_decode(begin, lens, omp_get_max_threads());
  const std::vector<DecodeItem>& items = plan.items;
  const std::vector<DecodeGroup>& groups = plan.groups;
  const int64_t nparts = plan.nparts;
  const int64_t row_elems = (int64_t)num_qo_heads * hd;  // one sequence's output
  std::vector<float> part_o, part_s;
  try {
    part_o.resize((size_t)(nparts * row_elems));
    part_s.resize((size_t)(nparts * num_qo_heads));
  } catch (const std::bad_alloc&) {
    return set_error(RKV_ERR_OUT_OF_MEMORY, "decode attention: cannot allocate split-KV scratch");
  }
  const int64_t n_items = (int64_t)items.size();

#pragma omp parallel num_threads(threads_for(n_items))
  {
    std::vector<float> Q(row_elems), O(row_elems), m(num_qo_heads), l(num_qo_heads),
        S((size_t)num_qo_heads * kBlock), scale(num_qo_heads), ones(G, 1.f);
    std::vector<int> vis((size_t)2 * num_qo_heads);
    std::vector<int64_t> lo(G), hi(G);
    const Scratch scratch{S.data(), scale.data(), vis.data(), nullptr, ones.data()};
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
  return RKV_OK;
}

}  // extern "C"
