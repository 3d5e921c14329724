// libradixkv's vectorized conversion, scatter and page copy against the scalar RKV_HD
// reference (rkv_kv.h, compiled into this test), plus the native argument checks: every
// rejected call returns RKV_ERR_INVALID_ARGUMENT with a message and writes nothing.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <algorithm>
#include <random>
#include <utility>
#include <vector>

#include "isa_rerun.h"
#include "radixkv.h"
#include "rkv_kv.h"
#include "rkv_test.h"

namespace {



const char* kNames[] = {"f32", "f16", "bf16", "e4m3", "e5m2"};
int size_of(int d) { return rkv::dtype_bytes(d); }

std::vector<uint8_t> random_bytes(size_t n, std::mt19937_64& rng) {
  std::vector<uint8_t> b(n);
  for (auto& x : b) x = (uint8_t)rng();
  return b;
}

// Source elements: half random bit patterns (NaNs, infinities, subnormals included), half
// moderate finite values so every rounding path is exercised.
std::vector<uint8_t> random_elements(int dtype, int64_t n, std::mt19937_64& rng) {
  std::vector<uint8_t> b = random_bytes((size_t)(n * size_of(dtype)), rng);
  std::normal_distribution<float> nd(0.0f, 30.0f);
  for (int64_t i = 0; i < n; i += 2) rkv::store_from_float(b.data(), i, dtype, nd(rng));
  return b;
}

void test_convert_all_pairs() {
  std::mt19937_64 rng(7);
  for (int sd = 0; sd < 5; ++sd)
    for (int dd = 0; dd < 5; ++dd)
      for (int64_t n : {1, 15, 16, 33, 48, 80, 4099, 200003}) {
        bool fp8 = rkv::is_fp8(sd) || rkv::is_fp8(dd);
        for (float scale : {1.0f, 0.37f, 4.0f}) {
          if (!fp8 && scale != 1.0f) continue;
          std::vector<uint8_t> src = random_elements(sd, n, rng);
          // NaNs of both signs, infinities and a huge value in every 16-lane block (the vector
          // loops' tails included), which random bit patterns seldom put there
          const float special[] = {NAN, -NAN, INFINITY, -INFINITY, 1e30f, -1e30f};
          for (int64_t i = 3; i < n; i += 7) rkv::store_from_float(src.data(), i, sd, special[(i / 7) % 6]);
          std::vector<uint8_t> got((size_t)(n * size_of(dd)), 0xAB), want(got.size());
          int rc = rkv_convert(src.data(), sd, got.data(), dd, n, scale);
          EXPECT(rc == RKV_OK, "rkv_convert %s->%s: %s", kNames[sd], kNames[dd], rkv_last_error());
          int mode = rkv::scale_mode(sd, dd);
          for (int64_t i = 0; i < n; ++i) rkv::convert_element(src.data(), sd, i, want.data(), dd, i, mode, scale);
          int64_t bad = -1;
          for (int64_t i = 0; i < n && bad < 0; ++i)
            if (std::memcmp(&got[i * size_of(dd)], &want[i * size_of(dd)], size_of(dd))) bad = i;
          EXPECT(bad < 0, "rkv_convert %s->%s n=%lld scale=%g differs from the scalar reference at %lld", kNames[sd],
                 kNames[dd], (long long)n, (double)scale, (long long)bad);
        }
      }
}

// Every bf16 bit pattern into e4m3 and e5m2, at scale 1 (the AVX-512 and AVX2 16-bit-lane
// routes, which random patterns cover only in part) and at a power-of-two scale (the f32 route), against the
// scalar reference.
void test_bf16_to_fp8_every_pattern() {
  std::vector<uint16_t> src(65536);
  for (int i = 0; i < 65536; ++i) src[i] = (uint16_t)i;
  for (int dd : {RKV_DTYPE_FP8_E4M3, RKV_DTYPE_FP8_E5M2})
    for (float scale : {1.0f, 2.0f}) {
      std::vector<uint8_t> got(src.size(), 0xAB), want(src.size());
      int rc = rkv_convert(src.data(), RKV_DTYPE_BF16, got.data(), dd, (int64_t)src.size(), scale);
      EXPECT(rc == RKV_OK, "rkv_convert bf16->%s: %s", kNames[dd], rkv_last_error());
      int mode = rkv::scale_mode(RKV_DTYPE_BF16, dd);
      for (size_t i = 0; i < src.size(); ++i)
        rkv::convert_element(src.data(), RKV_DTYPE_BF16, (int64_t)i, want.data(), dd, (int64_t)i, mode, scale);
      int64_t bad = -1;
      for (size_t i = 0; i < src.size() && bad < 0; ++i)
        if (got[i] != want[i]) bad = (int64_t)i;
      EXPECT(bad < 0, "rkv_convert bf16->%s scale=%g: bf16 0x%04llx gave 0x%02x, the reference 0x%02x", kNames[dd],
             (double)scale, (long long)bad, bad < 0 ? 0 : got[bad], bad < 0 ? 0 : want[bad]);
    }
}

void test_reshape_and_cache() {
  std::mt19937_64 rng(11);
  const int H = 3, D = 80, P = 16;
  const int64_t pages = 7, T = 40, row = H * D;
  for (int sd : {RKV_DTYPE_F32, RKV_DTYPE_F16, RKV_DTYPE_BF16})
    for (int cd = 0; cd < 5; ++cd) {
      float ks = rkv::is_fp8(cd) ? 0.5f : 1.0f, vs = rkv::is_fp8(cd) ? 0.3f : 1.0f;
      std::vector<uint8_t> k = random_elements(sd, T * row, rng), v = random_elements(sd, T * row, rng);
      std::vector<int64_t> slots(T);
      std::vector<int64_t> perm(pages * P);
      for (int64_t i = 0; i < pages * P; ++i) perm[i] = i;
      std::shuffle(perm.begin(), perm.end(), rng);
      for (int64_t t = 0; t < T; ++t) slots[t] = t % 5 == 3 ? -1 : perm[t];
      size_t pool = (size_t)(pages * P * row * size_of(cd));
      std::vector<uint8_t> kc = random_bytes(pool, rng), vc = random_bytes(pool, rng);
      std::vector<uint8_t> kw = kc, vw = vc;
      int mode = rkv::scale_mode(sd, cd);
      for (int64_t t = 0; t < T; ++t) {
        if (slots[t] < 0) continue;
        for (int64_t e = 0; e < row; ++e) {
          int64_t dst = rkv::slot_row_element(slots[t], row) + e;
          rkv::convert_element(k.data(), sd, t * row + e, kw.data(), cd, dst, mode, ks);
          rkv::convert_element(v.data(), sd, t * row + e, vw.data(), cd, dst, mode, vs);
        }
      }
      int rc = rkv_reshape_and_cache(k.data(), v.data(), sd, slots.data(), T, H, D, kc.data(), vc.data(), cd, pages, P,
                                     ks, vs);
      EXPECT(rc == RKV_OK, "reshape_and_cache %s->%s: %s", kNames[sd], kNames[cd], rkv_last_error());
      EXPECT(kc == kw && vc == vw, "reshape_and_cache %s->%s differs from the scalar reference", kNames[sd], kNames[cd]);

      // A slot out of range anywhere: error naming it, nothing written.
      std::vector<int64_t> bad = slots;
      bad[T - 2] = pages * P;
      std::vector<uint8_t> kb = kc, vb = vc;
      rc = rkv_reshape_and_cache(k.data(), v.data(), sd, bad.data(), T, H, D, kc.data(), vc.data(), cd, pages, P, ks, vs);
      EXPECT(rc == RKV_ERR_INVALID_ARGUMENT && std::strstr(rkv_last_error(), "slot_mapping[38] = 112"),
             "bad slot: rc=%d msg=%s", rc, rkv_last_error());
      EXPECT(kc == kb && vc == vb, "a rejected scatter wrote to the cache");
    }
  std::vector<float> x(row);
  std::vector<int64_t> s1 = {0};
  std::vector<float> c(P * row);
  EXPECT(rkv_reshape_and_cache(x.data(), x.data(), RKV_DTYPE_FP8_E4M3, s1.data(), 1, H, D, c.data(), c.data(),
                               RKV_DTYPE_F32, 1, P, 1, 1) == RKV_ERR_INVALID_ARGUMENT, "fp8 source accepted");
  EXPECT(rkv_reshape_and_cache(x.data(), x.data(), RKV_DTYPE_F32, s1.data(), 1, H, D, c.data(), c.data(), 9, 1, P, 1, 1) ==
             RKV_ERR_INVALID_ARGUMENT, "unknown cache dtype accepted");
  EXPECT(rkv_reshape_and_cache(nullptr, x.data(), RKV_DTYPE_F32, s1.data(), 1, H, D, c.data(), c.data(), RKV_DTYPE_F32,
                               1, P, 1, 1) == RKV_ERR_INVALID_ARGUMENT, "NULL k accepted");
  EXPECT(rkv_reshape_and_cache(x.data(), x.data(), RKV_DTYPE_F32, s1.data(), 1, H, D, c.data(), c.data(),
                               RKV_DTYPE_FP8_E4M3, 1, P, 0.0f, 1) == RKV_ERR_INVALID_ARGUMENT, "scale 0 accepted");
  EXPECT(rkv_reshape_and_cache(x.data(), x.data(), RKV_DTYPE_F32, s1.data(), 1, H, D, c.data(), c.data(), RKV_DTYPE_F32,
                               1, P, 2.0f, 1) == RKV_ERR_INVALID_ARGUMENT, "scale 2 accepted for an f32 cache");
}

// Calls large enough to stream their output (non-temporal stores above 8 MiB written):
// rows that are not multiples of 32 bytes, padding slots, conversions through the bounce
// buffer and plain copies, all against the scalar reference.
void test_streaming() {
  std::mt19937_64 rng(13);
  const int H = 5, D = 100, P = 16;
  const int64_t T = 9000, pages = T / P + 3, row = H * D;
  const int pairs[][2] = {{RKV_DTYPE_BF16, RKV_DTYPE_BF16}, {RKV_DTYPE_BF16, RKV_DTYPE_FP8_E4M3},
                          {RKV_DTYPE_F32, RKV_DTYPE_F16}};
  for (auto& pr : pairs) {
    const int sd = pr[0], cd = pr[1];
    const float ks = rkv::is_fp8(cd) ? 0.05f : 1.0f, vs = rkv::is_fp8(cd) ? 0.3f : 1.0f;
    std::vector<uint8_t> k = random_elements(sd, T * row, rng), v = random_elements(sd, T * row, rng);
    std::vector<int64_t> perm(pages * P);
    for (int64_t i = 0; i < pages * P; ++i) perm[i] = i;
    std::shuffle(perm.begin(), perm.end(), rng);
    std::vector<int64_t> slots(T);
    for (int64_t t = 0; t < T; ++t) slots[t] = t % 97 == 5 ? -1 : perm[t];
    size_t pool = (size_t)(pages * P * row * size_of(cd));
    std::vector<uint8_t> kc = random_bytes(pool, rng), vc = random_bytes(pool, rng);
    std::vector<uint8_t> kw = kc, vw = vc;
    const int mode = rkv::scale_mode(sd, cd);
    for (int64_t t = 0; t < T; ++t) {
      if (slots[t] < 0) continue;
      for (int64_t e = 0; e < row; ++e) {
        int64_t dst = rkv::slot_row_element(slots[t], row) + e;
        rkv::convert_element(k.data(), sd, t * row + e, kw.data(), cd, dst, mode, ks);
        rkv::convert_element(v.data(), sd, t * row + e, vw.data(), cd, dst, mode, vs);
      }
    }
    int rc = rkv_reshape_and_cache(k.data(), v.data(), sd, slots.data(), T, H, D, kc.data(), vc.data(), cd, pages, P,
                                   ks, vs);
    EXPECT(rc == RKV_OK, "streaming reshape_and_cache %s->%s: %s", kNames[sd], kNames[cd], rkv_last_error());
    EXPECT(kc == kw && vc == vw, "streaming reshape_and_cache %s->%s differs from the scalar reference", kNames[sd],
           kNames[cd]);
  }
  for (auto& pr : {std::pair<int, int64_t>{RKV_DTYPE_FP8_E4M3, (int64_t{9} << 20) + 7},
                   std::pair<int, int64_t>{RKV_DTYPE_F32, (int64_t{5} << 20) / 2 + 3}}) {
    const int dd = pr.first;
    const int64_t n = pr.second;
    const float scale = rkv::is_fp8(dd) ? 0.37f : 1.0f;
    std::vector<uint8_t> src = random_elements(RKV_DTYPE_F32, n, rng);
    std::vector<uint8_t> got((size_t)(n * size_of(dd)), 0xAB), want(got.size());
    int rc = rkv_convert(src.data(), RKV_DTYPE_F32, got.data(), dd, n, scale);
    EXPECT(rc == RKV_OK, "streaming rkv_convert f32->%s: %s", kNames[dd], rkv_last_error());
    const int mode = rkv::scale_mode(RKV_DTYPE_F32, dd);
    for (int64_t i = 0; i < n; ++i) rkv::convert_element(src.data(), RKV_DTYPE_F32, i, want.data(), dd, i, mode, scale);
    EXPECT(got == want, "streaming rkv_convert f32->%s n=%lld differs from the scalar reference", kNames[dd],
           (long long)n);
  }
}

void test_copy_blocks() {
  std::mt19937_64 rng(5);
  const int L = 3;
  const int64_t pages = 9, pb = 4096 + 64;
  std::vector<std::vector<uint8_t>> k(L), v(L);
  std::vector<void*> kp(L), vp(L);
  for (int l = 0; l < L; ++l) {
    k[l] = random_bytes(pages * pb, rng);
    v[l] = random_bytes(pages * pb, rng);
    kp[l] = k[l].data();
    vp[l] = v[l].data();
  }
  auto k0 = k, v0 = v;
  std::vector<int64_t> map = {0, 5, 2, 3, 8, 1};
  EXPECT(rkv_copy_blocks(kp.data(), vp.data(), L, map.data(), 3, pb, pages) == RKV_OK, "copy_blocks: %s", rkv_last_error());
  for (int l = 0; l < L; ++l)
    for (int64_t p = 0; p < pages; ++p) {
      int64_t from = p == 5 ? 0 : p == 3 ? 2 : p == 1 ? 8 : p;
      EXPECT(!std::memcmp(&k[l][p * pb], &k0[l][from * pb], pb) && !std::memcmp(&v[l][p * pb], &v0[l][from * pb], pb),
             "copy_blocks layer %d page %lld", l, (long long)p);
    }
  auto k1 = k, v1 = v;
  for (auto bad : {std::vector<int64_t>{0, 5, 1, 9}, std::vector<int64_t>{0, 5, 1, 5}, std::vector<int64_t>{0, 5, 5, 1},
                   std::vector<int64_t>{0, 5, -1, 2}}) {
    int rc = rkv_copy_blocks(kp.data(), vp.data(), L, bad.data(), 2, pb, pages);
    EXPECT(rc == RKV_ERR_INVALID_ARGUMENT, "bad block mapping accepted (%lld %lld)", (long long)bad[2], (long long)bad[3]);
    EXPECT(k == k1 && v == v1, "a rejected copy_blocks wrote");
  }
}

}  // namespace

int main(int, char** argv) {
  test_convert_all_pairs();
  test_bf16_to_fp8_every_pattern();
  test_reshape_and_cache();
  test_streaming();
  test_copy_blocks();
  if (g_failures) {
    std::printf("kv_cache_test: %d g_failures\n", g_failures);
    return 1;
  }
  std::printf("kv_cache_test: OK (%s)\n", requested_isa());
  return rerun_lower_isas(argv[0]);
}
