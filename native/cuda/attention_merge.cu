// CUDA merge_state (rkv_cuda_merge_state): combines two partial attention results of the same
// rows by their LSEs. Same ABI and semantics as the CPU kernel (radixkv.h); the merge
// arithmetic (rkv_softmax.h) is the RKV_HD helper the CPU code uses.
#include <cuda_runtime.h>

#include <cmath>

#include "rkv_cuda_common.cuh"
#include "rkv_softmax.h"

namespace {

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

}  // namespace

extern "C" {

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
