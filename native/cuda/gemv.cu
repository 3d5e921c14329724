// Small-m GEMV (decode batches) for rkv_cuda_linear: y[m, n] (+)= x[m, k] . w[n, k]^T with
// m <= kGemvMaxRows, f32 x / y, f32 or bf16 w, f32 accumulation, x not rounded. Memory-bound:
// every weight element is read from HBM exactly once.
//
// Geometry (gemv_math.h): blocks of 8 warps. Each warp owns rows_per_warp(m) adjacent weight
// rows (1, 2 or 4) and, with warps_per_row(m, n) = 1, streams them whole; when that gives
// fewer than kMinRowWarps warps, 4 warps split each row's k and add their partial sums
// through shared memory. Lanes read 16-byte vectors (8 bf16 or 4 f32) of every owned weight row, 4 vectors
// in flight per lane (unrolled), and reuse each x vector (read through the read-only / L1
// path: all warps of an SM read the same m x k floats) against all owned rows. Misaligned
// rows (odd k, unaligned views) take the same kernel with scalar loads. Reduction order is
// fixed (gemv_math.h describes it; the tests replicate it bit for bit on the CPU).
#include <cstring>

#include "gemv_math.h"
#include "rkv_cuda_common.cuh"

namespace {

using rkv_gemv::fma_step;
using rkv_gemv::combine;
using rkv_gemv::kWarp;
using rkv_gemv::kWarpsPerBlock;
using rkv_gemv::Weight;

// A lane's raw load of one vector of a weight row: a 16-byte uint4, or one element.
template <typename WT, int VEC>
struct Raw {
  using T = uint4;
  static_assert(VEC * sizeof(WT) == sizeof(uint4), "vector width");
};
template <typename WT>
struct Raw<WT, 1> {
  using T = WT;
};

template <int VEC>
__device__ __forceinline__ void load_x(const float* __restrict__ p, float (&out)[VEC]) {
  if constexpr (VEC == 1) {
    out[0] = __ldg(p);
  } else {
    static_assert(VEC % 4 == 0, "x vectors are float4");
#pragma unroll
    for (int i = 0; i < VEC / 4; i++) {
      const float4 f = __ldg(reinterpret_cast<const float4*>(p) + i);
      out[4 * i] = f.x;
      out[4 * i + 1] = f.y;
      out[4 * i + 2] = f.z;
      out[4 * i + 3] = f.w;
    }
  }
}

template <int DT, int M, int VEC>
__global__ void __launch_bounds__(rkv_gemv::kBlockThreads, 2)
    gemv_kernel(const float* __restrict__ x, const typename Weight<DT>::T* __restrict__ w, float* __restrict__ y,
                int64_t n, int64_t k, int wpr, int accumulate) {
  using WT = typename Weight<DT>::T;
  using R = typename Raw<WT, VEC>::T;
  constexpr int NR = rkv_gemv::rows_per_warp(M);
  constexpr int U = NR >= 4 ? 1 : 4 / NR;  // vectors per lane in flight: U * NR = 4
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  const int group = warp / wpr;  // the block's row group of this warp
  const int wig = warp % wpr;    // warp within its group
  const int threads = kWarp * wpr;
  const int t = wig * kWarp + lane;
  const int64_t j0 = ((int64_t)blockIdx.x * (kWarpsPerBlock / wpr) + group) * NR;
  const int64_t nv = k / VEC;

  // rows past n (the last block) re-read row n - 1 and are not stored: no divergent loads
  const R* wr[NR];
#pragma unroll
  for (int c = 0; c < NR; c++) {
    const int64_t j = j0 + c < n ? j0 + c : n - 1;
    wr[c] = reinterpret_cast<const R*>(w + j * k);
  }
  float acc[NR][M];
#pragma unroll
  for (int c = 0; c < NR; c++)
#pragma unroll
    for (int r = 0; r < M; r++) acc[c][r] = 0.f;

  // one vector v of every owned row against all m rows of x, elements in order
  auto consume = [&](const R (&raw)[NR], int64_t v) {
    float wf[NR][VEC];
#pragma unroll
    for (int c = 0; c < NR; c++) {
      WT e[VEC];
      memcpy(e, &raw[c], sizeof(e));
#pragma unroll
      for (int i = 0; i < VEC; i++) wf[c][i] = Weight<DT>::widen(e[i]);
    }
#pragma unroll
    for (int r = 0; r < M; r++) {
      float xv[VEC];
      load_x<VEC>(x + r * k + v * VEC, xv);
#pragma unroll
      for (int i = 0; i < VEC; i++)
#pragma unroll
        for (int c = 0; c < NR; c++) acc[c][r] = fma_step(acc[c][r], xv[i], wf[c][i]);
    }
  };

  // U vectors per lane in flight. In a lane's last round the loads past the row re-read its
  // last vector (cached; not consumed) instead of branching, so rows of few vectors per lane
  // (small k, split rows) still issue all their loads before the FMAs.
  for (int64_t v = t; v < nv; v += (int64_t)U * threads) {
    R raw[U][NR];
#pragma unroll
    for (int u = 0; u < U; u++) {
      const int64_t vu = v + (int64_t)u * threads < nv ? v + (int64_t)u * threads : nv - 1;
#pragma unroll
      for (int c = 0; c < NR; c++) raw[u][c] = __ldg(wr[c] + vu);
    }
#pragma unroll
    for (int u = 0; u < U; u++)
      if (v + (int64_t)u * threads < nv) consume(raw[u], v + (int64_t)u * threads);
  }

  // lanes: shuffle-down tree (lane 0 ends with the warp's sum)
#pragma unroll
  for (int c = 0; c < NR; c++)
#pragma unroll
    for (int r = 0; r < M; r++) {
      float s = acc[c][r];
#pragma unroll
      for (int off = kWarp / 2; off > 0; off /= 2) s = combine(s, __shfl_down_sync(0xffffffffu, s, off));
      acc[c][r] = s;
    }
  auto store = [&](int c, int r, float s) {
    const int64_t j = j0 + c;
    if (j < n) {
      float* out = y + (int64_t)r * n + j;
      *out = accumulate ? combine(*out, s) : s;
    }
  };
  if (wpr == 1) {
    if (lane == 0) {
#pragma unroll
      for (int c = 0; c < NR; c++)
#pragma unroll
        for (int r = 0; r < M; r++) store(c, r, acc[c][r]);
    }
    return;
  }
  // warps of a group: through shared memory, added in warp order by one lane per output
  __shared__ float red[kWarpsPerBlock][NR * M];
  if (lane == 0) {
#pragma unroll
    for (int c = 0; c < NR; c++)
#pragma unroll
      for (int r = 0; r < M; r++) red[warp][c * M + r] = acc[c][r];
  }
  __syncthreads();
  if (wig == 0 && lane < NR * M) {
    float s = red[warp][lane];
    for (int q = 1; q < wpr; q++) s = combine(s, red[warp + q][lane]);
    store(lane / M, lane % M, s);
  }
}

template <int DT, int M>
int launch_m(const float* x, const void* w, float* y, int64_t n, int64_t k, bool accumulate, cudaStream_t stream) {
  using WT = typename Weight<DT>::T;
  const int wpr = rkv_gemv::warps_per_row(M, n);
  const int64_t rpb = rkv_gemv::rows_per_block(M, n);
  const int64_t blocks = (n + rpb - 1) / rpb;
  if (blocks > 2147483647)
    return rkv::set_error(RKV_ERR_INVALID_ARGUMENT, "rkv_cuda_linear: n=%lld needs more than 2^31-1 blocks",
                          (long long)n);
  const WT* wt = static_cast<const WT*>(w);
  constexpr int kVec = rkv_gemv::kVecBytes / (int)sizeof(WT);
  if (rkv_gemv::vec_elems(DT, (uintptr_t)x, (uintptr_t)w, k) == kVec)
    gemv_kernel<DT, M, kVec><<<(unsigned)blocks, rkv_gemv::kBlockThreads, 0, stream>>>(x, wt, y, n, k, wpr,
                                                                                       accumulate ? 1 : 0);
  else
    gemv_kernel<DT, M, 1><<<(unsigned)blocks, rkv_gemv::kBlockThreads, 0, stream>>>(x, wt, y, n, k, wpr,
                                                                                    accumulate ? 1 : 0);
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess)
    return rkv::set_error(RKV_ERR_CUDA, "rkv_cuda_linear: gemv launch (m=%d n=%lld k=%lld %s): %s", M, (long long)n,
                          (long long)k, rkv::dtype_name(DT), cudaGetErrorString(e));
  return RKV_OK;
}

template <int DT>
int launch_dt(const float* x, const void* w, float* y, int64_t m, int64_t n, int64_t k, bool acc, cudaStream_t s) {
  static_assert(rkv_gemv::kGemvMaxRows == 8, "one instantiation per m");
  switch (m) {
    case 1: return launch_m<DT, 1>(x, w, y, n, k, acc, s);
    case 2: return launch_m<DT, 2>(x, w, y, n, k, acc, s);
    case 3: return launch_m<DT, 3>(x, w, y, n, k, acc, s);
    case 4: return launch_m<DT, 4>(x, w, y, n, k, acc, s);
    case 5: return launch_m<DT, 5>(x, w, y, n, k, acc, s);
    case 6: return launch_m<DT, 6>(x, w, y, n, k, acc, s);
    case 7: return launch_m<DT, 7>(x, w, y, n, k, acc, s);
    case 8: return launch_m<DT, 8>(x, w, y, n, k, acc, s);
    default:
      return rkv::set_error(RKV_ERR_INVALID_ARGUMENT, "rkv_cuda_linear: gemv takes 1 <= m <= %lld, got %lld",
                            (long long)rkv_gemv::kGemvMaxRows, (long long)m);
  }
}

}  // namespace

namespace rkv_gemv {

int launch(const float* x, const void* w, int32_t w_dtype, float* y, int64_t m, int64_t n, int64_t k,
           bool accumulate, void* stream) {
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  if (w_dtype == RKV_DTYPE_F32) return launch_dt<RKV_DTYPE_F32>(x, w, y, m, n, k, accumulate, s);
  if (w_dtype == RKV_DTYPE_BF16) return launch_dt<RKV_DTYPE_BF16>(x, w, y, m, n, k, accumulate, s);
  return rkv::set_error(RKV_ERR_INVALID_ARGUMENT, "rkv_cuda_linear: gemv weight dtype %s (%d) is not f32 or bf16",
                        rkv::dtype_name(w_dtype), w_dtype);
}

}  // namespace rkv_gemv
