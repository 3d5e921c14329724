// The attention params structs (radixkv.h) filled from one argument list, for tests that sweep
// many shapes and tables: the query side, then the pool, the page table and the scalars, in
// the order the tests build them. Host or device pointers alike.
#pragma once

#include "radixkv.h"

inline rkv_decode_params decode_params(const void* q, int32_t q_dtype, void* out, int32_t out_dtype, float* lse,
                                       const void* k_cache, const void* v_cache, int32_t cache_dtype,
                                       int64_t num_pages, int32_t page_size, int32_t num_qo_heads,
                                       int32_t num_kv_heads, int32_t head_dim, const int32_t* kv_indptr,
                                       const int32_t* kv_indices, const int32_t* kv_last_page_len,
                                       int32_t batch_size, float sm_scale, float logits_soft_cap, float k_scale,
                                       float v_scale, int32_t window_left) {
  rkv_decode_params p{};
  p.attn.q = q;
  p.attn.q_dtype = q_dtype;
  p.attn.out = out;
  p.attn.out_dtype = out_dtype;
  p.attn.lse = lse;
  p.attn.num_qo_heads = num_qo_heads;
  p.attn.sm_scale = sm_scale;
  p.attn.logits_soft_cap = logits_soft_cap;
  p.attn.window_left = window_left;
  p.kv.k_cache = k_cache;
  p.kv.v_cache = v_cache;
  p.kv.cache_dtype = cache_dtype;
  p.kv.num_pages = num_pages;
  p.kv.page_size = page_size;
  p.kv.num_kv_heads = num_kv_heads;
  p.kv.head_dim = head_dim;
  p.kv.kv_indptr = kv_indptr;
  p.kv.kv_indices = kv_indices;
  p.kv.kv_last_page_len = kv_last_page_len;
  p.kv.batch_size = batch_size;
  p.kv.k_scale = k_scale;
  p.kv.v_scale = v_scale;
  return p;
}

inline rkv_prefill_params prefill_params(const void* q, int32_t q_dtype, void* out, int32_t out_dtype, float* lse,
                                         const int32_t* qo_indptr, const void* k_cache, const void* v_cache,
                                         int32_t cache_dtype, int64_t num_pages, int32_t page_size,
                                         int32_t num_qo_heads, int32_t num_kv_heads, int32_t head_dim,
                                         const int32_t* kv_indptr, const int32_t* kv_indices,
                                         const int32_t* kv_last_page_len, int32_t batch_size,
                                         const int32_t* bidir_indptr, const int32_t* bidir_regions, float sm_scale,
                                         float logits_soft_cap, float k_scale, float v_scale, int32_t window_left) {
  const rkv_decode_params d =
      decode_params(q, q_dtype, out, out_dtype, lse, k_cache, v_cache, cache_dtype, num_pages, page_size,
                    num_qo_heads, num_kv_heads, head_dim, kv_indptr, kv_indices, kv_last_page_len, batch_size,
                    sm_scale, logits_soft_cap, k_scale, v_scale, window_left);
  rkv_prefill_params p{};
  p.attn = d.attn;
  p.kv = d.kv;
  p.qo_indptr = qo_indptr;
  p.bidir_indptr = bidir_indptr;
  p.bidir_regions = bidir_regions;
  return p;
}

// The address of a params struct built in the call's own expression (it lives until the call returns).
template <typename P>
const P* ptr(const P& p) {
  return &p;
}
