// Scalar conversions between f32 and the cache dtypes (f16, bf16, fp8 e4m3 / e5m2).
// __host__ __device__ (RKV_HD): the CPU kernels, the CUDA kernels and the native tests all
// run exactly this arithmetic. Vectorized CPU paths must agree with these bit for bit.
//
// FP8 encoding follows NVIDIA's cuda_fp8.h (__nv_cvt_float_to_fp8 with __NV_SATFINITE):
// round to nearest even on the exact value, saturate finite overflow (and infinities) to the
// largest finite value, NaN -> NaN (the canonical code 0x7F in both formats, as NVIDIA's).
#pragma once

#include <stdint.h>
#include <string.h>

#include "rkv_common.h"

namespace rkv {

RKV_HD uint32_t f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}

RKV_HD float bits_f32(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

// ---- bf16 ----

RKV_HD float bf16_to_float(uint16_t h) { return bits_f32((uint32_t)h << 16); }

RKV_HD uint16_t float_to_bf16(float f) {
  uint32_t u = f32_bits(f);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return (uint16_t)((u >> 16) | 0x0040u);  // quiet NaN
  u += 0x7FFFu + ((u >> 16) & 1u);                                             // RNE
  return (uint16_t)(u >> 16);
}

// ---- f16 (IEEE binary16) ----

RKV_HD float f16_to_float(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1Fu;
  uint32_t man = h & 0x3FFu;
  if (exp == 0) {
    // zero or subnormal: man * 2^-24, exact in f32
    float v = (float)man * 5.9604644775390625e-08f;
    return bits_f32(f32_bits(v) | sign);
  }
  if (exp == 31) return bits_f32(sign | 0x7F800000u | (man << 13));  // inf / NaN
  return bits_f32(sign | ((exp + 112u) << 23) | (man << 13));
}

RKV_HD uint16_t float_to_f16(float f) {
  uint32_t u = f32_bits(f);
  uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
  uint32_t a = u & 0x7FFFFFFFu;
  if (a > 0x7F800000u) return (uint16_t)(sign | 0x7E00u | ((a >> 13) & 0x3FFu));  // NaN
  if (a >= 0x477FF000u) return (uint16_t)(sign | 0x7C00u);  // >= 65520 rounds to inf
  if (a < 0x38800000u) {
    // result is subnormal (or zero): round a * 2^24 to an integer, RNE
    if (a < 0x33000000u) return sign;  // < 2^-25: rounds to 0 (2^-25 exactly ties to even 0)
    uint32_t e = a >> 23;
    uint32_t m = (a & 0x7FFFFFu) | 0x800000u;
    uint32_t shift = 126u - e;  // value = m * 2^(e-150); want m * 2^(e-150+24) = m >> (126-e)
    uint32_t r = m >> shift;
    uint32_t rem = m & ((1u << shift) - 1u);
    uint32_t half = 1u << (shift - 1u);
    if (rem > half || (rem == half && (r & 1u))) r++;
    return (uint16_t)(sign | r);
  }
  // normal: rebias exponent (127 -> 15) and round the 13 dropped mantissa bits (RNE)
  uint32_t r = a - 0x38000000u;  // exponent - 112
  r += 0xFFFu + ((r >> 13) & 1u);
  return (uint16_t)(sign | (r >> 13));
}

// ---- fp8 ----

// Exact decode of an e4m3 code (finite-only format: S.1111.111 is NaN, no infinities).
RKV_HD float fp8_e4m3_to_float(uint8_t v) {
  uint32_t sign = (uint32_t)(v & 0x80u) << 24;
  uint32_t exp = (v >> 3) & 0xFu;
  uint32_t man = v & 0x7u;
  if (exp == 0xFu && man == 0x7u) return bits_f32(sign | 0x7FC00000u);
  if (exp == 0) {
    float f = (float)man * 0.001953125f;  // man * 2^-9
    return bits_f32(f32_bits(f) | sign);
  }
  return bits_f32(sign | ((exp + 120u) << 23) | (man << 20));
}

RKV_HD float fp8_e5m2_to_float(uint8_t v) {
  uint32_t sign = (uint32_t)(v & 0x80u) << 24;
  uint32_t exp = (v >> 2) & 0x1Fu;
  uint32_t man = v & 0x3u;
  if (exp == 0x1Fu) return bits_f32(sign | 0x7F800000u | (man << 21));  // inf / NaN
  if (exp == 0) {
    float f = (float)man * 1.52587890625e-05f;  // man * 2^-16
    return bits_f32(f32_bits(f) | sign);
  }
  return bits_f32(sign | ((exp + 112u) << 23) | (man << 21));
}

// Generic encoder on the exact f32 value: mbits mantissa bits, bias, the largest finite code
// (without sign) and the f32 bit patterns of the largest finite value + half an ulp
// (overflow threshold) and the smallest normal.
RKV_HD uint8_t fp8_encode(float f, int mbits, int bias, uint8_t max_code, uint32_t overflow_bits,
                          uint32_t min_normal_bits) {
  uint32_t u = f32_bits(f);
  uint8_t sign = (uint8_t)((u >> 24) & 0x80u);
  uint32_t a = u & 0x7FFFFFFFu;
  if (a > 0x7F800000u) {
    // NaN: cuda_fp8.h returns the canonical 0x7F (sign dropped) for every NaN input in
    // both formats (e4m3's only NaN code; a quiet NaN in e5m2).
    return 0x7Fu;
  }
  if (a >= overflow_bits) {
    // ties at max + half ulp round to even: for e4m3 (448 + 16 = 464) the even neighbour is
    // 448; for e5m2 the even neighbour would be 65536 (overflow) -> saturate either way.
    return (uint8_t)(sign | max_code);
  }
  const int drop = 23 - mbits;  // f32 mantissa bits dropped
  if (a >= min_normal_bits) {
    int exp = (int)(a >> 23) - 127 + bias;
    uint32_t man = (a & 0x7FFFFFu) >> drop;
    uint32_t rem = a & ((1u << drop) - 1u);
    uint32_t half = 1u << (drop - 1);
    uint32_t r = ((uint32_t)exp << mbits) | man;
    if (rem > half || (rem == half && (r & 1u))) r++;
    return (uint8_t)(sign | r);
  }
  // subnormal range of the fp8 format (or zero): value / min_subnormal rounded to an integer
  if (a == 0) return sign;
  int e = (int)(a >> 23);  // biased f32 exponent (0 = f32 subnormal: far below fp8 range)
  if (e == 0) return sign;
  uint32_t m = (a & 0x7FFFFFu) | 0x800000u;  // value = m * 2^(e - 150)
  // min fp8 subnormal = 2^(1 - bias - mbits); want m * 2^(e - 150 - (1 - bias - mbits))
  int shift = 150 + 1 - bias - mbits - e;  // right shift amount (>= 24 - mbits here)
  if (shift > 31) return sign;             // far below half the smallest subnormal
  uint32_t r = m >> shift;
  uint32_t rem = m & ((1u << shift) - 1u);
  uint32_t half = 1u << (shift - 1);
  if (rem > half || (rem == half && (r & 1u))) r++;
  return (uint8_t)(sign | r);
}

RKV_HD uint8_t float_to_fp8_e4m3(float f) {
  // max 448 = 0x7E; overflow threshold 464 = 0x43E80000; min normal 2^-6 = 0x3C800000
  return fp8_encode(f, 3, 7, 0x7Eu, 0x43E80000u, 0x3C800000u);
}

RKV_HD uint8_t float_to_fp8_e5m2(float f) {
  // max 57344 = 0x7B; overflow threshold 61440 = 0x47700000; min normal 2^-14 = 0x38800000
  return fp8_encode(f, 2, 15, 0x7Bu, 0x47700000u, 0x38800000u);
}

// ---- generic element access by dtype code ----

RKV_HD float load_as_float(const void* base, int64_t i, int32_t dtype) {
  switch (dtype) {
    case RKV_DTYPE_F32: return ((const float*)base)[i];
    case RKV_DTYPE_F16: return f16_to_float(((const uint16_t*)base)[i]);
    case RKV_DTYPE_BF16: return bf16_to_float(((const uint16_t*)base)[i]);
    case RKV_DTYPE_FP8_E4M3: return fp8_e4m3_to_float(((const uint8_t*)base)[i]);
    default: return fp8_e5m2_to_float(((const uint8_t*)base)[i]);
  }
}

// Stores v (already divided by the fp8 scale where applicable) converted to dtype.
RKV_HD void store_from_float(void* base, int64_t i, int32_t dtype, float v) {
  switch (dtype) {
    case RKV_DTYPE_F32: ((float*)base)[i] = v; break;
    case RKV_DTYPE_F16: ((uint16_t*)base)[i] = float_to_f16(v); break;
    case RKV_DTYPE_BF16: ((uint16_t*)base)[i] = float_to_bf16(v); break;
    case RKV_DTYPE_FP8_E4M3: ((uint8_t*)base)[i] = float_to_fp8_e4m3(v); break;
    default: ((uint8_t*)base)[i] = float_to_fp8_e5m2(v); break;
  }
}

}  // namespace rkv
