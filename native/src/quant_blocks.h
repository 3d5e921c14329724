// ggml's block-quantized weight formats as stored in GGUF files (bit-compatible structs), the
// scalar dequantization of one block (ggml's dequantize_row_* arithmetic, operation for
// operation: the file that includes it for bit-exact output builds with -ffp-contract=off), and
// the 8-bit activation blocks the quantized dot products take (llama.cpp's q8_0 / q8_K idea).
#pragma once

#include <stdint.h>

#include "radixkv.h"
#include "rkv_dtype.h"

namespace rkv {
namespace quant {

struct BlockQ8_0 {
  uint16_t d;  // f16
  int8_t qs[32];
};
struct BlockQ4_0 {
  uint16_t d;
  uint8_t qs[16];  // value j in the low nibble of byte j, j + 16 in its high nibble
};
struct BlockQ5_0 {
  uint16_t d;
  uint8_t qh[4];  // bit 4 of value j: bit j of the little-endian u32
  uint8_t qs[16];
};
struct BlockQ4_K {
  uint16_t d, dmin;
  uint8_t scales[12];  // 8 six-bit scales and 8 six-bit mins (get_scale_min_k4)
  uint8_t qs[128];
};
struct BlockQ6_K {
  uint8_t ql[128];
  uint8_t qh[64];
  int8_t scales[16];
  uint16_t d;
};
static_assert(sizeof(BlockQ8_0) == 34 && sizeof(BlockQ4_0) == 18 && sizeof(BlockQ5_0) == 22, "ggml block sizes");
static_assert(sizeof(BlockQ4_K) == 144 && sizeof(BlockQ6_K) == 210, "ggml k-quant block sizes");

// Values per block and bytes per block of a RKV_QUANT_* format; 0 for an unknown code.
inline int64_t block_values(int32_t fmt) {
  switch (fmt) {
    case RKV_QUANT_Q8_0: case RKV_QUANT_Q4_0: case RKV_QUANT_Q5_0: return 32;
    case RKV_QUANT_Q4_K: case RKV_QUANT_Q6_K: return 256;
    default: return 0;
  }
}
inline int64_t block_bytes(int32_t fmt) {
  switch (fmt) {
    case RKV_QUANT_Q8_0: return 34;
    case RKV_QUANT_Q4_0: return 18;
    case RKV_QUANT_Q5_0: return 22;
    case RKV_QUANT_Q4_K: return 144;
    case RKV_QUANT_Q6_K: return 210;
    default: return 0;
  }
}
inline const char* format_name(int32_t fmt) {
  switch (fmt) {
    case RKV_QUANT_Q8_0: return "q8_0";
    case RKV_QUANT_Q4_0: return "q4_0";
    case RKV_QUANT_Q5_0: return "q5_0";
    case RKV_QUANT_Q4_K: return "q4_k";
    case RKV_QUANT_Q6_K: return "q6_k";
    default: return "unknown";
  }
}

inline float f16(uint16_t h) { return rkv::f16_to_float(h); }

// Sub-block j's 6-bit scale and min of a Q4_K block (ggml's get_scale_min_k4).
inline void scale_min_k4(int j, const uint8_t* q, uint8_t* sc, uint8_t* m) {
  if (j < 4) {
    *sc = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *sc = static_cast<uint8_t>((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
    *m = static_cast<uint8_t>((q[j + 4] >> 4) | ((q[j - 0] >> 6) << 4));
  }
}

// The four 6-bit values (0..63, before Q6_K's -32) of position l < 32 of one 128-value half of a
// Q6_K block: elements l, l + 32, l + 64 and l + 96 of the half (ggml's dequantize_row_q6_K order).
inline void q6_k_values(const uint8_t* ql, const uint8_t* qh, int l, int q[4]) {
  q[0] = (ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4);
  q[1] = (ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4);
  q[2] = (ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4);
  q[3] = (ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4);
}

// The 5-bit values (0..31, before Q5_0's -16) of elements j and j + 16 (j < 16) of a Q5_0 block.
inline void q5_0_values(const uint8_t* qs, uint32_t qh, int j, int* lo, int* hi) {
  *lo = (qs[j] & 0x0F) | static_cast<int>(((qh >> j) & 1) << 4);
  *hi = (qs[j] >> 4) | static_cast<int>(((qh >> (j + 16)) & 1) << 4);
}

// Activations quantized for the integer dot products, per row of x:
//   32-value formats: d[b] = max|x| / 127 over block b, qs = round(x / d) (C's roundf), d8 the
//                     same d eight times per block (a 512-bit load holds two blocks' scales
//                     lane by lane), and corr 8 copies of -(offset / 8) * sum(qs) per block: the
//                     weights' offset (8 for Q4_0, 16 for Q5_0; 128 for Q8_0 taken as unsigned
//                     w + 128, 0 for Q8_0 taken as |w| and sign(x, w)) spread over a block's 8 lanes;
//   256-value formats (llama.cpp's q8_K): d[b] = max|x| / 127 over the 256 values (computed as
//                     ggml's quantize_row_q8_K does), qs as above, sums of each 16 and each 32.
struct ActRow {
  int8_t* qs;     // k values
  float* d;       // k / block values
  float* d8;      // k / 4 (32-value formats)
  int32_t* corr;  // k / 4 (32-value formats)
  int16_t* s16;   // k / 16 (256-value formats)
  int16_t* s32;   // k / 32 (256-value formats)
};

}  // namespace quant
}  // namespace rkv
