// The CUDA attention plan/run ABI, KV scatter and page copy on a real device, against
// libradixkv's CPU kernels on the same inputs: a plan made once from host tables and run for
// several "layers" on a non-blocking stream, the one-shot forms (bit-identical to plan/run),
// plan/run mismatches refused, and the device error record of reshape_and_cache / copy_blocks.
// Run by scripts/gpu-check (ctest label "gpu"); exits 77 (skipped) without a CUDA device.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "radixkv.h"
#include "../attention_args.h"
#include "../rkv_test.h"
#include "cuda_test_util.cuh"


#define OK(call) EXPECT((call) == RKV_OK, "%s: %s", #call, rkv_cuda_last_error())

static std::mt19937 rng(21);

static std::vector<float> uniform(size_t n) {
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> v(n);
  for (auto& x : v) x = u(rng);
  return v;
}

static void expect_close(const char* what, const std::vector<float>& got, const std::vector<float>& want, double tol) {
  int bad = 0;
  for (size_t i = 0; i < want.size() && bad < 3; i++) {
    const double e = want[i], g = got[i];
    if (std::isinf(e) || std::isinf(g)) {
      if (e != g) {
        EXPECT(false, "%s[%zu]: GPU %g vs CPU %g", what, i, g, e);
        bad++;
      }
      continue;
    }
    if (!(std::fabs(e - g) <= tol * std::fmax(1.0, std::fabs(e)))) {
      EXPECT(false, "%s[%zu]: GPU %.9g vs CPU %.9g (tolerance %g)", what, i, g, e, tol);
      bad++;
    }
  }
}

// A bf16 pool with shuffled pages; sequences of the given lengths.
struct Batch {
  int32_t ps = 16, nkv = 2, nqo = 8, hd = 128;
  int64_t num_pages = 0;
  std::vector<uint16_t> k, v;
  std::vector<int32_t> indptr, indices, last;
  int32_t batch = 0;

  explicit Batch(const std::vector<int64_t>& lens) {
    batch = (int32_t)lens.size();
    indptr.push_back(0);
    int64_t need = 0;
    for (int64_t l : lens) need += (l + ps - 1) / ps;
    num_pages = need + 5;
    std::vector<int32_t> ids((size_t)num_pages);
    for (int64_t i = 0; i < num_pages; i++) ids[(size_t)i] = (int32_t)i;
    std::shuffle(ids.begin(), ids.end(), rng);
    size_t next = 0;
    for (int64_t l : lens) {
      const int64_t pages = (l + ps - 1) / ps;
      for (int64_t p = 0; p < pages; p++) indices.push_back(ids[next++]);
      indptr.push_back((int32_t)indices.size());
      last.push_back(l == 0 ? 1 : (int32_t)(l - (pages - 1) * ps));
    }
    const size_t elems = (size_t)num_pages * ps * nkv * hd;
    std::vector<float> kf = uniform(elems), vf = uniform(elems);
    k.resize(elems);
    v.resize(elems);
    if (rkv_convert(kf.data(), RKV_DTYPE_F32, k.data(), RKV_DTYPE_BF16, (int64_t)elems, 1.f) != RKV_OK ||
        rkv_convert(vf.data(), RKV_DTYPE_F32, v.data(), RKV_DTYPE_BF16, (int64_t)elems, 1.f) != RKV_OK)
      std::abort();
    if (indices.empty()) indices.push_back(0);  // a valid pointer for an all-empty batch
  }
};

static void test_decode_plan_run() {
  Batch b({1000, 37, 0, 300});
  const float scale = 1.f / std::sqrt((float)b.hd);
  const int64_t rows = (int64_t)b.batch * b.nqo;
  uint16_t *dk = to_dev(b.k), *dv = to_dev(b.v);
  int32_t *dip = to_dev(b.indptr), *dix = to_dev(b.indices), *dl = to_dev(b.last);
  rkv_cuda_attn_plan* plan = nullptr;
  OK(rkv_cuda_attn_plan_create(&plan));
  OK(rkv_cuda_attn_plan_batch(plan, nullptr, b.indptr.data(), b.last.data(), b.batch, b.ps, b.nqo, b.nkv, b.hd,
                              g_stream));
  for (int32_t window : {-1, 100}) {
    for (int layer = 0; layer < 2; layer++) {
      std::vector<float> q = uniform((size_t)rows * b.hd), want((size_t)rows * b.hd), want_lse((size_t)rows);
      EXPECT(rkv_decode_attention(ptr(decode_params(q.data(), RKV_DTYPE_F32, want.data(), RKV_DTYPE_F32,
          want_lse.data(), b.k.data(), b.v.data(), RKV_DTYPE_BF16, b.num_pages, b.ps, b.nqo, b.nkv, b.hd,
          b.indptr.data(), b.indices.data(), b.last.data(), b.batch, scale, 0.f, 1.f, 1.f, window))) == RKV_OK,
             "%s", rkv_last_error());
      float* dq = to_dev(q);
      float* dout = to_dev(want);  // overwritten
      float* dlse = to_dev(want_lse);
      OK(rkv_cuda_decode_attention_run(plan, ptr(decode_params(dq, RKV_DTYPE_F32, dout, RKV_DTYPE_F32, dlse, dk, dv,
          RKV_DTYPE_BF16, b.num_pages, b.ps, b.nqo, b.nkv, b.hd, dip, dix, dl, b.batch, scale, 0.f, 1.f, 1.f, window)),
          g_stream));
      const std::vector<float> got = to_host(dout, want.size()), got_lse = to_host(dlse, want_lse.size());
      char what[64];
      std::snprintf(what, sizeof what, "decode window %d layer %d out", window, layer);
      expect_close(what, got, want, 1e-4);
      std::snprintf(what, sizeof what, "decode window %d layer %d lse", window, layer);
      expect_close(what, got_lse, want_lse, 1e-4);
      // the one-shot form plans the same split: bit-identical
      OK(rkv_cuda_decode_attention(ptr(decode_params(dq, RKV_DTYPE_F32, dout, RKV_DTYPE_F32, dlse, dk, dv,
          RKV_DTYPE_BF16, b.num_pages, b.ps, b.nqo, b.nkv, b.hd, dip, dix, dl, b.batch, scale, 0.f, 1.f, 1.f, window)),
          g_stream));
      const std::vector<float> again = to_host(dout, want.size());
      EXPECT(std::memcmp(again.data(), got.data(), got.size() * sizeof(float)) == 0,
             "one-shot decode differs from plan/run (window %d)", window);
      cudaFree(dq);
      cudaFree(dout);
      cudaFree(dlse);
    }
  }
  // a decode plan cannot run prefill, nor another batch size
  std::vector<int32_t> qo = {0, 1, 2, 2, 3};
  int32_t* dqo = to_dev(qo);
  EXPECT(rkv_cuda_append_prefill_attention_run(plan, ptr(prefill_params(dk, RKV_DTYPE_F32, dk, RKV_DTYPE_F32, nullptr,
      dqo, dk, dv, RKV_DTYPE_BF16, b.num_pages, b.ps, b.nqo, b.nkv, b.hd, dip, dix, dl, b.batch, nullptr, nullptr, 1.f,
      0.f, 1.f, 1.f, -1)), g_stream) == RKV_ERR_INVALID_ARGUMENT,
         "prefill run of a decode plan accepted");
  EXPECT(rkv_cuda_decode_attention_run(plan, ptr(decode_params(dk, RKV_DTYPE_F32, dk, RKV_DTYPE_F32, nullptr, dk, dv,
      RKV_DTYPE_BF16, b.num_pages, b.ps, b.nqo, b.nkv, b.hd, dip, dix, dl, b.batch - 1, 1.f, 0.f, 1.f, 1.f, -1)),
      g_stream) == RKV_ERR_INVALID_ARGUMENT,
         "decode run with another batch size accepted");
  std::vector<int32_t> bad_indptr = {0, 5, 3, 4, 5};
  EXPECT(rkv_cuda_attn_plan_batch(plan, nullptr, bad_indptr.data(), b.last.data(), b.batch, b.ps, b.nqo, b.nkv, b.hd,
                                  g_stream) == RKV_ERR_INVALID_ARGUMENT,
         "non-monotone kv_indptr planned");
  EXPECT(rkv_cuda_decode_attention_run(plan, ptr(decode_params(dk, RKV_DTYPE_F32, dk, RKV_DTYPE_F32, nullptr, dk, dv,
      RKV_DTYPE_BF16, b.num_pages, b.ps, b.nqo, b.nkv, b.hd, dip, dix, dl, b.batch, 1.f, 0.f, 1.f, 1.f, -1)),
      g_stream) == RKV_ERR_INVALID_ARGUMENT,
         "a plan whose last planning failed was run");
  OK(rkv_cuda_attn_plan_destroy(plan));
  cudaFree(dqo);
  cudaFree(dk);
  cudaFree(dv);
  cudaFree(dip);
  cudaFree(dix);
  cudaFree(dl);
}

static void test_prefill_plan_run() {
  Batch b({1000, 37, 0, 300});
  const float scale = 1.f / std::sqrt((float)b.hd);
  std::vector<int32_t> qo = {0, 50, 87, 87, 88};
  const int64_t rows = (int64_t)qo.back() * b.nqo;
  uint16_t *dk = to_dev(b.k), *dv = to_dev(b.v);
  int32_t *dip = to_dev(b.indptr), *dix = to_dev(b.indices), *dl = to_dev(b.last), *dqo = to_dev(qo);
  rkv_cuda_attn_plan* plan = nullptr;
  OK(rkv_cuda_attn_plan_create(&plan));
  // plan twice: the second waits for the first upload before refilling the pinned items
  OK(rkv_cuda_attn_plan_batch(plan, qo.data(), b.indptr.data(), b.last.data(), b.batch, b.ps, b.nqo, b.nkv, b.hd,
                              g_stream));
  OK(rkv_cuda_attn_plan_batch(plan, qo.data(), b.indptr.data(), b.last.data(), b.batch, b.ps, b.nqo, b.nkv, b.hd,
                              g_stream));
  for (int32_t window : {-1, 20}) {
    std::vector<float> q = uniform((size_t)rows * b.hd), want((size_t)rows * b.hd), want_lse((size_t)rows);
    EXPECT(rkv_append_prefill_attention(ptr(prefill_params(q.data(), RKV_DTYPE_F32, want.data(), RKV_DTYPE_F32,
        want_lse.data(), qo.data(), b.k.data(), b.v.data(), RKV_DTYPE_BF16, b.num_pages, b.ps, b.nqo, b.nkv, b.hd,
        b.indptr.data(), b.indices.data(), b.last.data(), b.batch, nullptr, nullptr, scale, 30.f, 1.f, 1.f,
        window))) == RKV_OK,
           "%s", rkv_last_error());
    float* dq = to_dev(q);
    float* dout = to_dev(want);
    float* dlse = to_dev(want_lse);
    OK(rkv_cuda_append_prefill_attention_run(plan, ptr(prefill_params(dq, RKV_DTYPE_F32, dout, RKV_DTYPE_F32, dlse,
        dqo, dk, dv, RKV_DTYPE_BF16, b.num_pages, b.ps, b.nqo, b.nkv, b.hd, dip, dix, dl, b.batch, nullptr, nullptr,
        scale, 30.f, 1.f, 1.f, window)), g_stream));
    const std::vector<float> got = to_host(dout, want.size()), got_lse = to_host(dlse, want_lse.size());
    char what[64];
    std::snprintf(what, sizeof what, "prefill window %d out", window);
    expect_close(what, got, want, 1e-4);
    std::snprintf(what, sizeof what, "prefill window %d lse", window);
    expect_close(what, got_lse, want_lse, 1e-4);
    OK(rkv_cuda_append_prefill_attention(ptr(prefill_params(dq, RKV_DTYPE_F32, dout, RKV_DTYPE_F32, dlse, dqo, dk, dv,
        RKV_DTYPE_BF16, b.num_pages, b.ps, b.nqo, b.nkv, b.hd, dip, dix, dl, b.batch, nullptr, nullptr, scale, 30.f,
        1.f, 1.f, window)), g_stream));
    const std::vector<float> again = to_host(dout, want.size());
    EXPECT(std::memcmp(again.data(), got.data(), got.size() * sizeof(float)) == 0,
           "one-shot prefill differs from plan/run (window %d)", window);
    cudaFree(dq);
    cudaFree(dout);
    cudaFree(dlse);
  }
  OK(rkv_cuda_attn_plan_destroy(plan));
  cudaFree(dk);
  cudaFree(dv);
  cudaFree(dip);
  cudaFree(dix);
  cudaFree(dl);
  cudaFree(dqo);
}

static void test_error_record() {
  const int32_t nkv = 2, hd = 8, ps = 2;
  const int64_t num_pages = 4, tokens = 3, row = nkv * hd;
  std::vector<float> k = uniform((size_t)(tokens * row)), v = uniform((size_t)(tokens * row));
  std::vector<float> pool((size_t)(num_pages * ps * row), 0.f);
  std::vector<int64_t> slots = {0, 8, 3};  // 8 = num_pages * page_size: out of range
  std::vector<int64_t> rec0(RKV_CUDA_ERROR_RECORD_SLOTS, 0);
  float *dk = to_dev(k), *dv = to_dev(v), *dkc = to_dev(pool), *dvc = to_dev(pool);
  int64_t *ds = to_dev(slots), *drec = to_dev(rec0);
  OK(rkv_cuda_reshape_and_cache(dk, dv, RKV_DTYPE_F32, ds, tokens, nkv, hd, dkc, dvc, RKV_DTYPE_F32, num_pages, ps,
                                1.f, 1.f, drec, g_stream));
  std::vector<int64_t> rec = to_host(drec, RKV_CUDA_ERROR_RECORD_SLOTS);
  EXPECT(rec[0] == RKV_CUDA_DEVERR_BAD_SLOT && rec[1] == 1 && rec[2] == 8 && rec[3] == 8,
         "reshape record {%lld, %lld, %lld, %lld}", (long long)rec[0], (long long)rec[1], (long long)rec[2],
         (long long)rec[3]);
  std::vector<float> want = pool, want_v = pool;
  std::vector<int64_t> good = {0, -1, 3};
  EXPECT(rkv_reshape_and_cache(k.data(), v.data(), RKV_DTYPE_F32, good.data(), tokens, nkv, hd, want.data(),
                               want_v.data(), RKV_DTYPE_F32, num_pages, ps, 1.f, 1.f) == RKV_OK,
         "%s", rkv_last_error());
  const std::vector<float> got = to_host(dkc, want.size());
  EXPECT(std::memcmp(got.data(), want.data(), want.size() * sizeof(float)) == 0,
         "the good tokens must be written, the bad one skipped");
  // first writer wins: a later page error does not overwrite the slot error
  std::vector<void*> k_caches = {dkc}, v_caches = {dvc};
  std::vector<int64_t> mapping = {1, 9};
  void** dk_caches = to_dev(k_caches);
  void** dv_caches = to_dev(v_caches);
  int64_t* dmap = to_dev(mapping);
  OK(rkv_cuda_copy_blocks(dk_caches, dv_caches, 1, dmap, 1, ps * row * 4, num_pages, drec, g_stream));
  rec = to_host(drec, RKV_CUDA_ERROR_RECORD_SLOTS);
  EXPECT(rec[0] == RKV_CUDA_DEVERR_BAD_SLOT, "record overwritten: code %lld", (long long)rec[0]);
  cudaMemset(drec, 0, RKV_CUDA_ERROR_RECORD_SLOTS * sizeof(int64_t));
  OK(rkv_cuda_copy_blocks(dk_caches, dv_caches, 1, dmap, 1, ps * row * 4, num_pages, drec, g_stream));
  rec = to_host(drec, RKV_CUDA_ERROR_RECORD_SLOTS);
  EXPECT(rec[0] == RKV_CUDA_DEVERR_BAD_PAGE && rec[1] == 0 && rec[2] == 9 && rec[3] == num_pages,
         "copy_blocks record {%lld, %lld, %lld, %lld}", (long long)rec[0], (long long)rec[1], (long long)rec[2],
         (long long)rec[3]);
  EXPECT(std::memcmp(to_host(dkc, want.size()).data(), want.data(), want.size() * sizeof(float)) == 0,
         "a bad pair must copy nothing");
  cudaFree(dk);
  cudaFree(dv);
  cudaFree(dkc);
  cudaFree(dvc);
  cudaFree(ds);
  cudaFree(drec);
  cudaFree(dk_caches);
  cudaFree(dv_caches);
  cudaFree(dmap);
}

int main() {
  int n = rkv_cuda_device_count();
  if (n <= 0) {
    std::printf("attention_cuda_test: no CUDA device (%s): skipped\n", n < 0 ? rkv_cuda_last_error() : "0 devices");
    return 77;
  }
  if (cudaStreamCreateWithFlags(&g_stream, cudaStreamNonBlocking) != cudaSuccess) return 1;
  test_decode_plan_run();
  test_prefill_plan_run();
  test_error_record();
  cudaStreamDestroy(g_stream);
  if (g_failures) {
    std::printf("attention_cuda_test: %d failure(s)\n", g_failures);
    return 1;
  }
  std::printf("attention_cuda_test: ok\n");
  return 0;
}
