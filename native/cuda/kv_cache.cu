// KV scatter (reshape_and_cache) and page copy (copy_blocks) on the GPU. Element arithmetic
// and slot math come from the RKV_HD helpers shared with the CPU (rkv_kv.h, rkv_dtype.h).
//
// Slots and page ids live in device memory, so they are checked on the device: a token whose
// slot is >= num_pages * page_size (a pair with a page id out of range) is skipped and recorded
// in the caller's device error record (radixkv.h), which the host reads once per step. Nothing
// here synchronizes or copies anything back.
#include <cmath>

#include "rkv_cuda_common.cuh"
#include "rkv_kv.h"

namespace {

// One block per token (grid-stride over tokens); threads walk the token's row, which is
// contiguous in the input and in the pool.
template <int SD, int CD>
__global__ void reshape_and_cache_kernel(const void* __restrict__ k, const void* __restrict__ v,
                                         const int64_t* __restrict__ slots, int64_t num_tokens, int64_t row,
                                         void* __restrict__ k_cache, void* __restrict__ v_cache, float k_scale,
                                         float v_scale, int64_t num_slots, int64_t* error_record) {
  constexpr int mode = SD == CD ? rkv::kScaleNone : (CD == RKV_DTYPE_FP8_E4M3 || CD == RKV_DTYPE_FP8_E5M2)
                                                        ? rkv::kScaleDiv
                                                        : rkv::kScaleNone;
  for (int64_t t = blockIdx.x; t < num_tokens; t += gridDim.x) {
    const int64_t slot = slots[t];
    if (rkv::slot_is_padding(slot)) continue;
    if (slot >= num_slots) {
      if (threadIdx.x == 0) rkv_cuda::record_error(error_record, RKV_CUDA_DEVERR_BAD_SLOT, t, slot, num_slots);
      continue;
    }
    const int64_t dst = rkv::slot_row_element(slot, row);
    const int64_t src = t * row;
    for (int64_t e = threadIdx.x; e < row; e += blockDim.x) {
      rkv::convert_element(k, SD, src + e, k_cache, CD, dst + e, mode, k_scale);
      rkv::convert_element(v, SD, src + e, v_cache, CD, dst + e, mode, v_scale);
    }
  }
}

template <int SD, int CD>
void launch_scatter(int blocks, int threads, cudaStream_t s, const void* k, const void* v, const int64_t* slots,
                    int64_t n, int64_t row, void* kc, void* vc, float ks, float vs, int64_t num_slots, int64_t* rec) {
  reshape_and_cache_kernel<SD, CD><<<blocks, threads, 0, s>>>(k, v, slots, n, row, kc, vc, ks, vs, num_slots, rec);
}

template <int SD>
void launch_for_cache(int32_t cd, int blocks, int threads, cudaStream_t s, const void* k, const void* v,
                      const int64_t* slots, int64_t n, int64_t row, void* kc, void* vc, float ks, float vs,
                      int64_t num_slots, int64_t* rec) {
  switch (cd) {
    case RKV_DTYPE_F32: launch_scatter<SD, RKV_DTYPE_F32>(blocks, threads, s, k, v, slots, n, row, kc, vc, ks, vs, num_slots, rec); break;
    case RKV_DTYPE_F16: launch_scatter<SD, RKV_DTYPE_F16>(blocks, threads, s, k, v, slots, n, row, kc, vc, ks, vs, num_slots, rec); break;
    case RKV_DTYPE_BF16: launch_scatter<SD, RKV_DTYPE_BF16>(blocks, threads, s, k, v, slots, n, row, kc, vc, ks, vs, num_slots, rec); break;
    case RKV_DTYPE_FP8_E4M3: launch_scatter<SD, RKV_DTYPE_FP8_E4M3>(blocks, threads, s, k, v, slots, n, row, kc, vc, ks, vs, num_slots, rec); break;
    default: launch_scatter<SD, RKV_DTYPE_FP8_E5M2>(blocks, threads, s, k, v, slots, n, row, kc, vc, ks, vs, num_slots, rec); break;
  }
}

// blockIdx.x: pair, blockIdx.y: layer * 2 + (0 = K, 1 = V). 16-byte vectors when the pool and
// the page size are 16-byte aligned, else bytes. A pair with a page id out of range is skipped.
__global__ void copy_blocks_kernel(char* const* __restrict__ k_caches, char* const* __restrict__ v_caches,
                                   const int64_t* __restrict__ mapping, int64_t page_bytes, int64_t num_pages,
                                   int64_t* error_record) {
  const int64_t from = mapping[2 * blockIdx.x], to = mapping[2 * blockIdx.x + 1];
  if (from < 0 || from >= num_pages || to < 0 || to >= num_pages) {
    if (threadIdx.x == 0 && blockIdx.y == 0)
      rkv_cuda::record_error(error_record, RKV_CUDA_DEVERR_BAD_PAGE, blockIdx.x,
                             from < 0 || from >= num_pages ? from : to, num_pages);
    return;
  }
  char* base = (blockIdx.y % 2 == 0 ? k_caches : v_caches)[blockIdx.y / 2];
  const char* src = base + from * page_bytes;
  char* dst = base + to * page_bytes;
  if (page_bytes % 16 == 0 && (uintptr_t)base % 16 == 0) {
    const int4* s4 = (const int4*)src;
    int4* d4 = (int4*)dst;
    for (int64_t i = threadIdx.x; i < page_bytes / 16; i += blockDim.x) d4[i] = s4[i];
  } else {
    for (int64_t i = threadIdx.x; i < page_bytes; i += blockDim.x) dst[i] = src[i];
  }
}

bool valid_dtype(int32_t d) { return d >= RKV_DTYPE_F32 && d <= RKV_DTYPE_FP8_E5M2; }
bool is_fp8(int32_t d) { return d == RKV_DTYPE_FP8_E4M3 || d == RKV_DTYPE_FP8_E5M2; }

int check_scale(const char* name, float scale, int32_t cd) {
  RKV_CUDA_CHECK_ARG(scale > 0.0f && !std::isinf(scale),
                     "rkv_cuda_reshape_and_cache: %s must be positive and finite, got %g", name, (double)scale);
  RKV_CUDA_CHECK_ARG(is_fp8(cd) || scale == 1.0f, "rkv_cuda_reshape_and_cache: %s must be 1 for a non-fp8 cache, got %g",
                     name, (double)scale);
  return RKV_OK;
}

}  // namespace

extern "C" {

RKV_API int rkv_cuda_reshape_and_cache(const void* k, const void* v, int32_t src_dtype, const int64_t* slot_mapping,
                                       int64_t num_tokens, int32_t num_kv_heads, int32_t head_dim, void* k_cache,
                                       void* v_cache, int32_t cache_dtype, int64_t num_pages, int32_t page_size,
                                       float k_scale, float v_scale, int64_t* error_record, void* stream) {
  RKV_CUDA_CHECK_ARG(src_dtype == RKV_DTYPE_F32 || src_dtype == RKV_DTYPE_F16 || src_dtype == RKV_DTYPE_BF16,
                     "rkv_cuda_reshape_and_cache: src_dtype must be f32, f16 or bf16, got %d", src_dtype);
  RKV_CUDA_CHECK_ARG(valid_dtype(cache_dtype), "rkv_cuda_reshape_and_cache: unknown cache_dtype %d", cache_dtype);
  RKV_CUDA_CHECK_ARG(num_tokens >= 0, "rkv_cuda_reshape_and_cache: num_tokens must not be negative, got %lld",
                     (long long)num_tokens);
  RKV_CUDA_CHECK_ARG(num_kv_heads > 0 && head_dim > 0 && page_size > 0,
                     "rkv_cuda_reshape_and_cache: num_kv_heads (%d), head_dim (%d) and page_size (%d) must be positive",
                     num_kv_heads, head_dim, page_size);
  RKV_CUDA_CHECK_ARG(num_pages >= 0, "rkv_cuda_reshape_and_cache: num_pages must not be negative, got %lld",
                     (long long)num_pages);
  const int64_t row = (int64_t)num_kv_heads * head_dim;
  RKV_CUDA_CHECK_ARG(num_pages <= INT64_MAX / page_size / row / 4, "rkv_cuda_reshape_and_cache: pool too large");
  if (int e = check_scale("k_scale", k_scale, cache_dtype)) return e;
  if (int e = check_scale("v_scale", v_scale, cache_dtype)) return e;
  if (num_tokens == 0) return RKV_OK;
  RKV_CUDA_CHECK_ARG(k && v && slot_mapping && k_cache && v_cache,
                     "rkv_cuda_reshape_and_cache: k, v, slot_mapping, k_cache and v_cache must not be NULL");
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  const int64_t num_slots = num_pages * page_size;
  const int threads = row >= 256 ? 256 : (int)((row + 31) / 32 * 32);
  const int blocks = (int)(num_tokens < 65535 * 16 ? num_tokens : 65535 * 16);
  switch (src_dtype) {
    case RKV_DTYPE_F32:
      launch_for_cache<RKV_DTYPE_F32>(cache_dtype, blocks, threads, s, k, v, slot_mapping, num_tokens, row, k_cache,
                                      v_cache, k_scale, v_scale, num_slots, error_record);
      break;
    case RKV_DTYPE_F16:
      launch_for_cache<RKV_DTYPE_F16>(cache_dtype, blocks, threads, s, k, v, slot_mapping, num_tokens, row, k_cache,
                                      v_cache, k_scale, v_scale, num_slots, error_record);
      break;
    default:
      launch_for_cache<RKV_DTYPE_BF16>(cache_dtype, blocks, threads, s, k, v, slot_mapping, num_tokens, row, k_cache,
                                       v_cache, k_scale, v_scale, num_slots, error_record);
      break;
  }
  RKV_CUDA_CHECK_LAUNCH();
  return RKV_OK;
}

RKV_API int rkv_cuda_copy_blocks(void* const* k_caches, void* const* v_caches, int32_t num_layers,
                                 const int64_t* block_mapping, int64_t num_pairs, int64_t page_bytes, int64_t num_pages,
                                 int64_t* error_record, void* stream) {
  RKV_CUDA_CHECK_ARG(num_layers >= 0 && num_layers <= 32767, "rkv_cuda_copy_blocks: num_layers %d out of range [0, 32767]",
                     num_layers);
  RKV_CUDA_CHECK_ARG(num_pairs >= 0 && num_pairs <= INT32_MAX, "rkv_cuda_copy_blocks: num_pairs %lld out of range",
                     (long long)num_pairs);
  RKV_CUDA_CHECK_ARG(page_bytes > 0, "rkv_cuda_copy_blocks: page_bytes must be positive, got %lld", (long long)page_bytes);
  RKV_CUDA_CHECK_ARG(num_pages >= 0 && num_pages <= INT64_MAX / page_bytes,
                     "rkv_cuda_copy_blocks: num_pages %lld out of range", (long long)num_pages);
  if (num_pairs == 0 || num_layers == 0) return RKV_OK;
  RKV_CUDA_CHECK_ARG(k_caches && v_caches && block_mapping,
                     "rkv_cuda_copy_blocks: k_caches, v_caches and block_mapping must not be NULL");
  copy_blocks_kernel<<<dim3((unsigned)num_pairs, (unsigned)(num_layers * 2)), 256, 0, static_cast<cudaStream_t>(stream)>>>(
      (char* const*)k_caches, (char* const*)v_caches, block_mapping, page_bytes, num_pages, error_record);
  RKV_CUDA_CHECK_LAUNCH();
  return RKV_OK;
}

}  // extern "C"
