// KV scatter (reshape_and_cache) and page copy (copy_blocks) on the CPU.
//
// Both validate every index before writing anything: a rejected call leaves the pools
// untouched. A token's row (all KV heads) is contiguous both in the input and in the pool
// (rkv::slot_row_element), so the scatter is one vectorized row conversion per token,
// spread over OpenMP threads.
#include <omp.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "kv_blocks.h"
#include "kv_convert.h"
#include "rkv_common.h"
#include "rkv_kv.h"
#include "rkv_parallel.h"
#include "stream_store.h"

namespace rkv {
namespace {

// Below this many bytes of traffic a call runs on the calling thread (fork/join costs more).
constexpr int64_t kParallelBytes = 256 * 1024;

int check_scale(const char* name, float scale, int32_t cache_dtype) {
  if (!(scale > 0.0f) || std::isinf(scale))
    return set_error(RKV_ERR_INVALID_ARGUMENT, "rkv_reshape_and_cache: %s must be positive and finite, got %g", name,
                     (double)scale);
  if (!is_fp8(cache_dtype) && scale != 1.0f)
    return set_error(RKV_ERR_INVALID_ARGUMENT, "rkv_reshape_and_cache: %s must be 1 for a %s cache, got %g", name,
                     dtype_name(cache_dtype), (double)scale);
  return RKV_OK;
}

// Index of the first slot >= num_slots, or -1.
int64_t first_bad_slot(const int64_t* slots, int64_t n, int64_t num_slots) {
  if (n <= 65536) {  // a decode step's slots: no region (see rkv_parallel.h)
    for (int64_t t = 0; t < n; ++t)
      if (slots[t] >= num_slots) return t;
    return -1;
  }
  int64_t first = std::numeric_limits<int64_t>::max();
#pragma omp parallel for schedule(static) reduction(min : first)
  for (int64_t t = 0; t < n; ++t)
    if (slots[t] >= num_slots && t < first) first = t;
  return first == std::numeric_limits<int64_t>::max() ? -1 : first;
}

}  // namespace
}  // namespace rkv

using rkv::dtype_name;

extern "C" {

RKV_API int rkv_reshape_and_cache(const void* k, const void* v, int32_t src_dtype, const int64_t* slot_mapping,
                                  int64_t num_tokens, int32_t num_kv_heads, int32_t head_dim, void* k_cache,
                                  void* v_cache, int32_t cache_dtype, int64_t num_pages, int32_t page_size,
                                  float k_scale, float v_scale) {
  RKV_CHECK(src_dtype == RKV_DTYPE_F32 || src_dtype == RKV_DTYPE_F16 || src_dtype == RKV_DTYPE_BF16,
            "rkv_reshape_and_cache: src_dtype must be f32, f16 or bf16, got %d (%s)", src_dtype, dtype_name(src_dtype));
  RKV_CHECK(rkv::is_valid_dtype(cache_dtype), "rkv_reshape_and_cache: unknown cache_dtype %d", cache_dtype);
  RKV_CHECK(num_tokens >= 0, "rkv_reshape_and_cache: num_tokens must not be negative, got %lld", (long long)num_tokens);
  RKV_CHECK(num_kv_heads > 0, "rkv_reshape_and_cache: num_kv_heads must be positive, got %d", num_kv_heads);
  RKV_CHECK(head_dim > 0, "rkv_reshape_and_cache: head_dim must be positive, got %d", head_dim);
  RKV_CHECK(page_size > 0, "rkv_reshape_and_cache: page_size must be positive, got %d", page_size);
  RKV_CHECK(num_pages >= 0, "rkv_reshape_and_cache: num_pages must not be negative, got %lld", (long long)num_pages);
  const int64_t row = (int64_t)num_kv_heads * head_dim;
  RKV_CHECK(num_pages <= INT64_MAX / page_size / row / 4, "rkv_reshape_and_cache: pool of %lld pages is too large",
            (long long)num_pages);
  RKV_CHECK(num_tokens <= INT64_MAX / row / 4, "rkv_reshape_and_cache: num_tokens %lld is too large",
            (long long)num_tokens);
  if (int e = rkv::check_scale("k_scale", k_scale, cache_dtype)) return e;
  if (int e = rkv::check_scale("v_scale", v_scale, cache_dtype)) return e;
  if (num_tokens == 0) return RKV_OK;
  RKV_CHECK_PTR(k);
  RKV_CHECK_PTR(v);
  RKV_CHECK_PTR(slot_mapping);
  RKV_CHECK_PTR(k_cache);
  RKV_CHECK_PTR(v_cache);
  const int64_t num_slots = num_pages * page_size;
  // Every slot is checked before anything is written.
  int64_t bad = rkv::first_bad_slot(slot_mapping, num_tokens, num_slots);
  if (bad >= 0)
    return rkv::set_error(RKV_ERR_INVALID_ARGUMENT,
                          "rkv_reshape_and_cache: slot_mapping[%lld] = %lld is out of range (num_pages * page_size = %lld)",
                          (long long)bad, (long long)slot_mapping[bad], (long long)num_slots);

  const rkv::RowConverter ck = rkv::row_converter(src_dtype, cache_dtype, k_scale);
  const rkv::RowConverter cv = rkv::row_converter(src_dtype, cache_dtype, v_scale);
  const int ss = rkv::dtype_size(src_dtype), cs = rkv::dtype_size(cache_dtype);
  const char* kb = (const char*)k;
  const char* vb = (const char*)v;
  char* kc = (char*)k_cache;
  char* vc = (char*)v_cache;
  const bool parallel = num_tokens > 1 && num_tokens * row * (ss + cs) * 2 > rkv::kParallelBytes;
  // A batch this large (prefill) leaves the caches before attention reads it back: stream it.
  const bool stream = num_tokens * row * cs * 2 > rkv::kStreamBytes;
  const bool copy = src_dtype == cache_dtype;
  rkv::parallel_region(parallel, [&] {
#pragma omp for schedule(static) nowait
    for (int64_t t = 0; t < num_tokens; ++t) {
      const int64_t slot = slot_mapping[t];
      if (rkv::slot_is_padding(slot)) continue;
      const int64_t dst = rkv::slot_row_element(slot, row) * cs;
      if (stream) {
        rkv::stream_convert(ck, copy, kb + t * row * ss, ss, kc + dst, cs, row);
        rkv::stream_convert(cv, copy, vb + t * row * ss, ss, vc + dst, cs, row);
      } else {
        ck.fn(kb + t * row * ss, kc + dst, row, ck.scale);
        cv.fn(vb + t * row * ss, vc + dst, row, cv.scale);
      }
    }
    if (stream) rkv::stream_fence();
  });
  return RKV_OK;
}

RKV_API int rkv_copy_blocks(void* const* k_caches, void* const* v_caches, int32_t num_layers,
                            const int64_t* block_mapping, int64_t num_pairs, int64_t page_bytes, int64_t num_pages) {
  RKV_CHECK(num_layers >= 0, "rkv_copy_blocks: num_layers must not be negative, got %d", num_layers);
  RKV_CHECK(num_pairs >= 0, "rkv_copy_blocks: num_pairs must not be negative, got %lld", (long long)num_pairs);
  RKV_CHECK(page_bytes > 0, "rkv_copy_blocks: page_bytes must be positive, got %lld", (long long)page_bytes);
  RKV_CHECK(num_pages >= 0, "rkv_copy_blocks: num_pages must not be negative, got %lld", (long long)num_pages);
  RKV_CHECK(num_pages <= INT64_MAX / page_bytes, "rkv_copy_blocks: num_pages * page_bytes overflows");
  if (num_pairs == 0 || num_layers == 0) return RKV_OK;
  RKV_CHECK_PTR(k_caches);
  RKV_CHECK_PTR(v_caches);
  RKV_CHECK_PTR(block_mapping);
  for (int32_t l = 0; l < num_layers; ++l) {
    RKV_CHECK(k_caches[l] != nullptr, "rkv_copy_blocks: k_caches[%d] is NULL", l);
    RKV_CHECK(v_caches[l] != nullptr, "rkv_copy_blocks: v_caches[%d] is NULL", l);
  }
  char msg[256];
  if (!rkv::check_block_mapping(block_mapping, num_pairs, num_pages, msg, sizeof msg))
    return rkv::set_error(RKV_ERR_INVALID_ARGUMENT, "rkv_copy_blocks: %s", msg);
  const int64_t jobs = (int64_t)num_layers * num_pairs * 2;
  const bool parallel = jobs > 1 && jobs * page_bytes > rkv::kParallelBytes;
  rkv::parallel_for(jobs, parallel, [&](int64_t j) {
    const int64_t layer = j / (num_pairs * 2);
    const int64_t rest = j % (num_pairs * 2);
    const int64_t pair = rest / 2;
    char* base = (char*)((rest % 2 == 0) ? k_caches[layer] : v_caches[layer]);
    std::memcpy(base + block_mapping[2 * pair + 1] * page_bytes, base + block_mapping[2 * pair] * page_bytes,
                (size_t)page_bytes);
  });
  return RKV_OK;
}

}  // extern "C"
