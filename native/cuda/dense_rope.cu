// Rotary embedding on the GPU from an inv_freq table (any RoPE scaling, per-layer theta), in
// place on q [n, num_q_heads, head_dim] and k [n, num_kv_heads, head_dim], rotate_half layout.
// One thread per rotated pair; angles in double like the CPU kernel (rkv_dense_elem.h).
#include "dense_launch.cuh"

namespace {

using namespace rkv_cuda_dense;

__global__ void rope_kernel(float* q, float* k, const int32_t* __restrict__ positions, int64_t num_tokens,
                            int32_t num_q_heads, int32_t num_kv_heads, int32_t head_dim,
                            const double* __restrict__ inv_freq) {
  const int32_t half = head_dim / 2;
  const int32_t heads = num_q_heads + num_kv_heads;
  const int64_t total = num_tokens * heads * half;
  RKV_GRID_STRIDE(idx, total) {
    const int32_t i = (int32_t)(idx % half);
    const int64_t th = idx / half;
    const int32_t h = (int32_t)(th % heads);
    const int64_t t = th / heads;
    float c, s;
    rkv::dense_elem::rope_cos_sin(positions[t], inv_freq[i], &c, &s);
    if (h < num_q_heads)
      rkv::dense_elem::rope_pair(q, t * num_q_heads + h, head_dim, i, c, s);
    else
      rkv::dense_elem::rope_pair(k, t * num_kv_heads + (h - num_q_heads), head_dim, i, c, s);
  }
}

}  // namespace

extern "C" {

RKV_API int rkv_cuda_rope_table(float* q, float* k, const int32_t* positions, int64_t num_tokens, int32_t num_q_heads,
                                int32_t num_kv_heads, int32_t head_dim, const double* inv_freq, void* stream) {
  RKV_CHECK(num_tokens >= 0, "rkv_cuda_rope_table: num_tokens must not be negative, got %lld", (long long)num_tokens);
  RKV_CHECK(num_q_heads >= 0 && num_kv_heads >= 0, "rkv_cuda_rope_table: head counts must not be negative (%d, %d)",
            num_q_heads, num_kv_heads);
  RKV_CHECK(head_dim > 0 && head_dim % 2 == 0, "rkv_cuda_rope_table: head_dim must be positive and even, got %d",
            head_dim);
  if (num_tokens == 0 || num_q_heads + num_kv_heads == 0) return RKV_OK;
  RKV_CHECK_PTR(positions);
  RKV_CHECK_PTR(inv_freq);
  RKV_CHECK(num_q_heads == 0 || q != nullptr, "rkv_cuda_rope_table: q must not be NULL");
  RKV_CHECK(num_kv_heads == 0 || k != nullptr, "rkv_cuda_rope_table: k must not be NULL");
  const int64_t total = num_tokens * (num_q_heads + num_kv_heads) * (head_dim / 2);
  rope_kernel<<<blocks_for(total), kThreads, 0, as_stream(stream)>>>(q, k, positions, num_tokens, num_q_heads,
                                                                      num_kv_heads, head_dim, inv_freq);
  RKV_CUDA_CHECK_LAUNCH();
  return RKV_OK;
}

}  // extern "C"
