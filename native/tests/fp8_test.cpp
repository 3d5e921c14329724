// FP8 bit-exactness against NVIDIA's own conversions (cuda_fp8.h, whose conversion functions
// also run on the host): all 256 codes of e4m3 and e5m2 decode to the same values, and
// millions of floats (random bit patterns, the fp8 range densely, exact ties, edge cases)
// encode to the same codes as __nv_cvt_float_to_fp8(x, __NV_SATFINITE, fmt), both through
// libradixkv's vectorized rkv_fp8_quantize / rkv_fp8_dequantize and through the scalar
// RKV_HD helpers of rkv_dtype.h. Without cuda_fp8.h it exits with 77, which ctest reports as
// skipped (SKIP_RETURN_CODE in native/tests/CMakeLists.txt).
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <random>
#include <vector>

#include "isa_rerun.h"
#include "radixkv.h"
#include "rkv_dtype.h"

#ifndef RKV_HAVE_CUDA_FP8_H
int main() {
  std::printf("fp8_test: skipped: cuda_fp8.h not found, bit-exactness against NVIDIA's conversions not checked\n");
  return 77;
}
#else
#include <cuda_fp8.h>
#include <immintrin.h>

namespace {

int g_failures = 0;

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

void fail(const char* what, float x, unsigned got, unsigned want) {
  if (++g_failures <= 20)
    std::printf("FAIL %s: x=%a (0x%08x) got 0x%02x want 0x%02x\n", what, (double)x, bits(x), got, want);
}

struct Format {
  const char* name;
  int32_t dtype;
  __nv_fp8_interpretation_t nv;
  float (*decode)(uint8_t);
  uint8_t (*encode)(float);
};

// NVIDIA's decode: fp8 -> half (cuda_fp8.h) -> float (the CPU's F16C instruction).
float nv_decode(uint8_t c, __nv_fp8_interpretation_t f) {
  __half_raw h = __nv_cvt_fp8_to_halfraw((__nv_fp8_storage_t)c, f);
  return _cvtsh_ss(h.x);
}

uint8_t nv_encode(float x, __nv_fp8_interpretation_t f) {
  return (uint8_t)__nv_cvt_float_to_fp8(x, __NV_SATFINITE, f);
}

bool same_value(float a, float b) { return (std::isnan(a) && std::isnan(b)) || bits(a) == bits(b); }

void check_decode(const Format& fmt) {
  std::vector<uint8_t> codes(256);
  std::vector<float> lib(256);
  for (int c = 0; c < 256; ++c) codes[c] = (uint8_t)c;
  if (rkv_fp8_dequantize(codes.data(), lib.data(), 256, fmt.dtype, 1.0f) != RKV_OK) {
    std::printf("FAIL rkv_fp8_dequantize: %s\n", rkv_last_error());
    ++g_failures;
    return;
  }
  for (int c = 0; c < 256; ++c) {
    float want = nv_decode((uint8_t)c, fmt.nv);
    if (!same_value(fmt.decode((uint8_t)c), want)) fail("scalar decode", want, c, c);
    if (!same_value(lib[c], want)) fail("rkv_fp8_dequantize", want, c, c);
  }
}

std::vector<float> inputs(const Format& fmt, size_t random_count) {
  std::vector<float> v;
  const float edge[] = {0.0f, -0.0f, 1.0f, -1.0f, 448.0f, -448.0f, 464.0f, -464.0f, 463.99997f, 464.00003f,
                        480.0f, 57344.0f, -57344.0f, 61440.0f, -61440.0f, 61439.996f, 61440.004f, 65536.0f,
                        1e30f, -1e30f, INFINITY, -INFINITY, NAN, -NAN, from_bits(0x7F800001u), from_bits(0xFFC00001u),
                        from_bits(1u), from_bits(0x807FFFFFu), std::ldexp(1.0f, -6), std::ldexp(1.0f, -7),
                        std::ldexp(1.0f, -9), std::ldexp(1.0f, -10), std::ldexp(1.5f, -10), std::ldexp(1.0f, -14),
                        std::ldexp(1.0f, -16), std::ldexp(1.0f, -17), std::ldexp(1.5f, -17), std::ldexp(3.0f, -18),
                        FLT_MAX, -FLT_MAX, FLT_MIN};
  for (float e : edge) v.push_back(e);
  // Exact midpoints between neighbouring codes (ties) and their float neighbours.
  for (int c = 0; c < 127; ++c) {
    float a = fmt.decode((uint8_t)c), b = fmt.decode((uint8_t)(c + 1));
    if (std::isnan(a) || std::isnan(b) || std::isinf(b)) continue;
    float m = (a + b) * 0.5f;  // exact: neighbours differ in the last fp8 bit only
    for (float x : {m, std::nextafter(m, 0.0f), std::nextafter(m, INFINITY), a, b}) {
      v.push_back(x);
      v.push_back(-x);
    }
  }
  std::mt19937_64 rng(12345 + fmt.dtype);
  for (size_t i = 0; i < random_count / 2; ++i) v.push_back(from_bits((uint32_t)rng()));  // any float
  std::uniform_real_distribution<float> frac(1.0f, 2.0f);
  std::uniform_int_distribution<int> ex(-28, 18);
  for (size_t i = 0; i < random_count / 2; ++i) {  // dense over the fp8 range and around it
    float x = std::ldexp(frac(rng), ex(rng));
    v.push_back(rng() & 1 ? -x : x);
  }
  return v;
}

// Inputs whose quotient by `scale` lands on or next to the format's code midpoints, its largest
// code and the float overflow and underflow thresholds: where any division other than a correctly
// rounded x / s (a reciprocal, with or without a correction step) shows a wrong code.
std::vector<float> scaled_edges(const Format& fmt, float scale) {
  std::vector<float> v;
  auto around = [&](float q) {
    float x = q * scale;
    for (int k = 0; k < 3; ++k) {
      v.push_back(x);
      v.push_back(-x);
      x = std::nextafter(x, INFINITY);
    }
    x = q * scale;
    for (int k = 0; k < 2; ++k) {
      x = std::nextafter(x, 0.0f);
      v.push_back(x);
      v.push_back(-x);
    }
  };
  for (int c = 0; c < 127; ++c) {
    float a = fmt.decode((uint8_t)c), b = fmt.decode((uint8_t)(c + 1));
    if (std::isnan(a) || std::isnan(b) || std::isinf(b)) continue;
    around((a + b) * 0.5f);
    around(b);
  }
  around(FLT_MAX);
  around(FLT_MIN);
  return v;
}

void check_encode(const Format& fmt, size_t random_count) {
  const std::vector<float> base = inputs(fmt, random_count);
  size_t count = 0;
  // powers of two (divided as multiplies: exact) and divided scales, over the whole exponent range
  // (FLT_MAX: 1 / s is subnormal)
  const float scales[] = {1.0f,  2.0f, 1.0f / 64.0f, 0.37f,    3.5f,     0.05f,
                          1e-8f, 1e8f, 0x1.8p-64f,   0x1p-70f, 0x1p70f,  FLT_MAX};
  for (float scale : scales) {
    std::vector<float> x = base;
    const std::vector<float> edges = scaled_edges(fmt, scale);
    x.insert(x.end(), edges.begin(), edges.end());
    const size_t n = x.size();
    count += n;
    std::vector<uint8_t> lib(n);
    if (rkv_fp8_quantize(x.data(), lib.data(), (int64_t)n, fmt.dtype, scale) != RKV_OK) {
      std::printf("FAIL rkv_fp8_quantize: %s\n", rkv_last_error());
      ++g_failures;
      return;
    }
    for (size_t i = 0; i < n; ++i) {
      uint8_t want = nv_encode(x[i] / scale, fmt.nv);
      if (lib[i] != want) fail(fmt.name, x[i], lib[i], want);
      if (scale == 1.0f) {
        uint8_t s = fmt.encode(x[i]);
        if (s != want) fail("scalar encode", x[i], s, want);
      }
    }
  }
  std::printf("fp8_test: %s: %zu floats encoded over %zu scales, 256 codes decoded\n", fmt.name, count,
              sizeof scales / sizeof scales[0]);
}


}  // namespace

int main(int, char** argv) {
  const Format fmts[] = {
      {"e4m3", RKV_DTYPE_FP8_E4M3, __NV_E4M3, rkv::fp8_e4m3_to_float, rkv::float_to_fp8_e4m3},
      {"e5m2", RKV_DTYPE_FP8_E5M2, __NV_E5M2, rkv::fp8_e5m2_to_float, rkv::float_to_fp8_e5m2},
  };
  for (const Format& f : fmts) {
    check_decode(f);
    check_encode(f, 1u << 21);
  }
  if (g_failures) {
    std::printf("fp8_test: %d failures\n", g_failures);
    return 1;
  }
  std::printf("fp8_test: OK (bit-exact with cuda_fp8.h, %s)\n", requested_isa());
  return rerun_lower_isas(argv[0]);
}
#endif
