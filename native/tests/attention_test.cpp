// Native check of the CPU attention kernels on every instruction-set path (AVX-512, AVX2,
// scalar: the test re-runs itself with RADIXKV_ISA, see isa_rerun.h) against a naive double-precision reference, for all
// cache dtypes, GQA ratios, page sizes, soft-cap, prefill with prefix hits and bidirectional
// regions, and split-KV decode with several threads. The Java tests cover the same kernels
// through the FFM layer against the independent Java reference.
#include <omp.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "attention_args.h"
#include "isa_rerun.h"
#include "radixkv.h"
#include "rkv_dtype.h"

namespace {

int g_failures = 0;

struct Case {
  int dtype, page_size, num_qo, num_kv, hd;
  std::vector<int> kv_lens, q_lens;  // q_lens empty: decode
  float soft_cap;
  bool bidir;
  int window_left = -1;
};

double ref_attend(const std::vector<float>& K, const std::vector<float>& V, const float* q, int len, int lim_begin,
                  int lim_end, int hd, double sm, double cap, std::vector<double>& o) {
  // K/V: [len][hd] decoded values; visible positions lim_begin..lim_end-1
  o.assign(hd, 0.0);
  if (lim_end <= lim_begin) return -INFINITY;
  std::vector<double> s(lim_end);
  double mx = -INFINITY;
  for (int t = lim_begin; t < lim_end && t < len; t++) {
    double d = 0;
    for (int i = 0; i < hd; i++) d += (double)q[i] * K[(size_t)t * hd + i];
    d *= sm;
    if (cap > 0) d = cap * std::tanh(d / cap);
    s[t] = d;
    mx = std::max(mx, d);
  }
  double sum = 0;
  for (int t = lim_begin; t < lim_end; t++) {
    double p = std::exp(s[t] - mx);
    sum += p;
    for (int i = 0; i < hd; i++) o[i] += p * V[(size_t)t * hd + i];
  }
  for (int i = 0; i < hd; i++) o[i] /= sum;
  return mx + std::log(sum);
}

void run_case(const Case& c, const char* isa, std::mt19937& rng) {
  const int B = (int)c.kv_lens.size();
  const int es = rkv_dtype_size(c.dtype);
  const bool fp8 = c.dtype == RKV_DTYPE_FP8_E4M3 || c.dtype == RKV_DTYPE_FP8_E5M2;
  const float k_scale = fp8 ? 0.03f : 1.f, v_scale = fp8 ? 0.05f : 1.f;
  // page tables: shuffled page ids
  std::vector<int> indptr{0}, last;
  int total_pages = 0;
  for (int len : c.kv_lens) {
    int p = (len + c.page_size - 1) / c.page_size;
    total_pages += p;
    indptr.push_back(indptr.back() + p);
    last.push_back(p ? len - (p - 1) * c.page_size : 1);
  }
  int num_pages = total_pages + 3;
  std::vector<int> perm(num_pages);
  for (int i = 0; i < num_pages; i++) perm[i] = i;
  std::shuffle(perm.begin(), perm.end(), rng);
  std::vector<int> indices(perm.begin(), perm.begin() + total_pages);
  size_t pool = (size_t)num_pages * c.page_size * c.num_kv * c.hd;
  std::vector<uint8_t> kc(pool * es), vc(pool * es);
  std::uniform_real_distribution<float> U(-1.f, 1.f);
  for (size_t i = 0; i < pool; i++) {
    float kv = U(rng) * 2, vv = U(rng);
    rkv::store_from_float(kc.data(), i, c.dtype, fp8 ? kv / k_scale : kv);
    rkv::store_from_float(vc.data(), i, c.dtype, fp8 ? vv / v_scale : vv);
  }
  const bool decode = c.q_lens.empty();
  std::vector<int> qo{0};
  for (int b = 0; b < B; b++) qo.push_back(qo.back() + (decode ? 1 : c.q_lens[b]));
  const int total_q = qo.back();
  std::vector<float> q((size_t)total_q * c.num_qo * c.hd), out(q.size(), 7.f), lse((size_t)total_q * c.num_qo);
  for (auto& x : q) x = U(rng);
  std::vector<int> bi{0}, br;
  if (c.bidir) {
    for (int b = 0; b < B; b++) {
      int len = c.kv_lens[b];
      if (len >= 8) {
        br.push_back(len / 4);
        br.push_back(len / 4 + len / 2);
      }
      bi.push_back((int)br.size() / 2);
    }
  }
  const float sm = 1.f / std::sqrt((float)c.hd);
  int rc;
  if (decode) {
    rc = rkv_decode_attention(ptr(decode_params(q.data(), RKV_DTYPE_F32, out.data(), RKV_DTYPE_F32, lse.data(),
        kc.data(), vc.data(), c.dtype, num_pages, c.page_size, c.num_qo, c.num_kv, c.hd, indptr.data(), indices.data(),
        last.data(), B, sm, c.soft_cap, k_scale, v_scale, c.window_left)));
  } else {
    rc = rkv_append_prefill_attention(ptr(prefill_params(q.data(), RKV_DTYPE_F32, out.data(), RKV_DTYPE_F32,
        lse.data(), qo.data(), kc.data(), vc.data(), c.dtype, num_pages, c.page_size, c.num_qo, c.num_kv, c.hd,
        indptr.data(), indices.data(), last.data(), B, c.bidir ? bi.data() : nullptr, c.bidir ? br.data() : nullptr,
        sm, c.soft_cap, k_scale, v_scale, c.window_left)));
  }
  if (rc != RKV_OK) {
    std::printf("FAIL [%s] rc=%d %s\n", isa, rc, rkv_last_error());
    g_failures++;
    return;
  }
  double max_err = 0, max_lse_err = 0;
  const int G = c.num_qo / c.num_kv;
  for (int b = 0; b < B; b++) {
    int len = c.kv_lens[b];
    for (int h = 0; h < c.num_kv; h++) {
      std::vector<float> K((size_t)len * c.hd), V((size_t)len * c.hd);
      for (int t = 0; t < len; t++) {
        int page = indices[indptr[b] + t / c.page_size];
        size_t base = (((size_t)page * c.page_size + t % c.page_size) * c.num_kv + h) * c.hd;
        for (int i = 0; i < c.hd; i++) {
          K[(size_t)t * c.hd + i] = rkv::load_as_float(kc.data(), base + i, c.dtype) * k_scale;
          V[(size_t)t * c.hd + i] = rkv::load_as_float(vc.data(), base + i, c.dtype) * v_scale;
        }
      }
      int ql = qo[b + 1] - qo[b];
      for (int i = 0; i < ql; i++) {
        int p = len - ql + i;
        int ext = p;
        if (c.bidir)
          for (int r = bi[b]; r < bi[b + 1]; r++)
            if (br[2 * r] <= p && p < br[2 * r + 1]) ext = std::max(ext, br[2 * r + 1] - 1);
        for (int g = 0; g < G; g++) {
          size_t row = (size_t)(qo[b] + i) * c.num_qo + h * G + g;
          std::vector<double> o;
          const int pos = decode ? len - 1 : p;
          const int begin = c.window_left < 0 || pos <= c.window_left ? 0 : pos - c.window_left;
          double l = ref_attend(K, V, &q[row * c.hd], len, begin, decode ? len : ext + 1, c.hd, sm, c.soft_cap, o);
          for (int d = 0; d < c.hd; d++) max_err = std::max(max_err, std::fabs(o[d] - out[row * c.hd + d]));
          if (std::isinf(l)) {
            if (!std::isinf(lse[row])) max_lse_err = 1e9;
          } else {
            max_lse_err = std::max(max_lse_err, std::fabs(l - lse[row]));
          }
        }
      }
    }
  }
  bool ok = max_err < 2e-4 && max_lse_err < 2e-4;
  if (!ok) g_failures++;
  std::printf("%s [%s] %s dtype=%d ps=%d heads=%d/%d hd=%d B=%d cap=%g bidir=%d window_left=%d: max_err=%.2e "
              "lse_err=%.2e\n",
              ok ? "ok  " : "FAIL", isa, decode ? "decode " : "prefill", c.dtype, c.page_size, c.num_qo, c.num_kv, c.hd,
              B, (double)c.soft_cap, (int)c.bidir, c.window_left, max_err, max_lse_err);
}

// An e4m3 NaN code (0x7F / 0xFF) in K or V must make the output NaN on every ISA path (the
// vector loaders scan blocks for NaN codes and only then take the fix-up path).
void nan_propagates(const char* isa) {
  const int ps = 16, hd = 64, len = 40;
  for (int which = 0; which < 2; which++) {
    std::vector<uint8_t> k((size_t)3 * ps * hd, 0x30), v(k.size(), 0x28);
    (which == 0 ? k : v)[(size_t)37 * hd + 5] = which == 0 ? 0x7F : 0xFF;
    std::vector<int> indptr{0, 3}, indices{2, 0, 1}, last{len - 2 * ps};
    std::vector<float> q(hd, 0.1f), out(hd), lse(1);
    int rc = rkv_decode_attention(ptr(decode_params(q.data(), RKV_DTYPE_F32, out.data(), RKV_DTYPE_F32, lse.data(),
        k.data(), v.data(), RKV_DTYPE_FP8_E4M3, 3, ps, 1, 1, hd, indptr.data(), indices.data(), last.data(), 1, 0.125f,
        0.f, 1.f, 1.f, -1)));
    bool ok = rc == RKV_OK && std::isnan(out[5]);
    if (!ok) g_failures++;
    std::printf("%s [%s] e4m3 NaN code in %s propagates\n", ok ? "ok  " : "FAIL", isa, which == 0 ? "K" : "V");
  }
}

// The same through the token-major decode path (8 KV heads of 128: a block's page runs are KiB
// long, so the scan's unmasked two-vector loop, its second chain and its masked tail all see
// the code somewhere).
void nan_propagates_token_major(const char* isa) {
  const int ps = 16, hd = 128, hk = 8, gqa = 4, len = 40;
  const int spots[][3] = {{37, 0, 5}, {37, 3, 70}, {20, 7, 127}, {39, 6, 64}, {0, 1, 0}};  // token, head, element
  for (const auto& sp : spots) {
    for (int which = 0; which < 2; which++) {
      std::vector<uint8_t> k((size_t)3 * ps * hk * hd, 0x30), v(k.size(), 0x28);
      const int tok = sp[0], h = sp[1], e = sp[2];
      const int page = tok / ps;  // token page `page` of the sequence is pool page indices[page]
      std::vector<int> indptr{0, 3}, indices{2, 0, 1}, last{len - 2 * ps};
      const size_t at = (((size_t)indices[page] * ps + tok % ps) * hk + h) * hd + e;
      (which == 0 ? k : v)[at] = which == 0 ? 0x7F : 0xFF;
      std::vector<float> q((size_t)hk * gqa * hd, 0.1f), out(q.size()), lse((size_t)hk * gqa);
      int rc = rkv_decode_attention(ptr(decode_params(q.data(), RKV_DTYPE_F32, out.data(), RKV_DTYPE_F32, lse.data(),
          k.data(), v.data(), RKV_DTYPE_FP8_E4M3, 3, ps, hk * gqa, hk, hd, indptr.data(), indices.data(), last.data(),
          1, 0.088f, 0.f, 1.f, 1.f, -1)));
      bool ok = rc == RKV_OK && std::isnan(out[(size_t)h * gqa * hd + e]) && std::isfinite(out[((size_t)(h + 1) % hk) * gqa * hd]);
      if (!ok) g_failures++;
      std::printf("%s [%s] e4m3 NaN code in %s (token %d, head %d, element %d) propagates, token-major\n",
                  ok ? "ok  " : "FAIL", isa, which == 0 ? "K" : "V", tok, h, e);
    }
  }
}

// One visible token: decode returns its V row exactly (v_scale 1), so every e4m3 code must widen to
// its exact value on every path, including the AVX512-VBMI lookup tables (subnormals, both signs).
// 8 KV heads of 128 with GQA 4 (the token-major, table-lookup shape): 1024 codes, each of the 254
// non-NaN codes at least 4 times, at varying head and element positions.
void e4m3_every_code_exact(const char* isa) {
  const int ps = 16, hd = 128, hk = 8, gqa = 4;
  std::vector<uint8_t> k((size_t)ps * hk * hd, 0x38), v(k.size(), 0);
  for (int i = 0; i < hk * hd; i++) {
    uint8_t c = (uint8_t)((i * 37 + i / 256) & 0xFF);
    v[i] = (c & 0x7F) == 0x7F ? 0 : c;
  }
  std::vector<int> indptr{0, 1}, indices{0}, last{1};
  std::vector<float> q((size_t)hk * gqa * hd, 0.3f), out(q.size());
  int rc = rkv_decode_attention(ptr(decode_params(q.data(), RKV_DTYPE_F32, out.data(), RKV_DTYPE_F32, nullptr,
      k.data(), v.data(), RKV_DTYPE_FP8_E4M3, 1, ps, hk * gqa, hk, hd, indptr.data(), indices.data(), last.data(), 1,
      0.088f, 0.f, 1.f, 1.f, -1)));
  int wrong = 0;
  for (int h = 0; h < hk; h++)
    for (int r = 0; r < gqa; r++)
      for (int e = 0; e < hd; e++)
        wrong += out[((size_t)h * gqa + r) * hd + e] != rkv::fp8_e4m3_to_float(v[(size_t)h * hd + e]);
  bool ok = rc == RKV_OK && wrong == 0;
  if (!ok) g_failures++;
  std::printf("%s [%s] e4m3 decode of one token returns every code's exact value (%d wrong)\n", ok ? "ok  " : "FAIL",
              isa, wrong);
}

// A non-finite K/V at position j must not reach prefill queries the causal
// mask hides j from, although they share a query tile and KV block with queries that see it
// (0 * Inf = NaN). Rows 0..j-1 must equal those of the same cache with finite values at j.
void masked_nonfinite(const char* isa) {
  const int ps = 16, hd = 64, len = 40, j = 27, nqo = 4;
  const uint16_t inf16[] = {0, 0x7C00, 0x7F80};  // f16, bf16 Inf (index by dtype)
  for (int dt = RKV_DTYPE_F32; dt <= RKV_DTYPE_FP8_E5M2; dt++) {
    const int es = rkv_dtype_size(dt);
    std::vector<uint8_t> k((size_t)3 * ps * hd * es), v(k.size());
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> U(-1.f, 1.f);
    for (size_t i = 0; i < k.size() / es; i++) {
      rkv::store_from_float(k.data(), i, dt, U(rng));
      rkv::store_from_float(v.data(), i, dt, U(rng));
    }
    std::vector<uint8_t> kp = k, vp = v;  // poisoned copies
    const int page_of_j[] = {2, 0, 1};
    const size_t base = ((size_t)page_of_j[j / ps] * ps + j % ps) * hd;
    for (int d = 0; d < hd; d += 5) {
      uint8_t* pv = vp.data() + (base + d) * es;
      uint8_t* pk = kp.data() + (base + d + 1) * es;
      if (dt == RKV_DTYPE_F32) {
        float inf = INFINITY;
        std::memcpy(pv, &inf, 4);
        std::memcpy(pk, &inf, 4);
      } else if (es == 2) {
        std::memcpy(pv, &inf16[dt], 2);
        std::memcpy(pk, &inf16[dt], 2);
      } else {
        *pv = *pk = dt == RKV_DTYPE_FP8_E4M3 ? 0x7F : 0x7C;  // e4m3 has no Inf: NaN code
      }
    }
    std::vector<int> indptr{0, 3}, indices{2, 0, 1}, last{len - 2 * ps}, qo{0, len};
    std::vector<float> q((size_t)len * nqo * hd), clean(q.size()), poisoned(q.size());
    for (auto& x : q) x = U(rng);
    int rc = rkv_append_prefill_attention(ptr(prefill_params(q.data(), RKV_DTYPE_F32, clean.data(), RKV_DTYPE_F32,
        nullptr, qo.data(), k.data(), v.data(), dt, 3, ps, nqo, 1, hd, indptr.data(), indices.data(), last.data(), 1,
        nullptr, nullptr, 0.125f, 0.f, 1.f, 1.f, -1)));
    rc |= rkv_append_prefill_attention(ptr(prefill_params(q.data(), RKV_DTYPE_F32, poisoned.data(), RKV_DTYPE_F32,
        nullptr, qo.data(), kp.data(), vp.data(), dt, 3, ps, nqo, 1, hd, indptr.data(), indices.data(), last.data(), 1,
        nullptr, nullptr, 0.125f, 0.f, 1.f, 1.f, -1)));
    bool ok = rc == RKV_OK && std::memcmp(clean.data(), poisoned.data(), (size_t)j * nqo * hd * sizeof(float)) == 0;
    if (!ok) g_failures++;
    std::printf("%s [%s] dtype=%d non-finite K/V at a masked position does not leak\n", ok ? "ok  " : "FAIL", isa, dt);
  }
}

// Pages entirely before a query's sliding window are never read: they are mapped PROT_NONE,
// so a read would crash the test. Decode (with split-KV when run with 2 threads) and prefill.
void window_skips_pages(const char* isa) {
  const int ps = 16, hd = 64, nqo = 2, len = 300, wl = 100;  // f32: one page = 4096 bytes
  const long os_page = sysconf(_SC_PAGESIZE);
  const size_t page_bytes = (size_t)ps * hd * sizeof(float);
  if (page_bytes % (size_t)os_page != 0) {
    std::printf("ok   [%s] window page skipping not checked (OS page size %ld)\n", isa, os_page);
    return;
  }
  const int pages = (len + ps - 1) / ps;
  const size_t bytes = page_bytes * pages;
  void* k = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  void* v = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (k == MAP_FAILED || v == MAP_FAILED) {
    std::printf("FAIL [%s] mmap\n", isa);
    g_failures++;
    return;
  }
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> U(-1.f, 1.f);
  for (size_t i = 0; i < bytes / 4; i++) {
    static_cast<float*>(k)[i] = U(rng);
    static_cast<float*>(v)[i] = U(rng);
  }
  // decode: the query at len - 1 sees [len - 1 - wl, len); prefill of the last q_len = 20
  // queries: the first of them sees from len - 20 - wl on
  const int first_seen = len - 20 - wl;
  const int hidden_pages = first_seen / ps;
  mprotect(k, page_bytes * hidden_pages, PROT_NONE);
  mprotect(v, page_bytes * hidden_pages, PROT_NONE);
  std::vector<int> indptr{0, pages}, indices(pages), last{len - (pages - 1) * ps}, qo{0, 20};
  for (int i = 0; i < pages; i++) indices[i] = i;
  std::vector<float> q((size_t)20 * nqo * hd), out(q.size());
  for (auto& x : q) x = U(rng);
  int rc = rkv_decode_attention(ptr(decode_params(q.data(), RKV_DTYPE_F32, out.data(), RKV_DTYPE_F32, nullptr, k, v,
      RKV_DTYPE_F32, pages, ps, nqo, 1, hd, indptr.data(), indices.data(), last.data(), 1, 0.125f, 0.f, 1.f, 1.f,
      wl)));
  rc |= rkv_append_prefill_attention(ptr(prefill_params(q.data(), RKV_DTYPE_F32, out.data(), RKV_DTYPE_F32, nullptr,
      qo.data(), k, v, RKV_DTYPE_F32, pages, ps, nqo, 1, hd, indptr.data(), indices.data(), last.data(), 1, nullptr,
      nullptr, 0.125f, 0.f, 1.f, 1.f, wl)));
  munmap(k, bytes);
  munmap(v, bytes);
  bool ok = rc == RKV_OK;
  if (!ok) g_failures++;
  std::printf("%s [%s] %d pages before the window are not read (decode, prefill)\n", ok ? "ok  " : "FAIL", isa,
              hidden_pages);
}

// A query row's prefill output does not depend on the other rows of the call: prefilling the
// last q rows of a sequence gives, bit for bit, the rows the whole prompt's prefill gave them.
// Chunked prefill and prefix-cache hits rely on it (greedy tokens identical with the cache on and
// off); it fails if the packed f32 tiles of a large call (>= 16 rows) summed in a different order
// than the unpacked tiles of a small one, or if a row's result depended on its tile neighbours.
void rows_independent_of_call(const char* isa, std::mt19937& rng) {
  std::uniform_real_distribution<float> U(-1.f, 1.f);
  const int hd = 128, ps = 16, nkv = 2, len = 300, ql = 64, pages = (len + ps - 1) / ps;
  for (int dt : {RKV_DTYPE_F32, RKV_DTYPE_BF16, RKV_DTYPE_F16, RKV_DTYPE_FP8_E4M3}) {
    for (int gqa : {1, 3, 4, 8}) {
      const int nqo = nkv * gqa, es = dt == RKV_DTYPE_F32 ? 4 : dt == RKV_DTYPE_FP8_E4M3 ? 1 : 2;
      const size_t n = (size_t)pages * ps * nkv * hd;
      std::vector<float> kf(n), vf(n);
      for (size_t i = 0; i < n; i++) {
        kf[i] = U(rng);
        vf[i] = U(rng);
      }
      std::vector<uint8_t> k(n * es), v(n * es);
      int rc = rkv_convert(kf.data(), RKV_DTYPE_F32, k.data(), dt, (int64_t)n, 1.f);
      rc |= rkv_convert(vf.data(), RKV_DTYPE_F32, v.data(), dt, (int64_t)n, 1.f);
      std::vector<int> indptr{0, pages}, indices(pages), last{len - (pages - 1) * ps};
      for (int i = 0; i < pages; i++) indices[i] = pages - 1 - i;
      std::vector<float> q((size_t)ql * nqo * hd), whole(q.size());
      for (auto& x : q) x = U(rng);
      std::vector<int> qo{0, ql};
      rc |= rkv_append_prefill_attention(ptr(prefill_params(q.data(), RKV_DTYPE_F32, whole.data(), RKV_DTYPE_F32,
          nullptr, qo.data(), k.data(), v.data(), dt, pages, ps, nqo, nkv, hd, indptr.data(), indices.data(),
          last.data(), 1, nullptr, nullptr, 0.09f, 0.f, 1.f, 1.f, -1)));
      bool ok = rc == RKV_OK;
      // a call of fewer than 16 rows (query tokens x GQA) takes unpacked tiles, a larger one packed
      for (int tail : {1, 3, 5, 17}) {
        const size_t off = (size_t)(ql - tail) * nqo * hd;
        std::vector<float> part((size_t)tail * nqo * hd);
        std::vector<int> qt{0, tail};
        rc = rkv_append_prefill_attention(ptr(prefill_params(q.data() + off, RKV_DTYPE_F32, part.data(), RKV_DTYPE_F32,
            nullptr, qt.data(), k.data(), v.data(), dt, pages, ps, nqo, nkv, hd, indptr.data(), indices.data(),
            last.data(), 1, nullptr, nullptr, 0.09f, 0.f, 1.f, 1.f, -1)));
        ok = ok && rc == RKV_OK && std::memcmp(part.data(), whole.data() + off, part.size() * sizeof(float)) == 0;
      }
      if (!ok) g_failures++;
      std::printf("%s [%s] dtype=%d gqa=%d prefill rows are bit-identical whatever the call's other rows\n",
                  ok ? "ok  " : "FAIL", isa, dt, gqa);
    }
  }
}

}  // namespace

int main(int, char** argv) {
  std::mt19937 rng(1234);
  std::vector<Case> cases = {
      {RKV_DTYPE_F32, 16, 8, 2, 64, {0, 1, 15, 16, 17, 100}, {}, 0.f, false},
      {RKV_DTYPE_BF16, 1, 4, 4, 128, {33, 5}, {}, 0.f, false},
      {RKV_DTYPE_F16, 32, 8, 1, 128, {1000, 64}, {}, 30.f, false},
      {RKV_DTYPE_FP8_E4M3, 16, 16, 2, 64, {300, 17}, {}, 0.f, false},
      {RKV_DTYPE_FP8_E5M2, 16, 6, 3, 256, {129, 2}, {}, 0.f, false},
      {RKV_DTYPE_F32, 16, 8, 2, 64, {100, 40, 7}, {100, 13, 1}, 0.f, false},
      {RKV_DTYPE_BF16, 16, 32, 4, 128, {200, 77}, {150, 77}, 20.f, false},
      {RKV_DTYPE_FP8_E4M3, 32, 4, 4, 64, {90, 300}, {90, 30}, 0.f, true},
      {RKV_DTYPE_FP8_E5M2, 1, 2, 1, 128, {50}, {20}, 0.f, true},
      {RKV_DTYPE_F16, 16, 12, 4, 64, {5000}, {}, 0.f, false},  // split-KV with threads
      // GQA groups of 3 (Llama 3.2 3B's ratio): the 3-row score and value tiles, decode and
      // prefill (rows seeing different tokens on the diagonal), fp8 and bf16
      {RKV_DTYPE_FP8_E4M3, 16, 12, 4, 128, {77, 1, 40}, {}, 0.f, false},
      {RKV_DTYPE_BF16, 16, 24, 8, 128, {130, 64}, {60, 64}, 0.f, false},
      {RKV_DTYPE_F32, 1, 3, 1, 64, {33}, {33}, 0.f, false},
      // grouped decode: 8 KV heads of 128 make 4-token (f32) and 8-token (bf16) groups by size,
      // which GQA groups of 1 and 5 (a 1-row tile: 16 tokens on AVX-512) and 6 (4 + 2 rows: 8
      // tokens) must widen to their score tiles; lengths off the group sizes
      {RKV_DTYPE_F32, 16, 8, 8, 128, {45, 70, 3}, {}, 0.f, false},
      {RKV_DTYPE_BF16, 16, 40, 8, 128, {50, 19}, {}, 0.f, false},
      {RKV_DTYPE_F32, 16, 48, 8, 128, {45, 130}, {}, 0.f, false},
      // bf16 decode reads rows as element pairs on AVX-512 (kBf16Pairs) where head_dim % 32 == 0
      // and no value tile is 3 vectors wide: GQA 3 with head_dim 96 (4- and 2-vector value tiles,
      // 3-row tiles) and GQA 16 (6- and 4-row tiles) take pairs; GQA 8 (8-row tiles of 3 vectors)
      // and head_dim 80 (a 16-element tail) must not
      {RKV_DTYPE_BF16, 16, 12, 4, 96, {100, 17}, {}, 0.f, false},
      {RKV_DTYPE_BF16, 16, 32, 2, 128, {70, 33}, {}, 0.f, false},
      {RKV_DTYPE_BF16, 16, 64, 8, 128, {45, 130}, {}, 0.f, false},
      {RKV_DTYPE_BF16, 16, 32, 2, 80, {70, 33}, {}, 0.f, false},
      // on AVX2 (where avx2_bf16_pairs holds) pairs take 16-element chunks and value tiles of 4 or
      // 2 vectors for every row tile: head_dim 80 and 96 above, GQA 6 (4- and 2-row tiles) with
      // head_dim 48 (4 rows: three 2-vector tiles; 2 rows: a 4- and a 2-vector tile)
      {RKV_DTYPE_BF16, 16, 12, 2, 48, {70, 33}, {}, 0.f, false},
      // e4m3 decode widens rows by table lookup on AVX512-VBMI (kE4M3Lut) where head_dim % 64 == 0
      // and no value tile is 3 vectors wide: GQA 4 with head_dim 128, GQA 2 with 192 and GQA 16
      // take lookups (GQA 3 above too); head_dim 96 and GQA 8 must not
      {RKV_DTYPE_FP8_E4M3, 16, 32, 8, 128, {45, 130}, {}, 0.f, false},
      {RKV_DTYPE_FP8_E4M3, 16, 4, 2, 192, {70, 33}, {}, 0.f, false},
      {RKV_DTYPE_FP8_E4M3, 16, 32, 2, 128, {70, 33}, {}, 0.f, false},
      {RKV_DTYPE_FP8_E4M3, 16, 16, 4, 96, {100, 17}, {}, 0.f, false},
      {RKV_DTYPE_FP8_E4M3, 16, 64, 8, 128, {45, 130}, {}, 0.f, false},
      // sliding windows (window_left = W - 1): smaller than, equal to and larger than the context,
      // on and across page boundaries, with GQA, split-KV, soft cap and bidirectional regions
      {RKV_DTYPE_F32, 16, 8, 2, 64, {0, 1, 15, 16, 17, 100}, {}, 0.f, false, 15},
      {RKV_DTYPE_BF16, 16, 8, 2, 64, {100, 40, 7}, {100, 13, 1}, 0.f, false, 31},
      {RKV_DTYPE_F16, 16, 12, 4, 64, {5000}, {}, 0.f, false, 700},
      {RKV_DTYPE_FP8_E4M3, 32, 4, 4, 64, {90, 300}, {90, 30}, 0.f, true, 20},
      {RKV_DTYPE_FP8_E5M2, 1, 2, 1, 128, {50}, {20}, 10.f, false, 0},
      {RKV_DTYPE_F32, 16, 8, 2, 64, {64, 40}, {64, 40}, 0.f, false, 63},
      {RKV_DTYPE_F16, 16, 8, 8, 64, {300, 64}, {}, 0.f, false, 1000},
  };
  const char* isa = requested_isa();
  for (int threads : {1, 2}) {
    rkv_set_num_threads(threads);
    for (const Case& c : cases) run_case(c, isa, rng);
  }
  nan_propagates(isa);
  nan_propagates_token_major(isa);
  e4m3_every_code_exact(isa);
  masked_nonfinite(isa);
  for (int threads : {1, 2}) {
    rkv_set_num_threads(threads);
    rows_independent_of_call(isa, rng);
  }
  for (int threads : {1, 2}) {
    rkv_set_num_threads(threads);
    window_skips_pages(isa);
  }
  // merge_state: halves of a decode equal the whole is covered in Java; here -inf handling.
  float va[4] = {1, 2, 3, 4}, vb[4] = {5, 6, 7, 8}, vo[4], sa[1] = {-INFINITY}, sb[1] = {-INFINITY}, so[1];
  rkv_merge_state(va, sa, vb, sb, vo, so, 1, 1, 4);
  if (!(std::isinf(so[0]) && so[0] < 0 && vo[0] == 0.f)) {
    std::printf("FAIL merge of two empty states\n");
    g_failures++;
  }
  // window_left below -1 is refused with a message naming it
  {
    std::vector<int> indptr{0, 0}, last{1};
    float qv[64] = {0}, ov[64];
    int rc = rkv_decode_attention(ptr(decode_params(qv, RKV_DTYPE_F32, ov, RKV_DTYPE_F32, nullptr, nullptr, nullptr,
        RKV_DTYPE_F32, 0, 16, 1, 1, 64, indptr.data(), nullptr, last.data(), 1, 0.125f, 0.f, 1.f, 1.f, -2)));
    if (rc != RKV_ERR_INVALID_ARGUMENT || !std::strstr(rkv_last_error(), "window_left")) {
      std::printf("FAIL window_left = -2 not refused (rc=%d: %s)\n", rc, rkv_last_error());
      g_failures++;
    }
  }
  // a NULL params struct is refused with a code, never read; destroying a NULL plan is a no-op
  {
    bool ok = rkv_decode_attention(nullptr) == RKV_ERR_INVALID_ARGUMENT &&
              std::strstr(rkv_last_error(), "params") != nullptr &&
              rkv_append_prefill_attention(nullptr) == RKV_ERR_INVALID_ARGUMENT &&
              rkv_decode_plan_destroy(nullptr) == RKV_OK;
    rkv_decode_plan* plan = nullptr;
    ok = ok && rkv_decode_plan_create(&plan) == RKV_OK && rkv_decode_attention_run(plan, nullptr) == RKV_ERR_INVALID_ARGUMENT &&
         rkv_decode_plan_destroy(plan) == RKV_OK;
    if (!ok) {
      std::printf("FAIL NULL params not refused (%s)\n", rkv_last_error());
      g_failures++;
    }
  }
  const char* pairs_on = "avx2_bf16_pairs=on";
  std::printf("%d failures (%s, %s, decode groups of %s tokens)\n", g_failures, isa,
              std::strstr(rkv_build_info(), pairs_on) ? "AVX2 bf16 pairs" : "no AVX2 bf16 pairs",
              std::strstr(rkv_build_info(), "decode_group=8") ? "8+" : "4+");
  if (g_failures != 0) return 1;
  int failed = rerun_lower_isas(argv[0], true);
  // AVX2 decode with the other choices than this CPU's of bf16 element pairs (avx2_bf16_pairs)
  // and of the decode groups' least token count (decode_groups_of_8: the f32 8 x 128 cases)
  if (!std::getenv("RADIXKV_ISA") && !std::getenv("RADIXKV_AVX2_BF16_PAIRS") && !std::getenv("RADIXKV_DECODE_GROUP_8") &&
      !rerun_with(argv[0], "RADIXKV_ISA=avx2 " + other_choice(rkv_build_info(), pairs_on, "RADIXKV_AVX2_BF16_PAIRS") +
                               " " + other_choice(rkv_build_info(), "decode_group=8", "RADIXKV_DECODE_GROUP_8")))
    failed = 1;
  return failed;
}
