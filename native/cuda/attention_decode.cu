// CUDA paged decode attention (split-KV + merge): rkv_cuda_decode_attention_run launches on a
// plan (attention_plan.cu), rkv_cuda_decode_attention plans, runs and synchronizes in one call.
// The helpers, Params and the contract shared with the other families: attention_common.cuh.
#include "attention_common.cuh"
#include "rkv_mask.h"

namespace {

constexpr int kMaxDecodeGroup = 8;   // most query heads of a GQA group handled together per pass

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

// ---------------------------------------------------------------- host

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

}  // namespace

namespace rkv_cuda_attn {

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

}  // namespace rkv_cuda_attn

extern "C" {

RKV_API int rkv_cuda_decode_attention_run(const rkv_cuda_attn_plan* plan, const rkv_decode_params* params,
                                          void* stream) {
  Params p;
  if (int rc = params_of(params ? &params->attn : nullptr, params ? &params->kv : nullptr, &p)) return rc;
  const int32_t batch_size = params->kv.batch_size;
  if (int rc = check_run(plan, true, p, batch_size)) return rc;
  if (batch_size == 0) return RKV_OK;
  return launch_decode(plan, p, batch_size, static_cast<cudaStream_t>(stream));
}

RKV_API int rkv_cuda_decode_attention(const rkv_decode_params* params, void* stream) {
  Params p;
  if (int rc = params_of(params ? &params->attn : nullptr, params ? &params->kv : nullptr, &p)) return rc;
  const int32_t batch_size = params->kv.batch_size;
  if (batch_size == 0) return RKV_OK;
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  HostTables h;
  if (int e = h.fetch(nullptr, p.indptr, p.last, batch_size, s)) return e;
  TempPlan t;
  if (int e = rkv_cuda_attn_plan_create(&t.plan)) return e;
  if (int e = rkv_cuda_attn_plan_batch(t.plan, nullptr, h.indptr, h.last, batch_size, p.ps, p.nqo, p.nkv, p.hd, stream))
    return e;
  if (int e = launch_decode(t.plan, p, batch_size, s)) return e;
  RKV_CUDA_TRY(cudaStreamSynchronize(s));
  return RKV_OK;
}

}  // extern "C"
