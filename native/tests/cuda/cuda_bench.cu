// GPU benchmarks for scripts/gpu-check: device copy bandwidth (the yardstick), paged decode
// attention (bf16 KV, batch 32 x 8192 tokens, 8 KV heads, head_dim 128, GQA 4: 1 GiB of
// K/V) as GB/s of unique K/V bytes and its ratio to the copy bandwidth, and the cuBLAS GEMM
// (m 1024, n 4096, k 4096; f32 and bf16 weights) in TFLOP/s. Prints one "bench" line each:
//   bench <name> <value> <unit> <ratio-or-dash>
// Exits 77 without a device.
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <vector>

#include "radixkv.h"
#include "../attention_args.h"

static const char* const kBenchName = "cuda_bench";
#include "bench_util.cuh"

#define RK(x)                                                                               \
  do {                                                                                      \
    if ((x) != RKV_OK) {                                                                    \
      std::fprintf(stderr, "cuda_bench: %s: %s\n", #x, rkv_cuda_last_error());             \
      return 1;                                                                             \
    }                                                                                       \
  } while (0)


int main() {
  cudaStream_t s;
  double copy_gbs;
  if (int rc = bench_start("copy_d2d", &s, &copy_gbs)) return rc;

  // decode attention, bf16 pages of 16 tokens
  const int batch = 32, ctx = 8192, page = 16, kvh = 8, qoh = 32, hd = 128;
  const int pages_per_seq = ctx / page;
  const int64_t num_pages = (int64_t)batch * pages_per_seq;
  const size_t pool_bytes = (size_t)num_pages * page * kvh * hd * 2;  // 512 MiB each for K and V
  void *k = nullptr, *v = nullptr;
  CK(cudaMalloc(&k, pool_bytes));
  CK(cudaMalloc(&v, pool_bytes));
  std::vector<int32_t> indptr(batch + 1), indices(num_pages), last(batch, page);
  for (int i = 0; i <= batch; i++) indptr[i] = i * pages_per_seq;
  for (int64_t i = 0; i < num_pages; i++) indices[i] = (int32_t)((i * 7919) % num_pages);  // scattered pages
  int32_t *d_indptr, *d_indices, *d_last;
  void *q, *out;
  CK(cudaMalloc(&d_indptr, indptr.size() * 4));
  CK(cudaMalloc(&d_indices, indices.size() * 4));
  CK(cudaMalloc(&d_last, last.size() * 4));
  CK(cudaMemcpy(d_indptr, indptr.data(), indptr.size() * 4, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(d_indices, indices.data(), indices.size() * 4, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(d_last, last.data(), last.size() * 4, cudaMemcpyHostToDevice));
  CK(cudaMalloc(&q, (size_t)batch * qoh * hd * 2));
  CK(cudaMalloc(&out, (size_t)batch * qoh * hd * 2));
  CK(cudaMemset(q, 0, (size_t)batch * qoh * hd * 2));
  CK(cudaMemset(k, 0, pool_bytes));
  CK(cudaMemset(v, 0, pool_bytes));
  CK(cudaDeviceSynchronize());
  int st = RKV_OK;
  // as an engine step does: plan once from the host tables, then time the runs (every layer)
  rkv_cuda_attn_plan* plan = nullptr;
  RK(rkv_cuda_attn_plan_create(&plan));
  RK(rkv_cuda_attn_plan_batch(plan, nullptr, indptr.data(), last.data(), batch, page, qoh, kvh, hd, nullptr));
  float ms = time_ms(nullptr, 10, [&](int) {
    int r = rkv_cuda_decode_attention_run(plan, ptr(decode_params(q, RKV_DTYPE_BF16, out, RKV_DTYPE_BF16, nullptr, k,
        v, RKV_DTYPE_BF16, num_pages, page, qoh, kvh, hd, d_indptr, d_indices, d_last, batch, 0.08838834764f, 0.f, 1.f,
        1.f, -1)), nullptr);
    if (r != RKV_OK) st = r;
  });
  RK(rkv_cuda_attn_plan_destroy(plan));
  RK(st);
  const double decode_gbs = 2.0 * pool_bytes / (ms * 1e6);
  std::printf("bench decode_attention_bf16 %.1f GB/s %.2f\n", decode_gbs, decode_gbs / copy_gbs);

  // GEMM through cuBLAS
  RK(rkv_cuda_blas_available());
  const int64_t m = 1024, n = 4096, kk = 4096;
  float *x, *y;
  void* w;
  CK(cudaMalloc(&x, m * kk * 4));
  CK(cudaMalloc(&y, m * n * 4));
  CK(cudaMalloc(&w, n * kk * 4));
  CK(cudaMemset(x, 0, m * kk * 4));
  CK(cudaMemset(w, 0, n * kk * 4));
  for (int32_t wd : {RKV_DTYPE_F32, RKV_DTYPE_BF16}) {
    st = RKV_OK;
    ms = time_ms(s, 10, [&](int) {
      int r = rkv_cuda_linear(x, w, wd, y, m, n, kk, 0, s);
      if (r != RKV_OK) st = r;
    });
    RK(st);
    std::printf("bench gemm_%s_1024x4096x4096 %.1f TFLOP/s -\n", wd == RKV_DTYPE_F32 ? "f32" : "bf16",
                2.0 * m * n * kk / (ms * 1e9));
  }
  return 0;
}
