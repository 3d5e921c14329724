// Greedy sampling input on the GPU: out[r] = argmax(logits[r, :]), first maximum, NaN never
// wins (all NaN: 0), exactly the CPU kernel's answer whatever the reduction order, through
// rkv_dense_elem.h's argmax_takes. One block per row: strided scan, warp shuffles, then
// one value per warp through shared memory.
#include "dense_launch.cuh"

namespace {

using namespace rkv_cuda_dense;
using rkv::dense_elem::argmax_takes;

__global__ void argmax_kernel(const float* __restrict__ logits, int64_t rows, int32_t vocab, int32_t* __restrict__ out) {
  __shared__ float wv[kThreads / 32];
  __shared__ int32_t wi[kThreads / 32];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const float* l = logits + r * vocab;
    float bv = __int_as_float(0x7fc00000);  // NaN: loses to any number
    int32_t bi = vocab;                     // and to any index when everything is NaN
    for (int32_t i = threadIdx.x; i < vocab; i += blockDim.x) {
      if (argmax_takes(l[i], i, bv, bi)) {
        bv = l[i];
        bi = i;
      }
    }
    for (int off = 16; off > 0; off >>= 1) {
      float ov = __shfl_xor_sync(0xffffffffu, bv, off);
      int32_t oi = __shfl_xor_sync(0xffffffffu, bi, off);
      if (argmax_takes(ov, oi, bv, bi)) {
        bv = ov;
        bi = oi;
      }
    }
    if ((threadIdx.x & 31) == 0) {
      wv[threadIdx.x >> 5] = bv;
      wi[threadIdx.x >> 5] = bi;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      for (int w = 1; w < kThreads / 32; w++) {
        if (argmax_takes(wv[w], wi[w], bv, bi)) {
          bv = wv[w];
          bi = wi[w];
        }
      }
      out[r] = bi < vocab ? bi : 0;
    }
    __syncthreads();  // wv/wi are reused by the next row
  }
}

}  // namespace

extern "C" {

RKV_API int rkv_cuda_argmax(const float* logits, int64_t rows, int32_t vocab, int32_t* out, void* stream) {
  RKV_CHECK(rows >= 0, "rkv_cuda_argmax: rows must not be negative, got %lld", (long long)rows);
  RKV_CHECK(vocab > 0, "rkv_cuda_argmax: vocab must be positive, got %d", vocab);
  if (rows == 0) return RKV_OK;
  RKV_CHECK_PTR(logits);
  RKV_CHECK_PTR(out);
  int blocks = (int)(rows < 65535 * 8 ? rows : 65535 * 8);
  argmax_kernel<<<blocks, kThreads, 0, as_stream(stream)>>>(logits, rows, vocab, out);
  RKV_CUDA_CHECK_LAUNCH();
  return RKV_OK;
}

}  // extern "C"
