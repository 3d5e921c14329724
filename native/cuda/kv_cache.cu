// KV scatter (reshape_and_cache) and page copy (copy_blocks) on the GPU. Element arithmetic
// and slot math come from the RKV_HD helpers shared with the CPU (rkv_kv.h, rkv_dtype.h).
//
// Slots live in device memory, so they are validated on the device: a first kernel records
// the first token whose slot is >= num_pages * page_size in a flag, the scatter kernel
// writes nothing when the flag is set, and the host reads the flag back (one synchronous
// 8-byte copy) to report the bad slot. The Java backend validates on a host copy before
// the call as well.
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "kv_blocks.h"
#include "rkv_cuda_common.cuh"
#include "rkv_kv.h"

namespace {

constexpr int kThreads = 256;
// "No bad slot" sentinel: what cudaMemset with 0x7F bytes writes into an int64.
constexpr long long kNoBadSlot = 0x7F7F7F7F7F7F7F7FLL;

// One flag per device, allocated on first use and kept for the process lifetime.
std::mutex g_flag_mutex;
long long* g_flags[256] = {};

int flag_for_current_device(long long** out) {
  int dev = 0;
  RKV_CUDA_TRY(cudaGetDevice(&dev));
  if (dev < 0 || dev >= 256) return rkv::set_error(RKV_ERR_INTERNAL, "device id %d out of range", dev);
  std::lock_guard<std::mutex> lock(g_flag_mutex);
  if (!g_flags[dev]) {
    void* p = nullptr;
    RKV_CUDA_TRY(cudaMalloc(&p, sizeof(long long)));
    g_flags[dev] = (long long*)p;
  }
  *out = g_flags[dev];
  return RKV_OK;
}

__global__ void find_bad_slot_kernel(const int64_t* __restrict__ slots, int64_t n, int64_t num_slots,
                                     long long* __restrict__ flag) {
  for (int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; t < n; t += (int64_t)gridDim.x * blockDim.x)
    if (slots[t] >= num_slots) atomicMin(flag, (long long)t);
}

// One block per token (grid-stride over tokens); threads walk the token's row, which is
// contiguous in the input and in the pool.
template <int SD, int CD>
__global__ void reshape_and_cache_kernel(const void* __restrict__ k, const void* __restrict__ v,
                                         const int64_t* __restrict__ slots, int64_t num_tokens, int64_t row,
                                         void* __restrict__ k_cache, void* __restrict__ v_cache, float k_scale,
                                         float v_scale, const long long* __restrict__ flag) {
  if (*flag != kNoBadSlot) return;  // some slot is out of range: write nothing
  constexpr int mode = SD == CD ? rkv::kScaleNone : (CD == RKV_DTYPE_FP8_E4M3 || CD == RKV_DTYPE_FP8_E5M2)
                                                        ? rkv::kScaleDiv
                                                        : rkv::kScaleNone;
  for (int64_t t = blockIdx.x; t < num_tokens; t += gridDim.x) {
    const int64_t slot = slots[t];
    if (rkv::slot_is_padding(slot)) continue;
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
                    int64_t n, int64_t row, void* kc, void* vc, float ks, float vs, const long long* flag) {
  reshape_and_cache_kernel<SD, CD><<<blocks, threads, 0, s>>>(k, v, slots, n, row, kc, vc, ks, vs, flag);
}

template <int SD>
void launch_for_cache(int32_t cd, int blocks, int threads, cudaStream_t s, const void* k, const void* v,
                      const int64_t* slots, int64_t n, int64_t row, void* kc, void* vc, float ks, float vs,
                      const long long* flag) {
  switch (cd) {
    case RKV_DTYPE_F32: launch_scatter<SD, RKV_DTYPE_F32>(blocks, threads, s, k, v, slots, n, row, kc, vc, ks, vs, flag); break;
    case RKV_DTYPE_F16: launch_scatter<SD, RKV_DTYPE_F16>(blocks, threads, s, k, v, slots, n, row, kc, vc, ks, vs, flag); break;
    case RKV_DTYPE_BF16: launch_scatter<SD, RKV_DTYPE_BF16>(blocks, threads, s, k, v, slots, n, row, kc, vc, ks, vs, flag); break;
    case RKV_DTYPE_FP8_E4M3: launch_scatter<SD, RKV_DTYPE_FP8_E4M3>(blocks, threads, s, k, v, slots, n, row, kc, vc, ks, vs, flag); break;
    default: launch_scatter<SD, RKV_DTYPE_FP8_E5M2>(blocks, threads, s, k, v, slots, n, row, kc, vc, ks, vs, flag); break;
  }
}

// blockIdx.x: pair, blockIdx.y: layer * 2 + (0 = K, 1 = V). 16-byte vectors when every
// page start is 16-byte aligned, else bytes.
__global__ void copy_blocks_kernel(char* const* __restrict__ caches, const int64_t* __restrict__ mapping,
                                   int64_t page_bytes, bool vec16) {
  char* base = caches[blockIdx.y];
  const char* src = base + mapping[2 * blockIdx.x] * page_bytes;
  char* dst = base + mapping[2 * blockIdx.x + 1] * page_bytes;
  if (vec16) {
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
                                       float k_scale, float v_scale) {
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
  long long* flag = nullptr;
  if (int e = flag_for_current_device(&flag)) return e;
  cudaStream_t s = rkv_cuda::current_stream();
  const int64_t num_slots = num_pages * page_size;
  RKV_CUDA_TRY(cudaMemsetAsync(flag, 0x7F, sizeof(long long), s));
  int64_t vb = (num_tokens + kThreads - 1) / kThreads;
  find_bad_slot_kernel<<<(int)(vb < 4096 ? vb : 4096), kThreads, 0, s>>>(slot_mapping, num_tokens, num_slots, flag);
  RKV_CUDA_CHECK_LAUNCH();
  const int threads = row >= 256 ? 256 : (int)((row + 31) / 32 * 32);
  const int blocks = (int)(num_tokens < 65535 * 16 ? num_tokens : 65535 * 16);
  switch (src_dtype) {
    case RKV_DTYPE_F32:
      launch_for_cache<RKV_DTYPE_F32>(cache_dtype, blocks, threads, s, k, v, slot_mapping, num_tokens, row, k_cache,
                                      v_cache, k_scale, v_scale, flag);
      break;
    case RKV_DTYPE_F16:
      launch_for_cache<RKV_DTYPE_F16>(cache_dtype, blocks, threads, s, k, v, slot_mapping, num_tokens, row, k_cache,
                                      v_cache, k_scale, v_scale, flag);
      break;
    default:
      launch_for_cache<RKV_DTYPE_BF16>(cache_dtype, blocks, threads, s, k, v, slot_mapping, num_tokens, row, k_cache,
                                       v_cache, k_scale, v_scale, flag);
      break;
  }
  RKV_CUDA_CHECK_LAUNCH();
  // Report a bad slot (nothing was written): one small synchronous read-back.
  long long bad = kNoBadSlot;
  RKV_CUDA_TRY(cudaMemcpyAsync(&bad, flag, sizeof bad, cudaMemcpyDeviceToHost, s));
  RKV_CUDA_TRY(cudaStreamSynchronize(s));
  if (bad != kNoBadSlot) {
    int64_t slot = 0;
    RKV_CUDA_TRY(cudaMemcpy(&slot, slot_mapping + bad, sizeof slot, cudaMemcpyDeviceToHost));
    return rkv::set_error(
        RKV_ERR_INVALID_ARGUMENT,
        "rkv_cuda_reshape_and_cache: slot_mapping[%lld] = %lld is out of range (num_pages * page_size = %lld)",
        bad, (long long)slot, (long long)num_slots);
  }
  return RKV_OK;
}

RKV_API int rkv_cuda_copy_blocks(void* const* k_caches, void* const* v_caches, int32_t num_layers,
                                 const int64_t* block_mapping, int64_t num_pairs, int64_t page_bytes, int64_t num_pages) {
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
  bool aligned = page_bytes % 16 == 0;
  for (int32_t l = 0; l < num_layers; ++l) {
    RKV_CUDA_CHECK_ARG(k_caches[l] && v_caches[l], "rkv_cuda_copy_blocks: k_caches[%d] or v_caches[%d] is NULL", l, l);
    aligned = aligned && ((uintptr_t)k_caches[l] % 16 == 0) && ((uintptr_t)v_caches[l] % 16 == 0);
  }
  char msg[256];
  if (!rkv::check_block_mapping(block_mapping, num_pairs, num_pages, msg, sizeof msg))
    return rkv::set_error(RKV_ERR_INVALID_ARGUMENT, "rkv_cuda_copy_blocks: %s", msg);
  // Pointers (K0 V0 K1 V1 ...) and the mapping go to the device in one stream-ordered buffer.
  const size_t ptr_bytes = (size_t)num_layers * 2 * sizeof(void*);
  const size_t map_bytes = (size_t)num_pairs * 2 * sizeof(int64_t);
  char* host = (char*)std::malloc(ptr_bytes + map_bytes);
  if (!host) return rkv::set_error(RKV_ERR_OUT_OF_MEMORY, "rkv_cuda_copy_blocks: host staging buffer");
  for (int32_t l = 0; l < num_layers; ++l) {
    ((void**)host)[2 * l] = k_caches[l];
    ((void**)host)[2 * l + 1] = v_caches[l];
  }
  std::memcpy(host + ptr_bytes, block_mapping, map_bytes);
  cudaStream_t s = rkv_cuda::current_stream();
  void* dev = nullptr;
  cudaError_t err = cudaMallocAsync(&dev, ptr_bytes + map_bytes, s);
  if (err == cudaSuccess) err = cudaMemcpyAsync(dev, host, ptr_bytes + map_bytes, cudaMemcpyHostToDevice, s);
  // the host staging buffer must outlive the (pageable, hence staged-synchronously) copy
  if (err == cudaSuccess) err = cudaStreamSynchronize(s);
  std::free(host);
  if (err != cudaSuccess) {
    if (dev) cudaFreeAsync(dev, s);
    return rkv::set_error(RKV_ERR_CUDA, "rkv_cuda_copy_blocks: staging: %s", cudaGetErrorString(err));
  }
  copy_blocks_kernel<<<dim3((unsigned)num_pairs, (unsigned)(num_layers * 2)), 256, 0, s>>>(
      (char* const*)dev, (const int64_t*)((char*)dev + ptr_bytes), page_bytes, aligned);
  cudaError_t launch = cudaGetLastError();
  RKV_CUDA_TRY(cudaFreeAsync(dev, s));
  if (launch != cudaSuccess)
    return rkv::set_error(RKV_ERR_CUDA, "rkv_cuda_copy_blocks: launch: %s", cudaGetErrorString(launch));
  return RKV_OK;
}

}  // extern "C"
