// CUDA paged append-prefill attention, tiled: rkv_cuda_append_prefill_attention_run launches on
// a plan (attention_plan.cu), rkv_cuda_append_prefill_attention plans, runs and synchronizes in
// one call. The helpers, Params and the contract shared with the other families:
// attention_common.cuh.
//
// Layout of a row inside a warp: lane l holds elements d = i*32 + l (i < VEC), so global loads
// of a K/V row are coalesced per i and shared-memory reads are bank-conflict free.
#include "attention_common.cuh"
#include "rkv_mask.h"

namespace {

constexpr int kPrefillRowsPerWarp = 4;
constexpr int kPrefillRows = kWarps * kPrefillRowsPerWarp;  // query rows (token x head) per block
constexpr int kPrefillTile = 16;     // KV tokens per shared-memory tile

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

// ---------------------------------------------------------------- host

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

// The prefill-only pointers of a params struct.
int check_prefill_tables(const rkv_prefill_params& params) {
  RKV_CUDA_CHECK_ARG(params.qo_indptr != nullptr, "qo_indptr must not be NULL");
  RKV_CUDA_CHECK_ARG(!(params.bidir_indptr == nullptr && params.bidir_regions != nullptr),
                     "bidir_regions is set but bidir_indptr is NULL");
  return RKV_OK;
}

}  // namespace

extern "C" {

RKV_API int rkv_cuda_append_prefill_attention_run(const rkv_cuda_attn_plan* plan, const rkv_prefill_params* params,
                                                  void* stream) {
  Params p;
  if (int rc = params_of(params ? &params->attn : nullptr, params ? &params->kv : nullptr, &p)) return rc;
  const int32_t batch_size = params->kv.batch_size;
  if (int rc = check_run(plan, false, p, batch_size)) return rc;
  if (batch_size == 0) return RKV_OK;
  if (int rc = check_prefill_tables(*params)) return rc;
  return launch_prefill(plan, p, params->qo_indptr, params->bidir_indptr, params->bidir_regions,
                        static_cast<cudaStream_t>(stream));
}

RKV_API int rkv_cuda_append_prefill_attention(const rkv_prefill_params* params, void* stream) {
  Params p;
  if (int rc = params_of(params ? &params->attn : nullptr, params ? &params->kv : nullptr, &p)) return rc;
  const int32_t batch_size = params->kv.batch_size;
  if (batch_size == 0) return RKV_OK;
  if (int rc = check_prefill_tables(*params)) return rc;
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  HostTables h;
  if (int e = h.fetch(params->qo_indptr, p.indptr, p.last, batch_size, s)) return e;
  TempPlan t;
  if (int e = rkv_cuda_attn_plan_create(&t.plan)) return e;
  if (int e = rkv_cuda_attn_plan_batch(t.plan, h.qo, h.indptr, h.last, batch_size, p.ps, p.nqo, p.nkv, p.hd, stream))
    return e;
  if (int e = launch_prefill(t.plan, p, params->qo_indptr, params->bidir_indptr, params->bidir_regions, s)) return e;
  RKV_CUDA_TRY(cudaStreamSynchronize(s));
  return RKV_OK;
}

}  // extern "C"
