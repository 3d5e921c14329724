// Slot and element arithmetic of the paged KV cache, shared by the CPU kernels
// (kv_cache.cpp, convert.cpp) and the CUDA kernels (kv_cache.cu, convert.cu) through
// RKV_HD (__host__ __device__) inline helpers, so both compute exactly the same thing.
//
// Pool layout per layer: [num_pages, page_size, num_kv_heads, head_dim] (FlashInfer NHD).
// A token's slot is page * page_size + offset; its row (all heads) starts at element
// slot * num_kv_heads * head_dim, because a page holds page_size consecutive rows.
#pragma once

#include <stdint.h>

#include "rkv_dtype.h"

namespace rkv {

// Page of a (non-negative) slot.
RKV_HD int64_t slot_page(int64_t slot, int32_t page_size) { return slot / page_size; }
// Offset of a (non-negative) slot inside its page.
RKV_HD int32_t slot_offset(int64_t slot, int32_t page_size) { return (int32_t)(slot % page_size); }
// Slot of (page, offset).
RKV_HD int64_t make_slot(int64_t page, int32_t offset, int32_t page_size) { return page * page_size + offset; }
// Negative slots are padding: the token is skipped.
RKV_HD bool slot_is_padding(int64_t slot) { return slot < 0; }
// First element of the slot's row in a pool: rows of one page are consecutive, so this is
// page * (page_size * row) + offset * row = slot * row.
RKV_HD int64_t slot_row_element(int64_t slot, int64_t row_elems) { return slot * row_elems; }

RKV_HD int dtype_bytes(int32_t d) {
  return d == RKV_DTYPE_F32 ? 4 : (d == RKV_DTYPE_F16 || d == RKV_DTYPE_BF16) ? 2 : 1;
}

// How the per-tensor FP8 scale enters a conversion src_dtype -> dst_dtype:
// stored = real / scale when only the destination is FP8, real = stored * scale when only
// the source is FP8, and no arithmetic otherwise (FP8 -> FP8 with equal scales re-encodes
// the stored value: (stored * s) / s is stored exactly in real arithmetic).
enum ScaleMode : int { kScaleNone = 0, kScaleMul = 1, kScaleDiv = 2 };

RKV_HD int scale_mode(int32_t src_dtype, int32_t dst_dtype) {
  bool sf = src_dtype == RKV_DTYPE_FP8_E4M3 || src_dtype == RKV_DTYPE_FP8_E5M2;
  bool df = dst_dtype == RKV_DTYPE_FP8_E4M3 || dst_dtype == RKV_DTYPE_FP8_E5M2;
  if (sf && !df) return kScaleMul;
  if (df && !sf) return kScaleDiv;
  return kScaleNone;
}

RKV_HD float apply_scale(float x, int mode, float scale) {
  return mode == kScaleMul ? x * scale : (mode == kScaleDiv ? x / scale : x);
}

// The reference element conversion: every vectorized path must produce exactly these bits.
// Same dtype (mode is then kScaleNone) copies the bits, NaN payloads included.
RKV_HD void convert_element(const void* src, int32_t src_dtype, int64_t i, void* dst, int32_t dst_dtype,
                            int64_t j, int mode, float scale) {
  if (src_dtype == dst_dtype) {
    switch (dtype_bytes(src_dtype)) {
      case 4: ((uint32_t*)dst)[j] = ((const uint32_t*)src)[i]; return;
      case 2: ((uint16_t*)dst)[j] = ((const uint16_t*)src)[i]; return;
      default: ((uint8_t*)dst)[j] = ((const uint8_t*)src)[i]; return;
    }
  }
  store_from_float(dst, j, dst_dtype, apply_scale(load_as_float(src, i, src_dtype), mode, scale));
}

}  // namespace rkv
