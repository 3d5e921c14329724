// CPU row conversion between dtypes (host only): the vectorized core shared by
// rkv_convert, rkv_fp8_quantize/dequantize (convert.cpp) and rkv_reshape_and_cache
// (kv_cache.cpp). Results are bit-identical to rkv::convert_element (rkv_kv.h).
#pragma once

#include <stdint.h>

namespace rkv {

// Converts n elements; the scale is applied as rkv::scale_mode(src, dst) says.
using RowConvertFn = void (*)(const void* src, void* dst, int64_t n, float scale);

struct RowConverter {
  RowConvertFn fn;
  float scale;  // the argument to pass to fn (a reciprocal when a division was made exact)
};

// Picks the fastest implementation for this CPU (AVX-512 when present, else a scalar loop
// over the RKV_HD helpers). Dtypes must be valid; scale > 0 and finite where it is used.
RowConverter row_converter(int32_t src_dtype, int32_t dst_dtype, float scale);

}  // namespace rkv
