// libradixkv_bench's yardsticks: they stream every byte they are given, copy exactly, measure a
// positive FMA rate, refuse bad arguments with a code and report the build's ABI version.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "isa_rerun.h"
#include "radixkv_bench.h"
#include "rkv_test.h"

namespace {

// rkv_bench_read sums every byte it streams; rkv_bench_copy copies exactly, tails included.
void test_read_copy() {
  std::vector<uint8_t> a(1 << 20), b(1 << 20);
  for (size_t i = 0; i < a.size(); ++i) a[i] = (uint8_t)(i * 7);
  double sink = -1;
  EXPECT(rkv_bench_read(a.data(), (int64_t)a.size() - 3, &sink) == RKV_OK && sink > 0, "bench_read");
  EXPECT(rkv_bench_copy(b.data(), a.data(), (int64_t)a.size() - 3) == RKV_OK && !std::memcmp(a.data(), b.data(), a.size() - 3),
         "bench_copy");
}

// rkv_bench_read_gemv: every element of the stream counts (zeros give 0, one positive element
// anywhere, vector part or tail, gives > 0) for every dtype and row count, with and without
// prefetches; bad arguments refused.
void test_read_gemv() {
  const int32_t dts[3] = {RKV_DTYPE_F32, RKV_DTYPE_BF16, RKV_DTYPE_F16};
  for (int32_t dt : dts) {
    const int64_t es = dt == RKV_DTYPE_F32 ? 4 : 2, count = 3001;  // 12004 / 6002 bytes: a tail
    std::vector<uint8_t> buf(static_cast<size_t>(count * es));
    const int64_t positions[3] = {0, count / 2, count - 1};
    for (int32_t rows = 1; rows <= 16; rows++) {
      for (int64_t pf : {int64_t{0}, int64_t{4096}}) {
        double sink = -1;
        std::fill(buf.begin(), buf.end(), 0);
        EXPECT(rkv_bench_read_gemv(buf.data(), count * es, dt, rows, pf, &sink) == RKV_OK && sink == 0,
               "read_gemv dtype %d rows=%d of zeros: %g (%s)", (int)dt, rows, sink, rkv_bench_last_error());
        for (int64_t pos : positions) {
          std::fill(buf.begin(), buf.end(), 0);
          if (dt == RKV_DTYPE_F32) {
            const float one = 1.f;
            std::memcpy(buf.data() + pos * 4, &one, 4);
          } else {
            const uint16_t one = dt == RKV_DTYPE_BF16 ? 0x3F80 : 0x3C00;
            std::memcpy(buf.data() + pos * 2, &one, 2);
          }
          EXPECT(rkv_bench_read_gemv(buf.data(), count * es, dt, rows, pf, &sink) == RKV_OK && sink > 0,
                 "read_gemv dtype %d rows=%d missed element %lld: %g", (int)dt, rows, (long long)pos, sink);
        }
      }
    }
  }
  double sink = 0;
  float w[16] = {};
  EXPECT(rkv_bench_read_gemv(w, 64, RKV_DTYPE_F32, 0, 0, &sink) == RKV_ERR_INVALID_ARGUMENT, "rows 0 accepted");
  EXPECT(rkv_bench_read_gemv(w, 64, RKV_DTYPE_F32, 17, 0, &sink) == RKV_ERR_INVALID_ARGUMENT, "rows 17 accepted");
  EXPECT(rkv_bench_read_gemv(w, 64, RKV_DTYPE_FP8_E4M3, 1, 0, &sink) == RKV_ERR_INVALID_ARGUMENT, "fp8 accepted");
  EXPECT(rkv_bench_read_gemv(w, -1, RKV_DTYPE_F32, 1, 0, &sink) == RKV_ERR_INVALID_ARGUMENT, "negative bytes accepted");
  EXPECT(rkv_bench_read_gemv(w, 64, RKV_DTYPE_F32, 1, 0, nullptr) == RKV_ERR_INVALID_ARGUMENT, "null sink accepted");
  EXPECT(rkv_bench_read_gemv(nullptr, 64, RKV_DTYPE_F32, 1, 0, &sink) == RKV_ERR_INVALID_ARGUMENT, "null w accepted");
  EXPECT(rkv_bench_read_gemv(w, 64, RKV_DTYPE_F32, 1, -64, &sink) == RKV_ERR_INVALID_ARGUMENT,
         "negative prefetch accepted");
}

void test_fma_peak() {
  double g = 0;
  EXPECT(rkv_bench_fma_peak(0.05, &g) == RKV_OK && g > 0.1, "fma peak %g: %s", g, rkv_bench_last_error());
  EXPECT(rkv_bench_fma_peak(-1, &g) == RKV_ERR_INVALID_ARGUMENT, "negative seconds accepted");
  EXPECT(std::strstr(rkv_bench_last_error(), "seconds") != nullptr, "error message: %s", rkv_bench_last_error());
}

}  // namespace

int main(int, char** argv) {
  EXPECT(rkv_bench_abi_version() == RKV_ABI_VERSION, "abi version %d", rkv_bench_abi_version());
  test_read_copy();
  test_read_gemv();
  test_fma_peak();
  std::printf("bench_test: %s (%s ISA)\n", g_failures ? "FAILED" : "ok", requested_isa());
  if (g_failures) return 1;
  return rerun_lower_isas(argv[0]);
}
