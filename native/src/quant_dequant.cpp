// Dequantization of ggml's block formats (quant_blocks.h), ggml's arithmetic operation for
// operation, and the row gather of rkv_quant_dequantize_rows (a quantized embedding table's
// lookup). Built with -ffp-contract=off (CMakeLists.txt): Q4_K's d*sc*q - dmin*m must not become
// one fused multiply-add, or rows would differ from ggml's and from the Java codecs in the last bit.
#include "quant_dequant.h"

#include <cstring>
#include <limits>

#include "quant_blocks.h"
#include "rkv_common.h"
#include "rkv_parallel.h"

namespace rkv {
namespace quant {

namespace {

void q8_0(const BlockQ8_0* b, float* y) {
  const float d = f16(b->d);
  for (int j = 0; j < 32; j++) y[j] = b->qs[j] * d;
}

void q4_0(const BlockQ4_0* b, float* y) {
  const float d = f16(b->d);
  for (int j = 0; j < 16; j++) {
    y[j] = ((b->qs[j] & 0x0F) - 8) * d;
    y[j + 16] = ((b->qs[j] >> 4) - 8) * d;
  }
}

void q5_0(const BlockQ5_0* b, float* y) {
  const float d = f16(b->d);
  uint32_t qh;
  std::memcpy(&qh, b->qh, 4);
  for (int j = 0; j < 16; j++) {
    int lo, hi;
    q5_0_values(b->qs, qh, j, &lo, &hi);
    y[j] = (lo - 16) * d;
    y[j + 16] = (hi - 16) * d;
  }
}

void q4_k(const BlockQ4_K* b, float* y) {
  const float d = f16(b->d);
  const float dmin = f16(b->dmin);
  const uint8_t* q = b->qs;
  for (int j = 0, is = 0; j < 256; j += 64, is += 2, q += 32) {
    uint8_t sc, m;
    scale_min_k4(is, b->scales, &sc, &m);
    const float d1 = d * sc, m1 = dmin * m;
    scale_min_k4(is + 1, b->scales, &sc, &m);
    const float d2 = d * sc, m2 = dmin * m;
    for (int l = 0; l < 32; l++) y[j + l] = d1 * (q[l] & 0xF) - m1;
    for (int l = 0; l < 32; l++) y[j + 32 + l] = d2 * (q[l] >> 4) - m2;
  }
}

void q6_k(const BlockQ6_K* b, float* y) {
  const float d = f16(b->d);
  const uint8_t* ql = b->ql;
  const uint8_t* qh = b->qh;
  const int8_t* sc = b->scales;
  for (int n = 0; n < 256; n += 128, ql += 64, qh += 32, sc += 8) {
    for (int l = 0; l < 32; l++) {
      const int is = l / 16;
      int q[4];
      q6_k_values(ql, qh, l, q);
      y[n + l] = d * sc[is] * (q[0] - 32);
      y[n + l + 32] = d * sc[is + 2] * (q[1] - 32);
      y[n + l + 64] = d * sc[is + 4] * (q[2] - 32);
      y[n + l + 96] = d * sc[is + 6] * (q[3] - 32);
    }
  }
}

}  // namespace

void dequantize_row(int32_t fmt, const void* row, int64_t k, float* out) {
  const auto* p = static_cast<const uint8_t*>(row);
  const int64_t bv = block_values(fmt), bb = block_bytes(fmt);
  for (int64_t b = 0; b < k / bv; b++, p += bb, out += bv) {
    switch (fmt) {
      case RKV_QUANT_Q8_0: q8_0(reinterpret_cast<const BlockQ8_0*>(p), out); break;
      case RKV_QUANT_Q4_0: q4_0(reinterpret_cast<const BlockQ4_0*>(p), out); break;
      case RKV_QUANT_Q5_0: q5_0(reinterpret_cast<const BlockQ5_0*>(p), out); break;
      case RKV_QUANT_Q4_K: q4_k(reinterpret_cast<const BlockQ4_K*>(p), out); break;
      default: q6_k(reinterpret_cast<const BlockQ6_K*>(p), out); break;
    }
  }
}

}  // namespace quant
}  // namespace rkv

extern "C" {

RKV_API int64_t rkv_quant_row_bytes(int32_t format, int64_t k) {
  const int64_t bv = rkv::quant::block_values(format);
  if (bv == 0 || k < 0 || k % bv != 0) return -1;
  return k / bv * rkv::quant::block_bytes(format);
}

RKV_API int rkv_quant_dequantize_rows(const rkv_quant_rows_params* p) {
  RKV_CHECK_PTR(p);
  const int64_t row_bytes = rkv_quant_row_bytes(p->format, p->k);
  RKV_CHECK(row_bytes >= 0, "rkv_quant_dequantize_rows: format %d with rows of %lld values is not a whole number "
            "of blocks of a known format", p->format, static_cast<long long>(p->k));
  RKV_CHECK(p->rows >= 0 && p->n >= 0, "rkv_quant_dequantize_rows: negative rows %lld or n %lld",
            static_cast<long long>(p->rows), static_cast<long long>(p->n));
  RKV_CHECK(p->k == 0 || p->n <= std::numeric_limits<int64_t>::max() / 4 / p->k,
            "rkv_quant_dequantize_rows: n x k overflows");
  if (p->n == 0 || p->k == 0) return RKV_OK;
  RKV_CHECK_PTR(p->w);
  RKV_CHECK_PTR(p->out);
  if (p->ids != nullptr) {
    for (int64_t i = 0; i < p->n; i++)
      RKV_CHECK(p->ids[i] >= 0 && p->ids[i] < p->rows, "rkv_quant_dequantize_rows: id %d at index %lld is outside "
                "[0, %lld)", p->ids[i], static_cast<long long>(i), static_cast<long long>(p->rows));
  } else {
    RKV_CHECK(p->n <= p->rows, "rkv_quant_dequantize_rows: %lld rows asked of %lld", static_cast<long long>(p->n),
              static_cast<long long>(p->rows));
  }
  const auto* w = static_cast<const uint8_t*>(p->w);
  rkv::parallel_for(p->n, p->n * p->k >= (int64_t{1} << 16), [&](int64_t i) {
    const int64_t row = p->ids != nullptr ? p->ids[i] : i;
    rkv::quant::dequantize_row(p->format, w + row * row_bytes, p->k, p->out + i * p->k);
  });
  return RKV_OK;
}

}  // extern "C"
