// CUDA paged attention: decode (split-KV + merge), tiled append prefill, merge_state.
// Same ABI and semantics as the CPU kernels (radixkv.h); the dtype conversions (rkv_dtype.h)
// and the softmax/merge arithmetic (rkv_softmax.h) are the RKV_HD helpers the CPU code uses.
//
// Layout of a row inside a warp: lane l holds elements d = i*32 + l (i < VEC), so global loads
// of a K/V row are coalesced per i and shared-memory reads are bank-conflict free.
//
// Contract: page tables and tensors are device pointers; the CSR is validated on the host by
// the Java layer (CudaAttentionKernels) before the call. As a memory-safety guard the kernels
// skip page ids outside [0, num_pages) instead of reading out of bounds.
//
// Plan/run (FlashInfer's split): rkv_cuda_attn_plan_batch decides the decode split count and the
// prefill work items on the host (attn_plan.h) once per engine step and owns the buffers they
// need; the _run entry points only check arguments and launch.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <new>

#include "attn_plan.h"
#include "rkv_cuda_common.cuh"
#include "rkv_dtype.h"
#include "rkv_mask.h"
#include "rkv_softmax.h"

namespace {

constexpr int kWarps = 4;            // warps per block
constexpr int kThreads = kWarps * 32;
constexpr int kMaxDecodeGroup = 8;   // most query heads of a GQA group handled together per pass
constexpr int kMaxHeadDim = 256;
constexpr int kPrefillRowsPerWarp = 4;
constexpr int kPrefillRows = kWarps * kPrefillRowsPerWarp;  // query rows (token x head) per block
constexpr int kPrefillTile = 16;     // KV tokens per shared-memory tile

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

// ---------------------------------------------------------------- decode

// grid (num_kv_heads, batch, nsplit); each block handles one KV chunk of one (sequence, kv
// head) for all its query heads, GROUP (<= 8, the group size rounded up to a power of two) at a
// time, so small GQA groups hold no idle per-head registers; warps take interleaved tokens and
// are merged at the end. With nsplit > 1 the normalized partial results and LSEs go to the
// workspace.
// Memory-level parallelism: a warp issues the page-id and K/V loads of kUnroll tokens before
// folding any of them (the fold order is that of one token at a time), lane l holds the
// contiguous elements l*VEC .. l*VEC+VEC-1 of a row so a row is read with one vector load per
// lane (load_vec), token -> page arithmetic is 32-bit, and the planner sizes nsplit to the
// kernel's occupancy.
template <int VEC, int GROUP>
__global__ void __launch_bounds__(kThreads) decode_kernel(Params p, int nsplit, float* part_o, float* part_s) {
  const int kvh = blockIdx.x, b = blockIdx.y, z = blockIdx.z;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int G = p.nqo / p.nkv;
  const int64_t len = seq_len(p.indptr, p.last, b, p.ps);
  // the query is at position len - 1; positions before its window are in no chunk (never read)
  const int64_t begin = len > 0 ? rkv::window_begin(len - 1, p.window_left) : 0;
  const int64_t chunk = (len - begin + nsplit - 1) / nsplit;
  const int64_t t0 = min(len, begin + (int64_t)z * chunk), t1 = min(len, t0 + chunk);
  const int32_t first = p.indptr[b];
  // whole-vector loads: rows start at multiples of head_dim elements, so head_dim % VEC == 0 and
  // 16-byte aligned pools keep every lane's vector aligned
  const bool vector = p.hd % VEC == 0 && ((uintptr_t)p.k | (uintptr_t)p.v) % 16 == 0;
  const bool lane_full = (lane + 1) * VEC <= p.hd;  // this lane's VEC elements are all in the row

  __shared__ float sm_m[kWarps][GROUP], sm_l[kWarps][GROUP];
  __shared__ float sm_o[kWarps][GROUP][kMaxHeadDim];

  for (int g0 = 0; g0 < G; g0 += GROUP) {
    const int gn = min(GROUP, G - g0);
    float qv[GROUP][VEC], o[GROUP][VEC], m[GROUP], l[GROUP];
#pragma unroll
    for (int g = 0; g < GROUP; g++) {
      m[g] = -INFINITY;
      l[g] = 0.f;
#pragma unroll
      for (int i = 0; i < VEC; i++) {
        int d = lane * VEC + i;
        o[g][i] = 0.f;
        qv[g][i] = (g < gn && d < p.hd)
                       ? rkv::load_as_float(p.q, ((int64_t)b * p.nqo + kvh * G + g0 + g) * p.hd + d, p.q_dtype) * p.q_mul
                       : 0.f;
      }
    }
    // Each warp takes tokens t0 + warp, + kWarps, + 2 kWarps, ... (as one token per step would)
    // but loads kUnroll of them (page ids, then K and V rows) before using any, so several
    // tokens' memory latency overlaps; they are then folded in the same order, so results do
    // not depend on kUnroll.
    constexpr int kUnroll = VEC <= 4 ? 4 : 2;
    for (int64_t tb = t0 + warp; tb < t1; tb += (int64_t)kWarps * kUnroll) {
      int64_t off[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; u++) {
        const int64_t t = tb + (int64_t)u * kWarps;
        off[u] = t < t1 ? row_offset(p.indices, first, t, p.ps, p.nkv, kvh, p.hd, p.num_pages) : -1;
      }
      float kv[kUnroll][VEC], vv[kUnroll][VEC];
#pragma unroll
      for (int u = 0; u < kUnroll; u++) {
        if (off[u] >= 0 && lane_full) {
          load_vec<VEC>(p.k, off[u] + lane * VEC, p.cache_dtype, vector, kv[u]);
          load_vec<VEC>(p.v, off[u] + lane * VEC, p.cache_dtype, vector, vv[u]);
        } else {
#pragma unroll
          for (int i = 0; i < VEC; i++) {
            const int d = lane * VEC + i;
            kv[u][i] = off[u] >= 0 && d < p.hd ? rkv::load_as_float(p.k, off[u] + d, p.cache_dtype) : 0.f;
            vv[u][i] = off[u] >= 0 && d < p.hd ? rkv::load_as_float(p.v, off[u] + d, p.cache_dtype) : 0.f;
          }
        }
      }
#pragma unroll
      for (int u = 0; u < kUnroll; u++) {
        if (off[u] < 0) continue;  // past the chunk, or an invalid page id (skipped, as before)
#pragma unroll
        for (int g = 0; g < GROUP; g++) {
          if (g >= gn) break;
          float s = 0.f;
#pragma unroll
          for (int i = 0; i < VEC; i++) s = fmaf(qv[g][i], kv[u][i], s);
          float x = rkv::logit_base2(warp_sum(s), p.cap);
          float m_new = fmaxf(m[g], x);
          float sc = rkv::softmax_rescale(m[g], m_new);
          float pr = exp2f(x - m_new);
          l[g] = l[g] * sc + pr;
#pragma unroll
          for (int i = 0; i < VEC; i++) o[g][i] = fmaf(pr, vv[u][i], o[g][i] * sc);
          m[g] = m_new;
        }
      }
    }
#pragma unroll
    for (int g = 0; g < GROUP; g++) {
      if (lane == 0) {
        sm_m[warp][g] = m[g];
        sm_l[warp][g] = l[g];
      }
#pragma unroll
      for (int i = 0; i < VEC; i++) {
        int d = lane * VEC + i;
        if (d < p.hd) sm_o[warp][g][d] = o[g][i];
      }
    }
    __syncthreads();
    for (int idx = threadIdx.x; idx < gn * p.hd; idx += kThreads) {
      const int g = idx / p.hd, d = idx % p.hd;
      float M = -INFINITY;
      for (int w = 0; w < kWarps; w++) M = fmaxf(M, sm_m[w][g]);
      float L = 0.f, O = 0.f;
      if (M != -INFINITY) {
        for (int w = 0; w < kWarps; w++) {
          float f = exp2f(sm_m[w][g] - M);  // 0 for a warp that saw no token
          L += sm_l[w][g] * f;
          O += sm_o[w][g][d] * f;
        }
      }
      rkv::SoftmaxState st{M, L};
      const float lse = rkv::softmax_lse(st);
      const float val = L != 0.f ? O / L * p.v_mul : 0.f;
      const int64_t row = (int64_t)b * p.nqo + kvh * G + g0 + g;
      if (nsplit == 1) {
        rkv::store_from_float(p.out, row * p.hd + d, p.out_dtype, val);
        if (d == 0 && p.lse != nullptr) p.lse[row] = lse;
      } else {
        part_o[(row * nsplit + z) * p.hd + d] = val;
        if (d == 0) part_s[row * nsplit + z] = lse;
      }
    }
    __syncthreads();
  }
}

// grid (batch * num_qo_heads): folds the nsplit partial results of one row (in KV order).
__global__ void __launch_bounds__(kThreads) decode_merge_kernel(Params p, int nsplit, const float* part_o,
                                                                const float* part_s) {
  const int64_t row = blockIdx.x;
  const float* s = part_s + row * nsplit;
  float M = -INFINITY;
  for (int k = 0; k < nsplit; k++) M = fmaxf(M, s[k]);
  float sum = 0.f;
  if (M != -INFINITY)
    for (int k = 0; k < nsplit; k++) sum += expf(s[k] - M);
  for (int d = threadIdx.x; d < p.hd; d += kThreads) {
    float acc = 0.f;
    if (M != -INFINITY)
      for (int k = 0; k < nsplit; k++) acc += expf(s[k] - M) * part_o[(row * nsplit + k) * p.hd + d];
    rkv::store_from_float(p.out, row * p.hd + d, p.out_dtype, M != -INFINITY ? acc / sum : 0.f);
  }
  if (threadIdx.x == 0 && p.lse != nullptr) p.lse[row] = M != -INFINITY ? M + logf(sum) : -INFINITY;
}

// ---------------------------------------------------------------- append prefill

using rkv_attn_plan::PrefillItem;
static_assert(kPrefillRows == rkv_attn_plan::kPrefillRows, "prefill rows per block must match the planner");

// One block per item: kPrefillRows consecutive rows r of the flattened (query token i, head g)
// list of one (sequence, kv head), r = i * G + g. Every K/V tile is converted once into shared
// memory and used by all rows (all GQA heads of the group and several query tokens).
template <int VEC>
__global__ void __launch_bounds__(kThreads) prefill_kernel(Params p, const PrefillItem* items,
                                                           const int32_t* qo_indptr, const int32_t* bidir_indptr,
                                                           const int32_t* bidir_regions) {
  const PrefillItem it = items[blockIdx.x];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int G = p.nqo / p.nkv;
  const int32_t q_begin = qo_indptr[it.b];
  const int32_t q_len = qo_indptr[it.b + 1] - q_begin;
  const int64_t kv_len = seq_len(p.indptr, p.last, it.b, p.ps);
  const int64_t off = kv_len - q_len;
  const int64_t rows_total = (int64_t)q_len * G;
  const int32_t first = p.indptr[it.b];

  __shared__ float ks[kPrefillTile][kMaxHeadDim], vs[kPrefillTile][kMaxHeadDim];
  __shared__ int64_t sm_begin[kWarps], sm_end[kWarps];
  __shared__ int64_t tile_off[kPrefillTile];  // row offsets of the tile's tokens (-1: invalid page)
  // 4-element vector loads of the tile when every row start is aligned to them
  const bool vec4 = p.hd % 4 == 0 && ((uintptr_t)p.k | (uintptr_t)p.v) % 16 == 0;

  float qv[kPrefillRowsPerWarp][VEC], o[kPrefillRowsPerWarp][VEC], m[kPrefillRowsPerWarp], l[kPrefillRowsPerWarp];
  // row j sees KV positions [lo[j], lim[j])
  int64_t lo[kPrefillRowsPerWarp], lim[kPrefillRowsPerWarp], orow[kPrefillRowsPerWarp];
  int64_t warp_begin = INT64_MAX, warp_end = 0;
#pragma unroll
  for (int j = 0; j < kPrefillRowsPerWarp; j++) {
    const int64_t r = (int64_t)it.r0 + warp * kPrefillRowsPerWarp + j;
    m[j] = -INFINITY;
    l[j] = 0.f;
    lo[j] = 0;
    lim[j] = 0;
    orow[j] = -1;
    if (r < rows_total) {
      const int64_t i = r / G;
      const int g = (int)(r % G);
      const int64_t pos = off + i;
      const int64_t ext = bidir_indptr != nullptr
                              ? rkv::causal_last(pos, bidir_regions, bidir_indptr[it.b], bidir_indptr[it.b + 1])
                              : pos;
      lo[j] = rkv::window_begin(pos, p.window_left);
      lim[j] = ext + 1;
      orow[j] = (q_begin + i) * p.nqo + it.kvh * G + g;
      warp_begin = min(warp_begin, lo[j]);
      warp_end = max(warp_end, lim[j]);
    }
#pragma unroll
    for (int i = 0; i < VEC; i++) {
      const int d = i * 32 + lane;
      o[j][i] = 0.f;
      qv[j][i] = (orow[j] >= 0 && d < p.hd) ? rkv::load_as_float(p.q, orow[j] * p.hd + d, p.q_dtype) * p.q_mul : 0.f;
    }
  }
  if (lane == 0) {
    sm_begin[warp] = warp_begin;
    sm_end[warp] = warp_end;
  }
  __syncthreads();
  int64_t kv_begin = INT64_MAX, kv_end = 0;
  for (int w = 0; w < kWarps; w++) {
    kv_begin = min(kv_begin, sm_begin[w]);
    kv_end = max(kv_end, sm_end[w]);
  }

  // tiles cover [kv_begin, kv_end): positions before every row's window are never read
  for (int64_t t0 = kv_begin; t0 < kv_end; t0 += kPrefillTile) {
    const int nt = (int)min((int64_t)kPrefillTile, kv_end - t0);
    __syncthreads();  // previous tile fully consumed
    // page lookups once per token, then the rows (the same values as element-wise loads)
    if (threadIdx.x < nt)
      tile_off[threadIdx.x] = row_offset(p.indices, first, t0 + threadIdx.x, p.ps, p.nkv, it.kvh, p.hd, p.num_pages);
    __syncthreads();
    if (vec4) {
      const int chunks = p.hd / 4;
      for (int idx = threadIdx.x; idx < nt * chunks; idx += kThreads) {
        const int j = idx / chunks, d = (idx % chunks) * 4;
        const int64_t ro = tile_off[j];
        float kx[4] = {0.f, 0.f, 0.f, 0.f}, vx[4] = {0.f, 0.f, 0.f, 0.f};
        if (ro >= 0) {
          load_vec<4>(p.k, ro + d, p.cache_dtype, true, kx);
          load_vec<4>(p.v, ro + d, p.cache_dtype, true, vx);
        }
#pragma unroll
        for (int i = 0; i < 4; i++) {
          ks[j][d + i] = kx[i];
          vs[j][d + i] = vx[i];
        }
      }
    } else {
      for (int idx = threadIdx.x; idx < nt * p.hd; idx += kThreads) {
        const int j = idx / p.hd, d = idx % p.hd;
        const int64_t ro = tile_off[j];
        ks[j][d] = ro >= 0 ? rkv::load_as_float(p.k, ro + d, p.cache_dtype) : 0.f;
        vs[j][d] = ro >= 0 ? rkv::load_as_float(p.v, ro + d, p.cache_dtype) : 0.f;
      }
    }
    __syncthreads();
    for (int jt = 0; jt < nt; jt++) {
      float kv[VEC], vv[VEC];
#pragma unroll
      for (int i = 0; i < VEC; i++) {
        const int d = i * 32 + lane;
        kv[i] = d < p.hd ? ks[jt][d] : 0.f;
        vv[i] = d < p.hd ? vs[jt][d] : 0.f;
      }
      const int64_t t = t0 + jt;
#pragma unroll
      for (int j = 0; j < kPrefillRowsPerWarp; j++) {
        if (t < lo[j] || t >= lim[j]) continue;  // warp-uniform: the limits are the same in every lane
        float s = 0.f;
#pragma unroll
        for (int i = 0; i < VEC; i++) s = fmaf(qv[j][i], kv[i], s);
        const float x = rkv::logit_base2(warp_sum(s), p.cap);
        const float m_new = fmaxf(m[j], x);
        const float sc = rkv::softmax_rescale(m[j], m_new);
        const float pr = exp2f(x - m_new);
        l[j] = l[j] * sc + pr;
#pragma unroll
        for (int i = 0; i < VEC; i++) o[j][i] = fmaf(pr, vv[i], o[j][i] * sc);
        m[j] = m_new;
      }
    }
  }
#pragma unroll
  for (int j = 0; j < kPrefillRowsPerWarp; j++) {
    if (orow[j] < 0) continue;
    const float inv = l[j] != 0.f ? p.v_mul / l[j] : 0.f;
#pragma unroll
    for (int i = 0; i < VEC; i++) {
      const int d = i * 32 + lane;
      if (d < p.hd) rkv::store_from_float(p.out, orow[j] * p.hd + d, p.out_dtype, o[j][i] * inv);
    }
    if (lane == 0 && p.lse != nullptr) p.lse[orow[j]] = rkv::softmax_lse(rkv::SoftmaxState{m[j], l[j]});
  }
}

// ---------------------------------------------------------------- merge_state

// One warp per row: every lane reads the two LSEs before lane 0 writes s_out (which may alias s_a).
__global__ void merge_state_kernel(const float* v_a, const float* s_a, const float* v_b, const float* s_b,
                                   float* v_out, float* s_out, int64_t rows, int hd) {
  const int64_t row = (int64_t)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= rows) return;
  const rkv::MergeWeights w = rkv::merge_weights(s_a[row], s_b[row]);
  for (int d = lane; d < hd; d += 32) {
    const int64_t i = row * hd + d;
    v_out[i] = w.lse == -INFINITY ? 0.f : w.wa * v_a[i] + w.wb * v_b[i];
  }
  __syncwarp();
  if (lane == 0) s_out[row] = w.lse;
}

// ---------------------------------------------------------------- host helpers

bool io_dtype(int32_t d) { return d == RKV_DTYPE_F32 || d == RKV_DTYPE_F16 || d == RKV_DTYPE_BF16; }

int check_common(const Params& p, int batch, float sm_scale, float k_scale, float v_scale) {
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

Params make_params(const void* q, int32_t q_dtype, void* out, int32_t out_dtype, float* lse, const void* k_cache,
                   const void* v_cache, int32_t cache_dtype, int64_t num_pages, int32_t page_size, int32_t num_qo_heads,
                   int32_t num_kv_heads, int32_t head_dim, const int32_t* kv_indptr, const int32_t* kv_indices,
                   const int32_t* kv_last_page_len, float sm_scale, float soft_cap, float k_scale, float v_scale,
                   int32_t window_left) {
  Params p;
  p.q = q;
  p.q_dtype = q_dtype;
  p.out = out;
  p.out_dtype = out_dtype;
  p.lse = lse;
  p.k = static_cast<const uint8_t*>(k_cache);
  p.v = static_cast<const uint8_t*>(v_cache);
  p.cache_dtype = cache_dtype;
  p.num_pages = num_pages;
  p.ps = page_size;
  p.nqo = num_qo_heads;
  p.nkv = num_kv_heads;
  p.hd = head_dim;
  p.indptr = kv_indptr;
  p.indices = kv_indices;
  p.last = kv_last_page_len;
  const bool fp8 = cache_dtype == RKV_DTYPE_FP8_E4M3 || cache_dtype == RKV_DTYPE_FP8_E5M2;
  p.cap = soft_cap > 0.f ? soft_cap : 0.f;
  p.q_mul = rkv::logit_q_scale(sm_scale * (fp8 ? k_scale : 1.f), p.cap);
  p.v_mul = fp8 ? v_scale : 1.f;
  p.window_left = window_left;
  return p;
}

int vec_for(int hd) { return hd <= 32 ? 1 : hd <= 64 ? 2 : hd <= 128 ? 4 : 8; }

int sm_count() {
  static int count = 0;
  if (count == 0) {
    int dev = 0, n = 0;
    if (cudaGetDevice(&dev) == cudaSuccess && cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev) == cudaSuccess)
      count = n;
    else
      return 80;
  }
  return count;
}

// Query heads a decode block handles per pass: the GQA group size rounded up to a power of
// two, at most kMaxDecodeGroup (larger groups take several passes).
int decode_group(int group) { return group >= 5 ? kMaxDecodeGroup : group >= 3 ? 4 : group; }

// Calls f with decode_kernel<VEC, GROUP> for a head_dim and a GQA group size.
template <typename F>
cudaError_t with_decode_kernel(int hd, int group, F f) {
  const int v = vec_for(hd), g = decode_group(group);
#define RKV_DECODE_G(V)                          \
  switch (g) {                                   \
    case 1: return f(decode_kernel<V, 1>);       \
    case 2: return f(decode_kernel<V, 2>);       \
    case 4: return f(decode_kernel<V, 4>);       \
    default: return f(decode_kernel<V, kMaxDecodeGroup>); \
  }
  switch (v) {
    case 1: RKV_DECODE_G(1)
    case 2: RKV_DECODE_G(2)
    case 4: RKV_DECODE_G(4)
    default: RKV_DECODE_G(8)
  }
#undef RKV_DECODE_G
}

// Decode blocks the GPU holds at once (occupancy of the decode kernel for this head_dim and
// group x SMs): the planner's split target. Cached per kernel (the process uses one device).
int decode_resident_blocks(int hd, int group) {
  static int cache[4][4] = {};
  const int v = vec_for(hd), g = decode_group(group);
  int& slot = cache[v == 1 ? 0 : v == 2 ? 1 : v == 4 ? 2 : 3][g == 1 ? 0 : g == 2 ? 1 : g == 4 ? 2 : 3];
  if (slot == 0) {
    int per_sm = 0;
    cudaError_t e = with_decode_kernel(hd, group, [&](auto kernel) {
      return cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kThreads, 0);
    });
    if (e != cudaSuccess || per_sm <= 0) {
      cudaGetLastError();  // clear it: planning falls back to 2 blocks per SM
      per_sm = 2;
    }
    slot = per_sm * sm_count();
  }
  return slot;
}

}  // namespace

// The plan: what rkv_cuda_attn_plan_batch decided and the buffers it owns (grown, never shrunk).
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

// Grows a stream-ordered device buffer to at least `need` elements (1.5x steps), allocated on
// `s`; the old one is freed in stream order after the work already queued on `old_stream` (the
// stream of the previous plan, whose runs may still be reading it).
template <typename T>
int grow_device(T** buf, size_t* cap, size_t need, cudaStream_t s, cudaStream_t old_stream, const char* what) {
  if (*cap >= need) return RKV_OK;
  size_t n = need + need / 2;
  void* p = nullptr;
  cudaError_t e = cudaMallocAsync(&p, n * sizeof(T), s);
  if (e != cudaSuccess)
    return rkv::set_error(RKV_ERR_OUT_OF_MEMORY, "rkv_cuda_attn_plan_batch: %s (%zu bytes): %s", what, n * sizeof(T),
                          cudaGetErrorString(e));
  if (*buf) RKV_CUDA_TRY(cudaFreeAsync(*buf, old_stream));
  *buf = static_cast<T*>(p);
  *cap = n;
  return RKV_OK;
}

int check_run(const rkv_cuda_attn_plan* plan, bool decode, const Params& p, int32_t batch) {
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

int launch_decode(const rkv_cuda_attn_plan* plan, const Params& p, int32_t batch, cudaStream_t stream) {
  const int nsplit = plan->nsplit;
  float* part_o = nsplit > 1 ? plan->partial : nullptr;
  float* part_s = nsplit > 1 ? plan->partial + (int64_t)batch * p.nqo * nsplit * p.hd : nullptr;
  dim3 grid(p.nkv, batch, nsplit);
  cudaError_t launch = with_decode_kernel(p.hd, p.nqo / p.nkv, [&](auto kernel) {
    kernel<<<grid, kThreads, 0, stream>>>(p, nsplit, part_o, part_s);
    return cudaGetLastError();
  });
  if (launch == cudaSuccess && nsplit > 1) {
    decode_merge_kernel<<<(unsigned)((int64_t)batch * p.nqo), kThreads, 0, stream>>>(p, nsplit, part_o, part_s);
    launch = cudaGetLastError();
  }
  if (launch != cudaSuccess)
    return rkv::set_error(RKV_ERR_CUDA, "decode attention launch: %s", cudaGetErrorString(launch));
  return RKV_OK;
}

int launch_prefill(const rkv_cuda_attn_plan* plan, const Params& p, const int32_t* qo_indptr,
                   const int32_t* bidir_indptr, const int32_t* bidir_regions, cudaStream_t stream) {
  if (plan->num_items == 0) return RKV_OK;
  const unsigned grid = (unsigned)plan->num_items;
  const PrefillItem* items = plan->items;
  switch (vec_for(p.hd)) {
    case 1: prefill_kernel<1><<<grid, kThreads, 0, stream>>>(p, items, qo_indptr, bidir_indptr, bidir_regions); break;
    case 2: prefill_kernel<2><<<grid, kThreads, 0, stream>>>(p, items, qo_indptr, bidir_indptr, bidir_regions); break;
    case 4: prefill_kernel<4><<<grid, kThreads, 0, stream>>>(p, items, qo_indptr, bidir_indptr, bidir_regions); break;
    default: prefill_kernel<8><<<grid, kThreads, 0, stream>>>(p, items, qo_indptr, bidir_indptr, bidir_regions); break;
  }
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) return rkv::set_error(RKV_ERR_CUDA, "prefill attention launch: %s", cudaGetErrorString(e));
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

extern "C" {

RKV_API int rkv_cuda_attn_plan_create(rkv_cuda_attn_plan** out) {
  RKV_CUDA_CHECK_ARG(out != nullptr, "rkv_cuda_attn_plan_create: out must not be NULL");
  *out = nullptr;
  rkv_cuda_attn_plan* p = new (std::nothrow) rkv_cuda_attn_plan();
  if (!p) return rkv::set_error(RKV_ERR_OUT_OF_MEMORY, "rkv_cuda_attn_plan_create: out of host memory");
  cudaError_t e = cudaEventCreateWithFlags(&p->uploaded, cudaEventDisableTiming);
  if (e != cudaSuccess) {
    delete p;
    return rkv::set_error(RKV_ERR_CUDA, "rkv_cuda_attn_plan_create: cudaEventCreateWithFlags: %s", cudaGetErrorString(e));
  }
  *out = p;
  return RKV_OK;
}

RKV_API int rkv_cuda_attn_plan_destroy(rkv_cuda_attn_plan* plan) {
  if (!plan) return RKV_OK;
  cudaError_t first = cudaSuccess;
  auto note = [&first](cudaError_t e) {
    if (first == cudaSuccess) first = e;
  };
  if (plan->upload_pending) note(cudaEventSynchronize(plan->uploaded));
  if (plan->partial) note(cudaFreeAsync(plan->partial, plan->stream));
  if (plan->items) note(cudaFreeAsync(plan->items, plan->stream));
  if (plan->staging) note(cudaFreeHost(plan->staging));
  if (plan->uploaded) note(cudaEventDestroy(plan->uploaded));
  delete plan;
  if (first != cudaSuccess)
    return rkv::set_error(RKV_ERR_CUDA, "rkv_cuda_attn_plan_destroy: %s", cudaGetErrorString(first));
  return RKV_OK;
}

RKV_API int rkv_cuda_attn_plan_batch(rkv_cuda_attn_plan* plan, const int32_t* qo_indptr_host,
                               const int32_t* kv_indptr_host, const int32_t* kv_last_page_len_host,
                               int32_t batch_size, int32_t page_size, int32_t num_qo_heads, int32_t num_kv_heads,
                               int32_t head_dim, void* stream) {
  RKV_CUDA_CHECK_ARG(plan != nullptr, "rkv_cuda_attn_plan_batch: plan must not be NULL");
  plan->planned = false;  // a failed plan cannot be run
  RKV_CUDA_CHECK_ARG(batch_size >= 0, "rkv_cuda_attn_plan_batch: batch_size must be >= 0, got %d", batch_size);
  RKV_CUDA_CHECK_ARG(num_qo_heads > 0 && num_kv_heads > 0 && num_qo_heads % num_kv_heads == 0,
                     "rkv_cuda_attn_plan_batch: num_qo_heads (%d) must be a positive multiple of num_kv_heads (%d)",
                     num_qo_heads, num_kv_heads);
  RKV_CUDA_CHECK_ARG(head_dim > 0 && head_dim <= kMaxHeadDim, "rkv_cuda_attn_plan_batch: head_dim must be in 1..%d, got %d",
                     kMaxHeadDim, head_dim);
  RKV_CUDA_CHECK_ARG(page_size > 0, "rkv_cuda_attn_plan_batch: page_size must be positive, got %d", page_size);
  RKV_CUDA_CHECK_ARG(kv_indptr_host && kv_last_page_len_host,
                     "rkv_cuda_attn_plan_batch: kv_indptr_host and kv_last_page_len_host must not be NULL");
  char msg[160];
  int64_t max_len = 0;
  if (!rkv_attn_plan::kv_lengths(kv_indptr_host, kv_last_page_len_host, batch_size, page_size, &max_len, msg,
                                 sizeof msg))
    return rkv::set_error(RKV_ERR_INVALID_ARGUMENT, "rkv_cuda_attn_plan_batch: %s", msg);
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  const cudaStream_t old_stream = plan->stream;
  plan->stream = s;
  plan->decode = qo_indptr_host == nullptr;
  plan->batch = batch_size;
  plan->page_size = page_size;
  plan->nqo = num_qo_heads;
  plan->nkv = num_kv_heads;
  plan->hd = head_dim;
  plan->nsplit = 1;
  plan->num_items = 0;
  if (plan->decode) {
    plan->nsplit = rkv_attn_plan::decode_splits(batch_size, num_kv_heads, decode_resident_blocks(head_dim, num_qo_heads / num_kv_heads),
                                                max_len);
    const int64_t floats = rkv_attn_plan::decode_partial_floats(batch_size, num_qo_heads, head_dim, plan->nsplit);
    if (int e = grow_device(&plan->partial, &plan->partial_cap, (size_t)floats, s, old_stream, "decode partial outputs")) return e;
  } else {
    const int32_t group = num_qo_heads / num_kv_heads;
    const int64_t n = rkv_attn_plan::prefill_item_count(qo_indptr_host, batch_size, group, num_kv_heads, msg, sizeof msg);
    if (n < 0 || !rkv_attn_plan::q_fits_kv(qo_indptr_host, kv_indptr_host, kv_last_page_len_host, batch_size,
                                           page_size, msg, sizeof msg))
      return rkv::set_error(RKV_ERR_INVALID_ARGUMENT, "rkv_cuda_attn_plan_batch: %s", msg);
    RKV_CUDA_CHECK_ARG(n <= INT32_MAX, "rkv_cuda_attn_plan_batch: %lld prefill work items exceed the grid", (long long)n);
    if (n > 0) {
      // the pinned staging may still feed the previous plan's upload
      if (plan->upload_pending) {
        RKV_CUDA_TRY(cudaEventSynchronize(plan->uploaded));
        plan->upload_pending = false;
      }
      if (plan->staging_cap < (size_t)n) {
        if (plan->staging) RKV_CUDA_TRY(cudaFreeHost(plan->staging));
        plan->staging = nullptr;
        plan->staging_cap = 0;
        const size_t cap = (size_t)n + (size_t)n / 2;
        RKV_CUDA_TRY(cudaMallocHost(reinterpret_cast<void**>(&plan->staging), cap * sizeof(PrefillItem)));
        plan->staging_cap = cap;
      }
      if (int e = grow_device(&plan->items, &plan->items_cap, (size_t)n, s, old_stream, "prefill work items")) return e;
      rkv_attn_plan::fill_prefill_items(qo_indptr_host, batch_size, group, num_kv_heads, plan->staging);
      RKV_CUDA_TRY(cudaMemcpyAsync(plan->items, plan->staging, (size_t)n * sizeof(PrefillItem),
                                   cudaMemcpyHostToDevice, s));
      RKV_CUDA_TRY(cudaEventRecord(plan->uploaded, s));
      plan->upload_pending = true;
    }
    plan->num_items = n;
  }
  plan->planned = true;
  return RKV_OK;
}

RKV_API int rkv_cuda_attn_plan_info(const rkv_cuda_attn_plan* plan, int64_t* info) {
  RKV_CUDA_CHECK_ARG(plan != nullptr && info != nullptr, "plan and info must not be NULL");
  RKV_CUDA_CHECK_ARG(plan->planned, "the plan holds no batch (rkv_cuda_attn_plan_batch first)");
  info[0] = plan->decode ? 1 : 0;
  info[1] = plan->batch;
  info[2] = plan->decode ? plan->nsplit : plan->num_items;
  info[3] = plan->decode ? (int64_t)(uintptr_t)plan->partial : (int64_t)(uintptr_t)plan->items;
  return RKV_OK;
}

RKV_API int rkv_cuda_decode_attention_run(const rkv_cuda_attn_plan* plan, const void* q, int32_t q_dtype, void* out,
                                          int32_t out_dtype, float* lse, const void* k_cache, const void* v_cache,
                                          int32_t cache_dtype, int64_t num_pages, int32_t page_size,
                                          int32_t num_qo_heads, int32_t num_kv_heads, int32_t head_dim,
                                          const int32_t* kv_indptr, const int32_t* kv_indices,
                                          const int32_t* kv_last_page_len, int32_t batch_size, float sm_scale,
                                          float logits_soft_cap, float k_scale, float v_scale, int32_t window_left,
                                          void* stream) {
  Params p = make_params(q, q_dtype, out, out_dtype, lse, k_cache, v_cache, cache_dtype, num_pages, page_size,
                         num_qo_heads, num_kv_heads, head_dim, kv_indptr, kv_indices, kv_last_page_len, sm_scale,
                         logits_soft_cap, k_scale, v_scale, window_left);
  if (int rc = check_common(p, batch_size, sm_scale, k_scale, v_scale)) return rc;
  if (int rc = check_run(plan, true, p, batch_size)) return rc;
  if (batch_size == 0) return RKV_OK;
  return launch_decode(plan, p, batch_size, static_cast<cudaStream_t>(stream));
}

RKV_API int rkv_cuda_append_prefill_attention_run(
    const rkv_cuda_attn_plan* plan, const void* q, int32_t q_dtype, void* out, int32_t out_dtype, float* lse,
    const int32_t* qo_indptr, const void* k_cache, const void* v_cache, int32_t cache_dtype, int64_t num_pages,
    int32_t page_size, int32_t num_qo_heads, int32_t num_kv_heads, int32_t head_dim, const int32_t* kv_indptr,
    const int32_t* kv_indices, const int32_t* kv_last_page_len, int32_t batch_size, const int32_t* bidir_indptr,
    const int32_t* bidir_regions, float sm_scale, float logits_soft_cap, float k_scale, float v_scale,
    int32_t window_left, void* stream) {
  Params p = make_params(q, q_dtype, out, out_dtype, lse, k_cache, v_cache, cache_dtype, num_pages, page_size,
                         num_qo_heads, num_kv_heads, head_dim, kv_indptr, kv_indices, kv_last_page_len, sm_scale,
                         logits_soft_cap, k_scale, v_scale, window_left);
  if (int rc = check_common(p, batch_size, sm_scale, k_scale, v_scale)) return rc;
  if (int rc = check_run(plan, false, p, batch_size)) return rc;
  if (batch_size == 0) return RKV_OK;
  RKV_CUDA_CHECK_ARG(qo_indptr != nullptr, "qo_indptr must not be NULL");
  RKV_CUDA_CHECK_ARG(!(bidir_indptr == nullptr && bidir_regions != nullptr),
                     "bidir_regions is set but bidir_indptr is NULL");
  return launch_prefill(plan, p, qo_indptr, bidir_indptr, bidir_regions, static_cast<cudaStream_t>(stream));
}

RKV_API int rkv_cuda_decode_attention(const void* q, int32_t q_dtype, void* out, int32_t out_dtype, float* lse,
                                      const void* k_cache, const void* v_cache, int32_t cache_dtype, int64_t num_pages,
                                      int32_t page_size, int32_t num_qo_heads, int32_t num_kv_heads, int32_t head_dim,
                                      const int32_t* kv_indptr, const int32_t* kv_indices,
                                      const int32_t* kv_last_page_len, int32_t batch_size, float sm_scale,
                                      float logits_soft_cap, float k_scale, float v_scale, int32_t window_left,
                                      void* stream) {
  Params p = make_params(q, q_dtype, out, out_dtype, lse, k_cache, v_cache, cache_dtype, num_pages, page_size,
                         num_qo_heads, num_kv_heads, head_dim, kv_indptr, kv_indices, kv_last_page_len, sm_scale,
                         logits_soft_cap, k_scale, v_scale, window_left);
  int rc = check_common(p, batch_size, sm_scale, k_scale, v_scale);
  if (rc != RKV_OK || batch_size == 0) return rc;
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  HostTables h;
  if (int e = h.fetch(nullptr, kv_indptr, kv_last_page_len, batch_size, s)) return e;
  TempPlan t;
  if (int e = rkv_cuda_attn_plan_create(&t.plan)) return e;
  if (int e = rkv_cuda_attn_plan_batch(t.plan, nullptr, h.indptr, h.last, batch_size, page_size, num_qo_heads, num_kv_heads,
                                 head_dim, stream))
    return e;
  if (int e = launch_decode(t.plan, p, batch_size, s)) return e;
  RKV_CUDA_TRY(cudaStreamSynchronize(s));
  return RKV_OK;
}

RKV_API int rkv_cuda_append_prefill_attention(const void* q, int32_t q_dtype, void* out, int32_t out_dtype,
                                              float* lse, const int32_t* qo_indptr, const void* k_cache,
                                              const void* v_cache, int32_t cache_dtype, int64_t num_pages,
                                              int32_t page_size, int32_t num_qo_heads, int32_t num_kv_heads,
                                              int32_t head_dim, const int32_t* kv_indptr, const int32_t* kv_indices,
                                              const int32_t* kv_last_page_len, int32_t batch_size,
                                              const int32_t* bidir_indptr, const int32_t* bidir_regions,
                                              float sm_scale, float logits_soft_cap, float k_scale, float v_scale,
                                              int32_t window_left, void* stream) {
  Params p = make_params(q, q_dtype, out, out_dtype, lse, k_cache, v_cache, cache_dtype, num_pages, page_size,
                         num_qo_heads, num_kv_heads, head_dim, kv_indptr, kv_indices, kv_last_page_len, sm_scale,
                         logits_soft_cap, k_scale, v_scale, window_left);
  int rc = check_common(p, batch_size, sm_scale, k_scale, v_scale);
  if (rc != RKV_OK || batch_size == 0) return rc;
  RKV_CUDA_CHECK_ARG(qo_indptr != nullptr, "qo_indptr must not be NULL");
  RKV_CUDA_CHECK_ARG(!(bidir_indptr == nullptr && bidir_regions != nullptr),
                     "bidir_regions is set but bidir_indptr is NULL");
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  HostTables h;
  if (int e = h.fetch(qo_indptr, kv_indptr, kv_last_page_len, batch_size, s)) return e;
  TempPlan t;
  if (int e = rkv_cuda_attn_plan_create(&t.plan)) return e;
  if (int e = rkv_cuda_attn_plan_batch(t.plan, h.qo, h.indptr, h.last, batch_size, page_size, num_qo_heads, num_kv_heads,
                                 head_dim, stream))
    return e;
  if (int e = launch_prefill(t.plan, p, qo_indptr, bidir_indptr, bidir_regions, s)) return e;
  RKV_CUDA_TRY(cudaStreamSynchronize(s));
  return RKV_OK;
}

RKV_API int rkv_cuda_merge_state(const float* v_a, const float* s_a, const float* v_b, const float* s_b, float* v_out,
                                 float* s_out, int64_t num_tokens, int32_t num_heads, int32_t head_dim,
                                 void* stream) {
  RKV_CUDA_CHECK_ARG(num_tokens >= 0, "num_tokens must be >= 0");
  RKV_CUDA_CHECK_ARG(num_heads > 0 && head_dim > 0, "num_heads (%d) and head_dim (%d) must be positive", num_heads,
                     head_dim);
  if (num_tokens == 0) return RKV_OK;
  RKV_CUDA_CHECK_ARG(v_a && s_a && v_b && s_b && v_out && s_out, "merge_state pointers must not be NULL");
  const int64_t rows = num_tokens * num_heads;
  const int warps_per_block = 8;
  const int64_t blocks = (rows + warps_per_block - 1) / warps_per_block;
  merge_state_kernel<<<(unsigned)blocks, warps_per_block * 32, 0, static_cast<cudaStream_t>(stream)>>>(
      v_a, s_a, v_b, s_b, v_out, s_out, rows, head_dim);
  RKV_CUDA_CHECK_LAUNCH();
  return RKV_OK;
}

}  // extern "C"
