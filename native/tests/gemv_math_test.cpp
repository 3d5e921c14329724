// The CUDA small-m GEMV's host arithmetic (native/cuda/gemv_math.h) on the CPU: the vector-width
// choice (alignment), the launch geometry, the documented summation order (hand-computed cases
// where another order gives another float), and the order's result against a double-precision
// dot product within the f32 error bound. gemv_cuda_test checks the kernel against the same
// reference_dot bit for bit on a device.
#include "gemv_math.h"

#include <cmath>
#include <cstdio>
#include <random>
#include <vector>
#include "rkv_test.h"

namespace {



using namespace rkv_gemv;

static const char* dt_name(int32_t d) { return d == RKV_DTYPE_F32 ? "f32" : "bf16"; }

void vector_width() {
  const uintptr_t a = 4096;  // 16-byte aligned
  EXPECT(vec_elems(RKV_DTYPE_F32, a, a, 3072) == 4, "f32 aligned: %d", vec_elems(RKV_DTYPE_F32, a, a, 3072));
  EXPECT(vec_elems(RKV_DTYPE_BF16, a, a, 3072) == 8, "bf16 aligned: %d", vec_elems(RKV_DTYPE_BF16, a, a, 3072));
  // rows of an odd k start misaligned
  EXPECT(vec_elems(RKV_DTYPE_BF16, a, a, 4097) == 1, "bf16 k=4097: %d", vec_elems(RKV_DTYPE_BF16, a, a, 4097));
  EXPECT(vec_elems(RKV_DTYPE_F32, a, a, 4097) == 1, "f32 k=4097: %d", vec_elems(RKV_DTYPE_F32, a, a, 4097));
  // bf16 rows of k = 4 are 8 bytes: every other row misaligned
  EXPECT(vec_elems(RKV_DTYPE_BF16, a, a, 4) == 1, "bf16 k=4: %d", vec_elems(RKV_DTYPE_BF16, a, a, 4));
  EXPECT(vec_elems(RKV_DTYPE_BF16, a, a, 12) == 1, "bf16 k=12: %d", vec_elems(RKV_DTYPE_BF16, a, a, 12));
  EXPECT(vec_elems(RKV_DTYPE_BF16, a, a, 16) == 8, "bf16 k=16: %d", vec_elems(RKV_DTYPE_BF16, a, a, 16));
  // f32 x rows need k % 4 == 0 too (x is read as float4)
  EXPECT(vec_elems(RKV_DTYPE_F32, a, a, 6) == 1, "f32 k=6: %d", vec_elems(RKV_DTYPE_F32, a, a, 6));
  // views at an offset
  EXPECT(vec_elems(RKV_DTYPE_F32, a + 4, a, 3072) == 1, "x misaligned: %d", vec_elems(RKV_DTYPE_F32, a + 4, a, 3072));
  EXPECT(vec_elems(RKV_DTYPE_BF16, a, a + 2, 3072) == 1, "w misaligned: %d", vec_elems(RKV_DTYPE_BF16, a, a + 2, 3072));
  EXPECT(vec_elems(RKV_DTYPE_BF16, a, a + 8, 3072) == 1, "w 8-aligned: %d", vec_elems(RKV_DTYPE_BF16, a, a + 8, 3072));
  EXPECT(vec_elems(RKV_DTYPE_BF16, a + 16, a + 32, 3072) == 8, "offset aligned views: %d",
         vec_elems(RKV_DTYPE_BF16, a + 16, a + 32, 3072));
}

void geometry() {
  EXPECT(warps_per_row(1, kMinRowWarps) == 1, "%d", warps_per_row(1, kMinRowWarps));
  EXPECT(warps_per_row(1, kMinRowWarps - 1) == kSplitWarps, "%d", warps_per_row(1, kMinRowWarps - 1));
  // m = 8: 4 rows per warp, so 8192 rows make exactly kMinRowWarps warps, 3072 rows do not
  EXPECT(warps_per_row(8, 4 * kMinRowWarps) == 1, "%d", warps_per_row(8, 4 * kMinRowWarps));
  EXPECT(warps_per_row(8, 4 * kMinRowWarps - 4) == kSplitWarps, "%d", warps_per_row(8, 4 * kMinRowWarps - 4));
  EXPECT(warps_per_row(8, 3072) == kSplitWarps, "%d", warps_per_row(8, 3072));
  EXPECT(warps_per_row(3, 4096) == 1 && warps_per_row(3, 4094) == kSplitWarps, "m=3: %d %d", warps_per_row(3, 4096),
         warps_per_row(3, 4094));
  EXPECT(rows_per_warp(1) == 1 && rows_per_warp(2) == 1 && rows_per_warp(3) == 2 && rows_per_warp(4) == 2 &&
             rows_per_warp(5) == 4 && rows_per_warp(8) == 4,
         "rows_per_warp");
  // Llama-3.2-3B decode: q/o (3072 x 3072), k/v (1024 x 3072), gate/up (8192 x 3072)
  EXPECT(rows_per_block(1, 8192) == 8, "%lld", (long long)rows_per_block(1, 8192));
  EXPECT(rows_per_block(8, 8192) == 32, "%lld", (long long)rows_per_block(8, 8192));
  EXPECT(rows_per_block(1, 1024) == 2, "%lld", (long long)rows_per_block(1, 1024));
  EXPECT(rows_per_block(8, 3072) == 8, "%lld", (long long)rows_per_block(8, 3072));
  EXPECT(rows_per_block(8, 33) == 8, "%lld", (long long)rows_per_block(8, 33));
  // the accumulators (rows_per_warp(m) x m floats per lane) fit the shared reduction buffer
  EXPECT(rows_per_warp((int)kGemvMaxRows) * kGemvMaxRows <= kWarp, "reduction lanes");
}

// Cases where the documented order gives a different float than other plausible orders
// (2^24 + 1 rounds back to 2^24; 2^24 + 2 is exact).
void documented_order() {
  const float big = 16777216.f;  // 2^24
  {
    // vec 1, one warp, k = 32: lanes 1 and 17 meet at the tree's first level (1 + 1 = 2),
    // then 2^24 + 2 at the last. A sequential sum would lose both ones.
    std::vector<float> x(32, 1.f), w(32, 0.f);
    w[0] = big;
    w[1] = 1.f;
    w[17] = 1.f;
    const float got = reference_dot<RKV_DTYPE_F32>(x.data(), w.data(), 32, 1, 1);
    EXPECT(got == big + 2.f, "lane tree: got %.1f", got);
  }
  {
    // vec 4, one warp, k = 256: thread 0 owns vectors 0 and 32 (elements 0..3, 128..131), so
    // its chain 2^24 + 1 + 1 stays 2^24. Contiguous chunks per thread would put 128, 129 in
    // lane 16 and give 2^24 + 2.
    std::vector<float> x(256, 1.f), w(256, 0.f);
    w[0] = big;
    w[128] = 1.f;
    w[129] = 1.f;
    const float got = reference_dot<RKV_DTYPE_F32>(x.data(), w.data(), 256, 4, 1);
    EXPECT(got == big, "strided vectors: got %.1f", got);
  }
  {
    // 4 warps: warps are added in order after their trees. Warp 0 holds 2^24, warps 1..3 one
    // 1 each: ((2^24 + 1) + 1) + 1 = 2^24 (a pairwise warp tree would give 2^24 + 2).
    std::vector<float> x(128, 1.f), w(128, 0.f);
    w[0] = big;
    w[32] = w[64] = w[96] = 1.f;
    const float got = reference_dot<RKV_DTYPE_F32>(x.data(), w.data(), 128, 1, 4);
    EXPECT(got == big, "warps in order: got %.1f", got);
  }
  {
    // fma: a thread's chain fuses x * w into the add. Thread 0 owns elements 0 and 32 (vec 1):
    // -1 + (1 + 2^-23)(1 - 2^-24) = 2^-24 - 2^-47 exactly; rounding the product first gives 0.
    const float a = 1.f + std::ldexp(1.f, -23), b = 1.f - std::ldexp(1.f, -24);
    std::vector<float> x(33, 0.f), w(33, 0.f);
    x[0] = 1.f;
    w[0] = -1.f;
    x[32] = a;
    w[32] = b;
    const float got = reference_dot<RKV_DTYPE_F32>(x.data(), w.data(), 33, 1, 1);
    EXPECT(got == (float)(std::ldexp(1.0, -24) - std::ldexp(1.0, -47)), "fma chain: got %.9g", got);
  }
  {
    // bf16 widening is exact: 0x3F80 = 1, 0xC040 = -3, 0x0001 = the smallest subnormal
    EXPECT(Weight<RKV_DTYPE_BF16>::widen(0x3F80) == 1.f, "bf16 1");
    EXPECT(Weight<RKV_DTYPE_BF16>::widen(0xC040) == -3.f, "bf16 -3");
    EXPECT(Weight<RKV_DTYPE_BF16>::widen(0x0001) == std::ldexp(1.f, -133), "bf16 subnormal");
  }
}

// reference_dot against a double dot product within the f32 bound of its rounding chain.
void against_double() {
  std::mt19937 rng(13);
  std::normal_distribution<float> d(0.f, 1.f);
  for (int64_t k : {1, 7, 31, 256, 3072, 4097}) {
    std::vector<float> x(k), w(k);
    std::vector<uint16_t> wb(k);
    for (int64_t i = 0; i < k; i++) {
      x[i] = d(rng);
      w[i] = d(rng) * 0.05f;
      wb[i] = rkv::float_to_bf16(w[i]);
    }
    for (int wpr : {1, kSplitWarps}) {
      for (int dt : {RKV_DTYPE_F32, RKV_DTYPE_BF16}) {
        const int vec = vec_elems(dt, 0, 0, k);
        double exact = 0, mag = 0;
        for (int64_t i = 0; i < k; i++) {
          const double wv = dt == RKV_DTYPE_F32 ? w[i] : rkv::bf16_to_float(wb[i]);
          exact += (double)x[i] * wv;
          mag += std::fabs((double)x[i] * wv);
        }
        const float got = dt == RKV_DTYPE_F32 ? reference_dot<RKV_DTYPE_F32>(x.data(), w.data(), k, vec, wpr)
                                              : reference_dot<RKV_DTYPE_BF16>(x.data(), wb.data(), k, vec, wpr);
        const double bound = (double)rounding_chain(k, vec, wpr) * std::ldexp(1.0, -24) * mag;
        EXPECT(std::fabs(got - exact) <= bound, "k=%lld wpr=%d %s vec=%d: %.9g vs %.12g (bound %.3g)", (long long)k,
               wpr, dt_name(dt), vec, got, exact, bound);
      }
    }
  }
}

}  // namespace

int main() {
  vector_width();
  geometry();
  documented_order();
  against_double();
  if (g_failures) {
    std::printf("%d failure(s)\n", g_failures);
    return 1;
  }
  std::printf("gemv_math_test: OK\n");
  return 0;
}
