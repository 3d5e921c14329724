// rkv_bench_fma_peak: the single-precision FMA throughput the kernels' OpenMP threads can
// reach, as the yardstick for GEMM efficiency in benchmarks. Every thread runs independent
// vector FMA chains (enough to cover FMA latency x ports on current x86 cores, few enough to
// stay in registers) until a shared deadline; the result is total flops / wall time of the
// parallel region.
#include <omp.h>

#include <cmath>

#include "radixkv_bench.h"
#include "rkv_common.h"
#include "rkv_isa.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#pragma GCC diagnostic ignored "-Wuninitialized"  // GCC 12 AVX-512 header idiom
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace {

constexpr long kItersPerCheck = 4096;

// Each variant runs until omp_get_wtime() >= deadline and returns the FMA lane-operations done
// (and a checksum). The AVX-512 and AVX2 variants are compiled with target attributes and
// chosen at run time, as the kernels are (rkv_isa.h): a portable x86-64-v3 build measured the
// AVX2 peak, half of what the AVX-512 kernels can reach on a CPU with full-width FMA units.
#if defined(__x86_64__)
constexpr int kChains512 = 16;  // + 2 constants: 18 of 32 registers
__attribute__((target("avx512f"))) double fma_chains_avx512(double deadline, float* checksum) {
  __m512 acc[kChains512];
  for (int c = 0; c < kChains512; c++) acc[c] = _mm512_set1_ps(0.001f * (c + 1));
  const __m512 a = _mm512_set1_ps(0.99999994f);
  const __m512 b = _mm512_set1_ps(1e-7f);
  double ops = 0;
  do {
    for (long i = 0; i < kItersPerCheck; i++) {
      for (int c = 0; c < kChains512; c++) acc[c] = _mm512_fmadd_ps(acc[c], a, b);
    }
    ops += double(kItersPerCheck) * kChains512 * 16;
  } while (omp_get_wtime() < deadline);
  __m512 s = acc[0];
  for (int c = 1; c < kChains512; c++) s = _mm512_add_ps(s, acc[c]);
  *checksum = _mm512_reduce_add_ps(s);
  return ops;
}

// 12 chains + 2 constants fit AVX2's 16 registers (16 chains spilled to the stack and measured
// half the real peak on Zen 3); 12 >= latency x ports on Haswell through Zen 4 (5 x 2).
constexpr int kChains256 = 12;
__attribute__((target("avx2,fma"))) double fma_chains_avx2(double deadline, float* checksum) {
  __m256 acc[kChains256];
  for (int c = 0; c < kChains256; c++) acc[c] = _mm256_set1_ps(0.001f * (c + 1));
  const __m256 a = _mm256_set1_ps(0.99999994f);
  const __m256 b = _mm256_set1_ps(1e-7f);
  double ops = 0;
  do {
    for (long i = 0; i < kItersPerCheck; i++) {
      for (int c = 0; c < kChains256; c++) acc[c] = _mm256_fmadd_ps(acc[c], a, b);
    }
    ops += double(kItersPerCheck) * kChains256 * 8;
  } while (omp_get_wtime() < deadline);
  __m256 s = acc[0];
  for (int c = 1; c < kChains256; c++) s = _mm256_add_ps(s, acc[c]);
  float t[8];
  _mm256_storeu_ps(t, s);
  float r = 0;
  for (float v : t) r += v;
  *checksum = r;
  return ops;
}
#endif

// No vector FMA: scalar fmaf chains (what the kernels use there too).
constexpr int kChainsScalar = 12;
double fma_chains_scalar(double deadline, float* checksum) {
  float acc[kChainsScalar];
  for (int c = 0; c < kChainsScalar; c++) acc[c] = 0.001f * (c + 1);
  double ops = 0;
  do {
    for (long i = 0; i < kItersPerCheck; i++) {
      for (int c = 0; c < kChainsScalar; c++) acc[c] = std::fma(acc[c], 0.99999994f, 1e-7f);
    }
    ops += double(kItersPerCheck) * kChainsScalar;
  } while (omp_get_wtime() < deadline);
  float r = 0;
  for (float v : acc) r += v;
  *checksum = r;
  return ops;
}

// The widest FMA the kernels use on this CPU (the same probe and RADIXKV_ISA override).
double fma_chains(double deadline, float* checksum) {
#if defined(__x86_64__)
  static const rkv::CpuIsa isa = rkv::cpu_isa();
  if (isa == rkv::kIsaAvx512) return fma_chains_avx512(deadline, checksum);
  if (isa == rkv::kIsaAvx2) return fma_chains_avx2(deadline, checksum);
#endif
  return fma_chains_scalar(deadline, checksum);
}

volatile float g_sink;

}  // namespace

extern "C" RKV_API int rkv_bench_fma_peak(double seconds, double* gflops) {
  RKV_CHECK_PTR(gflops);
  RKV_CHECK(std::isfinite(seconds) && seconds > 0 && seconds <= 60,
            "seconds must be in (0, 60], got %g", seconds);
  double total_ops = 0;
  double t0 = 0, t1 = 0;
#pragma omp parallel reduction(+ : total_ops)
  {
    // Every thread starts after the barrier and stops at the same deadline.
#pragma omp barrier
#pragma omp single
    t0 = omp_get_wtime();
    // implicit barrier after single: t0 is visible to all threads
    float cs = 0;
    total_ops += fma_chains(t0 + seconds, &cs);
    g_sink = cs;
#pragma omp barrier
#pragma omp single
    t1 = omp_get_wtime();
  }
  const double elapsed = t1 - t0;
  if (!(elapsed > 0)) return rkv::set_error(RKV_ERR_INTERNAL, "FMA benchmark measured no time");
  *gflops = 2.0 * total_ops / elapsed * 1e-9;  // 2 flops per FMA lane
  return RKV_OK;
}
