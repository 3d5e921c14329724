/*
 * radixkv_bench.h — yardsticks for benchmarks, not part of the kernel ABI (radixkv.h).
 *
 * libradixkv_bench measures what the machine can do with the same OpenMP threads and compiler
 * flags as libradixkv's kernels: memory read and copy bandwidth, peak FMA throughput and a
 * decode GEMV's weight stream with its arithmetic. Benchmarks (bench/, native/bench/rkv_ab) and
 * the CLI's bandwidth check divide kernel timings by these; the engine never loads it.
 * Status codes and rkv_bench_last_error() follow radixkv.h's conventions.
 */
#ifndef RADIXKV_BENCH_H
#define RADIXKV_BENCH_H

#include <stdint.h>

#include "radixkv.h"

#ifdef __cplusplus
extern "C" {
#endif

/* RKV_ABI_VERSION libradixkv_bench was built with. */
RKV_API int32_t rkv_bench_abi_version(void);
/* Message of the last failure of this library on this thread ("" if none). */
RKV_API const char* rkv_bench_last_error(void);

/* Streams bytes of src (reads every 64-byte line), writes a checksum to *sink. */
RKV_API int rkv_bench_read(const void* src, int64_t bytes, double* sink);
/* memcpy over the kernels' thread pool. */
RKV_API int rkv_bench_copy(void* dst, const void* src, int64_t bytes);
/* Peak single-precision FMA throughput of the kernels' threads: runs independent vector FMA
 * chains for about `seconds` and writes GFLOP/s (2 flops per FMA lane) to *gflops. */
RKV_API int rkv_bench_fma_peak(double seconds, double* gflops);
/* Streams bytes of w_dtype weights (f32, bf16, f16) like rkv_bench_read and does, per weight
 * element, `rows` (1..16) multiply-adds with the instructions rkv_linear uses for that many
 * rows on this CPU, against x held in registers: a decode GEMV's weight stream overlapped with
 * its arithmetic and nothing else (no x loads, no partial sums), the most rkv_linear with
 * m = rows can reach here. prefetch_bytes > 0: every line is also software-prefetched that far
 * ahead (0: none; which is faster depends on the CPU and the arithmetic). Writes a checksum to
 * *sink. */
RKV_API int rkv_bench_read_gemv(const void* w, int64_t bytes, int32_t w_dtype, int32_t rows, int64_t prefetch_bytes,
                                double* sink);

#ifdef __cplusplus
}
#endif

#endif /* RADIXKV_BENCH_H */
