// The CPU's vector instruction set, probed once per process: every ISA-dispatched kernel
// (conversions, attention) asks here. RADIXKV_ISA=scalar|avx2|avx512 in the environment,
// read at the first call, lowers the choice (never raises it above what the CPU has) and turns
// off the optional extensions (cpu_avx512_vbmi); the native tests use it to check every path on
// one machine.
#pragma once

#include <stdint.h>

namespace rkv {

enum CpuIsa { kIsaScalar = 0, kIsaAvx2 = 1, kIsaAvx512 = 2 };

// kIsaAvx512: AVX-512 F/BW/VL/DQ (+ AVX2/FMA/F16C); kIsaAvx2: AVX2 + FMA + F16C.
CpuIsa cpu_isa();
// Whether the CPU has AVX512-BF16 (vdpbf16ps), probed once; RADIXKV_ISA does not lower it, so
// users of AVX-512 code paths check cpu_isa() as well.
bool cpu_avx512_bf16();
// Whether AVX-512 code paths may use AVX512-VBMI (vpermt2b byte lookups), probed once: the CPU has
// it, cpu_isa() is kIsaAvx512, and RADIXKV_ISA is unset (any explicit RADIXKV_ISA, "avx512"
// included, keeps to the base ISA, so the native tests can check both AVX-512 paths on one CPU).
bool cpu_avx512_vbmi();
// Whether AVX-512 code paths may use AVX512-VNNI (vpdpbusd, vpdpwssd: the quantized weights' integer
// dot products), probed once: as cpu_avx512_vbmi, only while RADIXKV_ISA is unset.
bool cpu_avx512_vnni();
const char* cpu_isa_name(CpuIsa isa);
// Whether the GEMMs past the decode kernels may call oneDNN: the library was built with it and
// RADIXKV_ONEDNN is not "0" (read once). With it off, the built-in kernels run as in a build
// without oneDNN (the native tests check those paths that way; also for comparisons).
bool onednn_gemms();
// Whether the streaming loops that gained from it on an Intel core (the packed GEMV's chunked
// passes, the fp8 conversions) add a second software prefetch, into L2 and further ahead than
// their L1 one: on Intel CPUs (one Emerald Rapids core keeps too few L1 misses in flight to read
// at its bandwidth), not elsewhere (Zen 5 lost 4-11% with it). RADIXKV_FAR_PREFETCH=0 or 1 in the
// environment overrides the choice (read once; for comparisons on one machine).
bool far_prefetch_l2();
// Whether the small-m dense kernels (dense_gemv.cpp) keep their k-chunks of x (m >= 3 rows) in a
// quarter of L2 rather than half of L1: on AMD Zen 1 / Zen+ (GCC's znver1), whose 128-bit FP
// units make those kernels' arithmetic, not memory, the bound, and whose 512 KiB L2 feeds the
// extra x loads with room to spare; not elsewhere (on Zen 5 an x past half of L1 crowded out the
// weight stream: 48 KiB 0.71-0.76 of read against 0.89 at 24). RADIXKV_GEMV_X_L2=0 or 1 in the
// environment overrides the choice (read once).
bool gemv_x_chunk_l2();
// Whether row-major GEMMs of 17 to 32 rows run the small-m kernels in two blocks (for_gemv_blocks)
// rather than the GEMMs: on AMD Zen 1 / Zen+ (znver1), whose 128-bit FP units bound both, where
// those blocks (the weights streamed twice) beat oneDNN's sgemm and the widened-panel GEMM at
// 20-32 rows (`rkv_ab gemv` 8192 x 3072, f32 / bf16 / f16: 1.04-1.35x on 1 and 2 threads) and are
// level or slower from 48; not elsewhere (measured on Zen 1 only). RADIXKV_GEMV_32=0 or 1 in the
// environment overrides the choice (read once).
bool gemv_up_to_32_rows();
// Whether AVX2 bf16 decode attention reads K and V rows as element pairs (kBf16Pairs: one 32-byte
// load, a shift and a mask per 16 elements, Q and O permuted to match) rather than a widening
// load and a shift per 8: on AMD Zen 1 / Zen+ (znver1), where those widening ops share the two
// 128-bit FP pipes with the multiply-adds and hold the loop to about two thirds of the FMA rate;
// not elsewhere (measured on Zen 1 only; AVX-512 takes pairs wherever they fit). The AVX2
// dense kernel reads bf16 weights the same way for m <= 2 where this holds (k % 16 == 0, x
// permuted; dense_gemv.cpp): one Zen 1 core streamed the small model's linears 1.09-1.15x faster.
// RADIXKV_AVX2_BF16_PAIRS=0 or 1 in the environment overrides the choice (read once).
bool avx2_bf16_pairs();
// Whether the grouped decode loop (attention_cpu_decode.h: token_group) reads K and V in groups
// of at least 8 tokens rather than 4: on AMD Zen 1 / Zen+ (znver1), where a value tile's setup
// (its O accumulators loaded and stored, its rows' visible ranges) over only 4 tokens of f32 rows
// (8 KV heads of 128: 4 KiB a token) held the loop to about a third of the FMA rate; not elsewhere
// (the 16 KiB groups were tuned on Zen 5). Results are the same either way (each row sums its
// tokens in order). RADIXKV_DECODE_GROUP_8=0 or 1 in the environment overrides the choice (read once).
bool decode_groups_of_8();
// Software prefetches of the lines [at, at + bytes) of a stream: each near bytes ahead into L1
// (prefetcht0), then, where far != 0 (a distance chosen by far_prefetch_l2), each far bytes
// ahead into L2 (prefetcht1). Prefetches never fault: past the end of a buffer is harmless.
inline void prefetch_stream(const void* at, int64_t bytes, int64_t near, int64_t far) {
  const char* p = static_cast<const char*>(at);
  for (int64_t l = 0; l < bytes; l += 64) __builtin_prefetch(p + near + l, 0, 3);
  if (far != 0)
    for (int64_t l = 0; l < bytes; l += 64) __builtin_prefetch(p + far + l, 0, 2);
}

}  // namespace rkv
