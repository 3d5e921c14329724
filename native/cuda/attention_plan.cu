// CUDA attention plans (rkv_cuda_attn_plan_*).
//
// Plan/run (FlashInfer's split): rkv_cuda_attn_plan_batch decides the decode split count and the
// prefill work items on the host (attn_plan.h) once per engine step and owns the buffers they
// need; the _run entry points only check arguments and launch.
// The split count depends on the decode kernel's occupancy (rkv_cuda_attn::decode_resident_blocks,
// attention_decode.cu); the planning arithmetic itself is attn_plan.h, tested on the CPU.
#include <new>

#include "attention_common.cuh"

using rkv_cuda_attn::decode_resident_blocks;

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

}  // extern "C"
