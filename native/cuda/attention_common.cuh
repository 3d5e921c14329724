// Shared pieces of the CUDA paged attention (libradixkv_cuda), one kernel family per file:
//   attention_decode.cu   decode (split-KV + merge), rkv_cuda_decode_attention[_run]
//   attention_prefill.cu  tiled append prefill, rkv_cuda_append_prefill_attention[_run]
//   attention_merge.cu    merge_state, rkv_cuda_merge_state (needs nothing from here)
//   attention_plan.cu     the plan: rkv_cuda_attn_plan_create/_destroy/_batch/_info
// Same ABI and semantics as the CPU kernels (radixkv.h); the dtype conversions (rkv_dtype.h)
// and the softmax/merge arithmetic (rkv_softmax.h) are the RKV_HD helpers the CPU code uses.
//
// Contract: page tables and tensors are device pointers; the CSR is validated on the host by
// the Java layer (CudaAttentionKernels) before the call. As a memory-safety guard the kernels
// skip page ids outside [0, num_pages) instead of reading out of bounds.
//
// Linkage: everything below except rkv_cuda_attn_plan and rkv_cuda_attn:: sits in an unnamed
// namespace, as it did when the families shared one file: each .cu gets its own internal
// copy and nothing becomes a symbol of libradixkv_cuda (its CUDA objects are compiled with
// default visibility, so any external function would be exported). Host functions are
// `inline` so that a file which uses only some of them compiles without unused-function
// warnings (-Werror); the device helpers are __forceinline__ already.
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>

#include "attn_plan.h"
#include "rkv_cuda_common.cuh"
#include "rkv_dtype.h"
#include "rkv_softmax.h"

namespace {

constexpr int kWarps = 4;            // warps per block
constexpr int kThreads = kWarps * 32;
constexpr int kMaxHeadDim = 256;

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ __forceinline__ int64_t seq_len(const int32_t* indptr, const int32_t* last, int b, int ps) {
  int pages = indptr[b + 1] - indptr[b];
  return pages == 0 ? 0 : (int64_t)ps * (pages - 1) + last[b];
}

// Element offset of (token t, kv head h) in a pool, or -1 for an invalid page id. Page and
// in-page position use 32-bit division when t fits (always, in practice): 64-bit division is a
// long software sequence on the GPU and this runs once per token.
__device__ __forceinline__ int64_t row_offset(const int32_t* indices, int32_t first, int64_t t, int ps, int nkv,
                                              int kvh, int hd, int64_t num_pages) {
  int64_t pi, pos;
  if (t <= 0x7fffffff) {
    const uint32_t t32 = (uint32_t)t, q = t32 / (uint32_t)ps;
    pi = q;
    pos = t32 - q * (uint32_t)ps;
  } else {
    pi = t / ps;
    pos = t % ps;
  }
  int64_t page = indices[first + pi];
  if (page < 0 || page >= num_pages) return -1;
  return ((page * ps + pos) * nkv + kvh) * (int64_t)hd;
}

// Elements [e, e + VEC) of a K/V pool as floats. With `vector` (the row start and the pool are
// aligned to the vector: head_dim % VEC == 0 and a 16-byte aligned pool) one load of VEC
// elements (VEC * element bytes, at most 16 bytes per load), else element by element.
template <int N>
__device__ __forceinline__ void load_words(const uint8_t* p, uint32_t* w) {
  if constexpr (N >= 16) {
#pragma unroll
    for (int j = 0; j < N / 16; j++) {
      const uint4 x = reinterpret_cast<const uint4*>(p)[j];
      w[4 * j] = x.x;
      w[4 * j + 1] = x.y;
      w[4 * j + 2] = x.z;
      w[4 * j + 3] = x.w;
    }
  } else if constexpr (N == 8) {
    const uint2 x = *reinterpret_cast<const uint2*>(p);
    w[0] = x.x;
    w[1] = x.y;
  } else if constexpr (N == 4) {
    w[0] = *reinterpret_cast<const uint32_t*>(p);
  } else if constexpr (N == 2) {
    w[0] = *reinterpret_cast<const uint16_t*>(p);
  } else {
    w[0] = *p;
  }
}

template <int VEC>
__device__ __forceinline__ void load_vec(const uint8_t* base, int64_t e, int dtype, bool vector, float* out) {
  if (!vector) {
#pragma unroll
    for (int i = 0; i < VEC; i++) out[i] = rkv::load_as_float(base, e + i, dtype);
    return;
  }
  uint32_t w[(VEC * 4 + 3) / 4];
  switch (dtype) {
    case RKV_DTYPE_F32:
      load_words<VEC * 4>(base + e * 4, w);
#pragma unroll
      for (int i = 0; i < VEC; i++) out[i] = __uint_as_float(w[i]);
      break;
    case RKV_DTYPE_F16:
    case RKV_DTYPE_BF16:
      load_words<VEC * 2>(base + e * 2, w);
#pragma unroll
      for (int i = 0; i < VEC; i++) {
        const uint16_t h = (uint16_t)(w[i / 2] >> (16 * (i % 2)));
        out[i] = dtype == RKV_DTYPE_BF16 ? rkv::bf16_to_float(h) : rkv::f16_to_float(h);
      }
      break;
    default:
      load_words<VEC>(base + e, w);
#pragma unroll
      for (int i = 0; i < VEC; i++) {
        const uint8_t c = (uint8_t)(w[i / 4] >> (8 * (i % 4)));
        out[i] = dtype == RKV_DTYPE_FP8_E4M3 ? rkv::fp8_e4m3_to_float(c) : rkv::fp8_e5m2_to_float(c);
      }
      break;
  }
}

struct Params {
  const void* q;
  int q_dtype;
  void* out;
  int out_dtype;
  float* lse;
  const uint8_t* k;
  const uint8_t* v;
  int cache_dtype;
  int64_t num_pages;
  int ps, nqo, nkv, hd;
  const int32_t* indptr;
  const int32_t* indices;
  const int32_t* last;
  float q_mul, cap, v_mul;
  int32_t window_left;  // -1: no sliding window
};

// ---------------------------------------------------------------- host helpers

inline bool io_dtype(int32_t d) { return d == RKV_DTYPE_F32 || d == RKV_DTYPE_F16 || d == RKV_DTYPE_BF16; }

inline int check_common(const Params& p, int batch, float sm_scale, float k_scale, float v_scale) {
  RKV_CUDA_CHECK_ARG(p.window_left >= -1, "window_left must be -1 (no window) or >= 0, got %d", p.window_left);
  RKV_CUDA_CHECK_ARG(batch >= 0, "batch_size must be >= 0, got %d", batch);
  RKV_CUDA_CHECK_ARG(p.nqo > 0 && p.nkv > 0 && p.nqo % p.nkv == 0,
                     "num_qo_heads (%d) must be a positive multiple of num_kv_heads (%d)", p.nqo, p.nkv);
  RKV_CUDA_CHECK_ARG(p.hd > 0 && p.hd <= kMaxHeadDim, "head_dim must be in 1..%d, got %d", kMaxHeadDim, p.hd);
  RKV_CUDA_CHECK_ARG(p.ps > 0, "page_size must be positive, got %d", p.ps);
  RKV_CUDA_CHECK_ARG(p.num_pages >= 0, "num_pages must be >= 0");
  RKV_CUDA_CHECK_ARG(rkv::dtype_size(p.cache_dtype) > 0, "unknown cache dtype %d", p.cache_dtype);
  RKV_CUDA_CHECK_ARG(io_dtype(p.q_dtype) && io_dtype(p.out_dtype), "q/out dtypes must be f32, f16 or bf16 (got %d, %d)",
                     p.q_dtype, p.out_dtype);
  RKV_CUDA_CHECK_ARG(std::isfinite(sm_scale) && sm_scale > 0.f, "sm_scale must be positive and finite");
  RKV_CUDA_CHECK_ARG(std::isfinite(k_scale) && k_scale > 0.f && std::isfinite(v_scale) && v_scale > 0.f,
                     "k_scale and v_scale must be positive and finite");
  if (batch > 0) {
    RKV_CUDA_CHECK_ARG(p.q && p.out && p.indptr && p.last, "q, out, kv_indptr and kv_last_page_len must not be NULL");
    RKV_CUDA_CHECK_ARG(p.num_pages == 0 || (p.k && p.v && p.indices), "k_cache, v_cache and kv_indices must not be NULL");
  }
  return RKV_OK;
}

inline Params make_params(const rkv_attention_args& a, const rkv_paged_kv& kv) {
  Params p;
  p.q = a.q;
  p.q_dtype = a.q_dtype;
  p.out = a.out;
  p.out_dtype = a.out_dtype;
  p.lse = a.lse;
  p.k = static_cast<const uint8_t*>(kv.k_cache);
  p.v = static_cast<const uint8_t*>(kv.v_cache);
  p.cache_dtype = kv.cache_dtype;
  p.num_pages = kv.num_pages;
  p.ps = kv.page_size;
  p.nqo = a.num_qo_heads;
  p.nkv = kv.num_kv_heads;
  p.hd = kv.head_dim;
  p.indptr = kv.kv_indptr;
  p.indices = kv.kv_indices;
  p.last = kv.kv_last_page_len;
  const bool fp8 = kv.cache_dtype == RKV_DTYPE_FP8_E4M3 || kv.cache_dtype == RKV_DTYPE_FP8_E5M2;
  p.cap = a.logits_soft_cap > 0.f ? a.logits_soft_cap : 0.f;
  p.q_mul = rkv::logit_q_scale(a.sm_scale * (fp8 ? kv.k_scale : 1.f), p.cap);
  p.v_mul = fp8 ? kv.v_scale : 1.f;
  p.window_left = a.window_left;
  return p;
}

// The checks every attention entry point makes on its params struct (NULL included); fills *out.
inline int params_of(const rkv_attention_args* a, const rkv_paged_kv* kv, Params* out) {
  RKV_CUDA_CHECK_ARG(a != nullptr && kv != nullptr, "params must not be NULL");
  *out = make_params(*a, *kv);
  return check_common(*out, kv->batch_size, a->sm_scale, kv->k_scale, kv->v_scale);
}

inline int vec_for(int hd) { return hd <= 32 ? 1 : hd <= 64 ? 2 : hd <= 128 ? 4 : 8; }

// prefill work items (attn_plan.h): the prefill kernel reads them, the plan below owns them
using rkv_attn_plan::PrefillItem;

}  // namespace

// The plan: what rkv_cuda_attn_plan_batch decided and the buffers it owns (grown, never shrunk).
// attention_plan.cu fills it; the decode and prefill launches read it.
struct rkv_cuda_attn_plan {
  bool planned = false, decode = false;
  int32_t batch = 0, page_size = 0, nqo = 0, nkv = 0, hd = 0;
  int nsplit = 1;                // decode
  int64_t num_items = 0;         // prefill
  float* partial = nullptr;      // decode partial outputs + LSEs (device)
  size_t partial_cap = 0;        // floats
  PrefillItem* items = nullptr;  // prefill work items (device)
  size_t items_cap = 0;
  PrefillItem* staging = nullptr;  // pinned host copy of the items
  size_t staging_cap = 0;
  cudaEvent_t uploaded = nullptr;  // recorded after the last items upload
  bool upload_pending = false;
  cudaStream_t stream = nullptr;   // the stream of the last plan (buffers are ordered on it)
};

namespace {

inline int check_run(const rkv_cuda_attn_plan* plan, bool decode, const Params& p, int32_t batch) {
  RKV_CUDA_CHECK_ARG(plan != nullptr && plan->planned, "attention run: the plan is NULL or was never planned");
  RKV_CUDA_CHECK_ARG(plan->decode == decode, "attention run: a %s plan cannot run %s attention",
                     plan->decode ? "decode" : "prefill", decode ? "decode" : "append-prefill");
  RKV_CUDA_CHECK_ARG(plan->batch == batch && plan->page_size == p.ps && plan->nqo == p.nqo && plan->nkv == p.nkv &&
                         plan->hd == p.hd,
                     "attention run: batch %d, page_size %d, heads %d/%d, head_dim %d differ from the plan's "
                     "(%d, %d, %d/%d, %d)",
                     batch, p.ps, p.nqo, p.nkv, p.hd, plan->batch, plan->page_size, plan->nqo, plan->nkv, plan->hd);
  return RKV_OK;
}

// Host copies of device tables for the one-shot forms (which synchronize by contract).
struct HostTables {
  int32_t* qo = nullptr;
  int32_t* indptr = nullptr;
  int32_t* last = nullptr;
  ~HostTables() {
    if (qo) cudaFreeHost(qo);
  }
  int fetch(const int32_t* d_qo, const int32_t* d_indptr, const int32_t* d_last, int32_t batch, cudaStream_t s) {
    const size_t n = (size_t)batch + 1;
    RKV_CUDA_TRY(cudaMallocHost(reinterpret_cast<void**>(&qo), 3 * n * sizeof(int32_t)));
    indptr = qo + n;
    last = indptr + n;
    if (d_qo) RKV_CUDA_TRY(cudaMemcpyAsync(qo, d_qo, n * sizeof(int32_t), cudaMemcpyDeviceToHost, s));
    RKV_CUDA_TRY(cudaMemcpyAsync(indptr, d_indptr, n * sizeof(int32_t), cudaMemcpyDeviceToHost, s));
    RKV_CUDA_TRY(cudaMemcpyAsync(last, d_last, (n - 1) * sizeof(int32_t), cudaMemcpyDeviceToHost, s));
    RKV_CUDA_TRY(cudaStreamSynchronize(s));
    return RKV_OK;
  }
};

// A temporary plan destroyed at scope exit, after the stream has finished with it.
struct TempPlan {
  rkv_cuda_attn_plan* plan = nullptr;
  ~TempPlan() { rkv_cuda_attn_plan_destroy(plan); }
};

}  // namespace

namespace rkv_cuda_attn {

// The decode kernel's occupancy x SMs, the planner's split target (attention_decode.cu; the one
// function shared between files). Hidden: an internal helper, not part of the library's ABI.
__attribute__((visibility("hidden"))) int decode_resident_blocks(int hd, int group);

}  // namespace rkv_cuda_attn
