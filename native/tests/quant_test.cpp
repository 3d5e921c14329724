// rkv_quant_linear and rkv_quant_dequantize_rows against a double-precision reference: the weight
// blocks dequantized by this file's own transcription of ggml's formulas, multiplied by the exact
// activations. The kernel quantizes the activations to 8 bits per block, so each output may
// differ from the reference by at most sum |w| * d_x / 2 (half a step of the activations' grid);
// the test holds it to that bound. Every format, m in {1, 2, 3, 5, 8, 16} (the integer dot
// products) and {17, 64} (dequantized panels through the GEMMs), on every ISA path: the program
// runs itself again with RADIXKV_ISA=avx512 (no VNNI), avx2 and scalar.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "isa_rerun.h"
#include "radixkv.h"
#include "rkv_dtype.h"
#include "rkv_test.h"

namespace {

const int32_t kFormats[] = {RKV_QUANT_Q8_0, RKV_QUANT_Q4_0, RKV_QUANT_Q5_0, RKV_QUANT_Q4_K, RKV_QUANT_Q6_K};

int64_t block_values(int32_t f) { return f == RKV_QUANT_Q4_K || f == RKV_QUANT_Q6_K ? 256 : 32; }

// Random bytes for every block, with f16 scales in a range of real models' (1e-3 .. 2e-2).
std::vector<uint8_t> random_blocks(int32_t fmt, int64_t n, int64_t k, std::mt19937& rng) {
  const int64_t bytes = n * rkv_quant_row_bytes(fmt, k);
  std::vector<uint8_t> w(static_cast<size_t>(bytes));
  for (auto& b : w) b = static_cast<uint8_t>(rng() & 0xFF);
  std::uniform_real_distribution<float> scale(1e-3f, 2e-2f);
  const int64_t bb = rkv_quant_row_bytes(fmt, block_values(fmt));
  for (int64_t at = 0; at < bytes; at += bb) {
    const auto put = [&](int64_t off) {
      const uint16_t h = rkv::float_to_f16(scale(rng));
      std::memcpy(&w[static_cast<size_t>(at + off)], &h, 2);
    };
    if (fmt == RKV_QUANT_Q4_K) {
      put(0);
      put(2);
    } else if (fmt == RKV_QUANT_Q6_K) {
      put(208);
    } else {
      put(0);
    }
  }
  return w;
}

double h(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return rkv::f16_to_float(v);
}

// ggml's formulas, in double.
void reference_row(int32_t fmt, const uint8_t* p, int64_t k, double* out) {
  const int64_t bb = rkv_quant_row_bytes(fmt, block_values(fmt));
  for (int64_t b = 0; b < k / block_values(fmt); b++, p += bb) {
    double* y = out + b * block_values(fmt);
    if (fmt == RKV_QUANT_Q8_0) {
      for (int j = 0; j < 32; j++) y[j] = h(p) * static_cast<int8_t>(p[2 + j]);
    } else if (fmt == RKV_QUANT_Q4_0) {
      for (int j = 0; j < 16; j++) {
        y[j] = h(p) * ((p[2 + j] & 0xF) - 8);
        y[j + 16] = h(p) * ((p[2 + j] >> 4) - 8);
      }
    } else if (fmt == RKV_QUANT_Q5_0) {
      const uint32_t qh = p[2] | p[3] << 8 | p[4] << 16 | static_cast<uint32_t>(p[5]) << 24;
      for (int j = 0; j < 16; j++) {
        y[j] = h(p) * (((p[6 + j] & 0xF) | ((qh >> j) & 1) << 4) - 16.0);
        y[j + 16] = h(p) * (((p[6 + j] >> 4) | ((qh >> (j + 16)) & 1) << 4) - 16.0);
      }
    } else if (fmt == RKV_QUANT_Q4_K) {
      const uint8_t* s = p + 4;
      for (int sub = 0; sub < 8; sub++) {
        int sc, m;
        if (sub < 4) {
          sc = s[sub] & 63;
          m = s[sub + 4] & 63;
        } else {
          sc = (s[sub + 4] & 0xF) | ((s[sub - 4] >> 6) << 4);
          m = (s[sub + 4] >> 4) | ((s[sub] >> 6) << 4);
        }
        const uint8_t* q = p + 16 + 32 * (sub / 2);
        for (int l = 0; l < 32; l++) {
          const int v = sub % 2 == 0 ? q[l] & 0xF : q[l] >> 4;
          y[32 * sub + l] = h(p) * sc * v - h(p + 2) * m;
        }
      }
    } else {
      for (int i = 0; i < 256; i++) {
        const int half = i / 128, r = i % 128, g = r / 32, l = r % 32;
        const uint8_t ql = p[64 * half + l + (g % 2) * 32];
        const int lo = g < 2 ? ql & 0xF : ql >> 4;
        const int hi = (p[128 + 32 * half + l] >> (2 * g)) & 3;
        const int sc = static_cast<int8_t>(p[192 + 8 * half + 2 * g + l / 16]);
        y[i] = h(p + 208) * sc * ((lo | hi << 4) - 32);
      }
    }
  }
}

void test_linear(int32_t fmt, int64_t m, int64_t n, int64_t k, bool accumulate, int64_t pad) {
  std::mt19937 rng(static_cast<uint32_t>(fmt * 1000003 + m * 101 + n * 7 + k));
  const std::vector<uint8_t> w = random_blocks(fmt, n, k, rng);
  const int64_t ldx = k + pad, ldy = n + 2 * pad;
  std::normal_distribution<float> nd(0.f, 1.f);
  std::vector<float> x(static_cast<size_t>(m * ldx)), y(static_cast<size_t>(m * ldy));
  for (auto& v : x) v = nd(rng);
  for (auto& v : y) v = nd(rng);
  const std::vector<float> y0 = y;
  rkv_quant_linear_params p{x.data(), ldx, w.data(), fmt, y.data(), ldy, m, n, k, accumulate ? 1 : 0};
  const int st = rkv_quant_linear(&p);
  EXPECT(st == RKV_OK, "fmt %d m %lld: status %d (%s)", fmt, (long long)m, st, rkv_last_error());
  const int64_t rb = rkv_quant_row_bytes(fmt, k), bv = block_values(fmt);
  std::vector<double> wr(static_cast<size_t>(k));
  int bad = 0;
  for (int64_t j = 0; j < n; j++) {
    reference_row(fmt, w.data() + j * rb, k, wr.data());
    for (int64_t r = 0; r < m; r++) {
      const float* xr = x.data() + r * ldx;
      double ref = 0, bound = 0;
      for (int64_t b = 0; b < k / bv; b++) {
        double amax = 0, wabs = 0;
        for (int64_t c = b * bv; c < (b + 1) * bv; c++) {
          ref += wr[c] * xr[c];
          amax = std::fmax(amax, std::fabs(xr[c]));
          wabs += std::fabs(wr[c]);
        }
        bound += wabs * amax / 127 / 2;  // the prefill path's f32 GEMM is far inside this
      }
      bound = bound * 1.01 + 1e-4 * (1 + std::fabs(ref));
      const double want = (accumulate ? y0[r * ldy + j] : 0.0) + ref;
      const double got = y[r * ldy + j];
      if (!(std::fabs(got - want) <= bound) && bad++ < 3)
        EXPECT(false, "fmt %d m %lld n %lld k %lld acc %d: y[%lld, %lld] = %.6f, reference %.6f, bound %.3g", fmt,
               (long long)m, (long long)n, (long long)k, accumulate, (long long)r, (long long)j, got, want, bound);
    }
  }
  EXPECT(bad == 0, "fmt %d m %lld: %d outputs outside the bound", fmt, (long long)m, bad);
  // the padding between rows of y is untouched
  for (int64_t r = 0; r < m; r++)
    for (int64_t c = n; c < ldy; c++)
      EXPECT(y[r * ldy + c] == y0[r * ldy + c], "fmt %d: y padding [%lld, %lld] written", fmt, (long long)r, (long long)c);
}

void test_dequantize_rows(int32_t fmt) {
  std::mt19937 rng(static_cast<uint32_t>(fmt));
  const int64_t rows = 9, k = 512;
  const std::vector<uint8_t> w = random_blocks(fmt, rows, k, rng);
  const int32_t ids[] = {4, 0, 8, 4};
  std::vector<float> out(4 * k);
  rkv_quant_rows_params p{w.data(), fmt, rows, k, ids, 4, out.data()};
  EXPECT(rkv_quant_dequantize_rows(&p) == RKV_OK, "fmt %d: %s", fmt, rkv_last_error());
  std::vector<double> ref(k);
  const int64_t rb = rkv_quant_row_bytes(fmt, k);
  for (int i = 0; i < 4; i++) {
    reference_row(fmt, w.data() + ids[i] * rb, k, ref.data());
    for (int64_t c = 0; c < k; c++)
      if (std::fabs(out[i * k + c] - ref[c]) > 1e-6 * (1 + std::fabs(ref[c]))) {
        EXPECT(false, "fmt %d row %d [%lld]: %.8f, reference %.8f", fmt, ids[i], (long long)c, out[i * k + c], ref[c]);
        break;
      }
  }
  const int32_t bad_ids[] = {1, 9};
  rkv_quant_rows_params q{w.data(), fmt, rows, k, bad_ids, 2, out.data()};
  EXPECT(rkv_quant_dequantize_rows(&q) == RKV_ERR_INVALID_ARGUMENT, "id 9 of 9 rows accepted");
  EXPECT(std::strstr(rkv_last_error(), "id 9 at index 1") != nullptr, "message: %s", rkv_last_error());
}

void test_rejects() {
  std::vector<float> x(64), y(64);
  std::vector<uint8_t> w(1024);
  rkv_quant_linear_params p{x.data(), 32, w.data(), 3, y.data(), 2, 1, 2, 32, 0};
  EXPECT(rkv_quant_linear(&p) == RKV_ERR_INVALID_ARGUMENT, "format 3 accepted");
  p.format = RKV_QUANT_Q4_K;
  EXPECT(rkv_quant_linear(&p) == RKV_ERR_INVALID_ARGUMENT, "q4_k with k = 32 accepted");
  EXPECT(std::strstr(rkv_last_error(), "q4_k") != nullptr, "message: %s", rkv_last_error());
  p.format = RKV_QUANT_Q8_0;
  p.ldy = 1;
  EXPECT(rkv_quant_linear(&p) == RKV_ERR_INVALID_ARGUMENT, "ldy < n accepted");
  p.ldy = 2;
  p.y = x.data() + 8;
  EXPECT(rkv_quant_linear(&p) == RKV_ERR_INVALID_ARGUMENT, "y overlapping x accepted");
  EXPECT(rkv_quant_row_bytes(RKV_QUANT_Q6_K, 512) == 420 && rkv_quant_row_bytes(RKV_QUANT_Q4_0, 64) == 36 &&
             rkv_quant_row_bytes(RKV_QUANT_Q6_K, 100) == -1,
         "row bytes");
}

// Where the CPU has AVX-512 (F/BW/VL/DQ) with VNNI and no RADIXKV_ISA lowers the path, the
// integer dot products run on VNNI whatever ISA the library was compiled for: the portable
// x86-64-v3 build carries that path under target pragmas.
void test_vnni_path_chosen() {
#if defined(__x86_64__)
  const bool vnni = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                    __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
                    __builtin_cpu_supports("avx512vnni");
  if (vnni && std::getenv("RADIXKV_ISA") == nullptr)
    EXPECT(std::strstr(rkv_build_info(), "quant_dot=avx512_vnni") != nullptr, "VNNI CPU, build info: %s",
           rkv_build_info());
#endif
}

}  // namespace

int main(int, char** argv) {
  std::printf("quant_test: RADIXKV_ISA=%s, %s\n", requested_isa(), rkv_build_info());
  for (int32_t fmt : kFormats) {
    for (int64_t m : {1, 2, 3, 5, 8, 16, 17, 64}) {
      test_linear(fmt, m, 67, 512, m % 2 == 0, 0);
      test_linear(fmt, m, 5, 768, m % 2 == 1, 3);  // strided x and y
    }
    test_linear(fmt, 1, 300, 1024, false, 0);  // a parallel one
    for (int64_t m : {1, 2}) test_linear(fmt, m, 7, 4608, m == 2, 0);  // 144 blocks of 32: scales past 64 blocks
    if (block_values(fmt) == 32)
      for (int64_t m : {1, 3}) test_linear(fmt, m, 9, 800, m == 3, 1);  // an odd number of blocks per row
    test_dequantize_rows(fmt);
  }
  test_rejects();
  test_vnni_path_chosen();
  std::printf("quant_test: %d failures (RADIXKV_ISA=%s)\n", g_failures, requested_isa());
  const int lower = rerun_lower_isas(argv[0], true);
  return g_failures != 0 || lower != 0 ? 1 : 0;
}
