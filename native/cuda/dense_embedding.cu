// Embedding gather on the GPU: out[t, :] = table[ids[t], :] (f32 or bf16 table). The ids are
// device-resident, so they are validated on the device: an id outside [0, vocab) writes a
// zero row and is recorded in the caller's device error record (radixkv.h), which the host
// reads once per step, instead of copying ids back per call.
#include "dense_launch.cuh"

namespace {

using namespace rkv_cuda_dense;

__global__ void embedding_kernel(const int32_t* __restrict__ ids, int64_t n, const void* __restrict__ table,
                                 int32_t dtype, int32_t vocab, int32_t dim, float* __restrict__ out,
                                 int64_t* error_record) {
  const int64_t total = n * dim;
  RKV_GRID_STRIDE(idx, total) {
    if (!rkv::dense_elem::embedding_elem(ids, table, dtype, vocab, dim, out, idx) && idx % dim == 0) {
      const int64_t t = idx / dim;
      rkv_cuda::record_error(error_record, RKV_CUDA_DEVERR_BAD_TOKEN, t, ids[t], vocab);
    }
  }
}

}  // namespace

extern "C" {

RKV_API int rkv_cuda_embedding(const int32_t* ids, int64_t n, const void* table, int32_t dtype, int32_t vocab,
                               int32_t dim, float* out, int64_t* error_record, void* stream) {
  RKV_CHECK(n >= 0, "rkv_cuda_embedding: n must not be negative, got %lld", (long long)n);
  RKV_CHECK(vocab > 0 && dim > 0, "rkv_cuda_embedding: vocab and dim must be positive (%d, %d)", vocab, dim);
  RKV_CHECK(dtype == RKV_DTYPE_F32 || dtype == RKV_DTYPE_BF16,
            "rkv_cuda_embedding: table dtype %s (%d) is not supported (f32 or bf16)", rkv::dtype_name(dtype), dtype);
  if (n == 0) return RKV_OK;
  RKV_CHECK_PTR(ids);
  RKV_CHECK_PTR(table);
  RKV_CHECK_PTR(out);
  embedding_kernel<<<blocks_for(n * dim), kThreads, 0, as_stream(stream)>>>(
      ids, n, table, dtype, vocab, dim, out, error_record);
  RKV_CUDA_CHECK_LAUNCH();
  return RKV_OK;
}

}  // extern "C"
