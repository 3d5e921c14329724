// Scalar dequantization of ggml blocks, bit-exact with ggml's dequantize_row_* (quant_dequant.cpp
// builds with -ffp-contract=off so that no multiply-add is fused where ggml's are not).
#pragma once

#include <stdint.h>

namespace rkv {
namespace quant {

// out[0, k) = the values of one row of k values (whole blocks of fmt, a RKV_QUANT_* code).
void dequantize_row(int32_t fmt, const void* row, int64_t k, float* out);

// The integer dot products rkv_quant_linear's decode path runs here: "avx512_vnni", "avx2" or "scalar".
const char* dot_path_name();

}  // namespace quant
}  // namespace rkv
