// What rkv_sample's passes over a row share (sampling.cpp; the AVX-512 passes in
// sampling_avx512.cpp): the chunking of the probabilities, the nucleus order's keys, and the
// AVX-512 forms of four passes, which give the same bits as the portable ones.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "rkv_dtype.h"

namespace rkv {
namespace sampling {

// Probabilities are summed per chunk; the draw walks the chunk sums, then one chunk's tokens.
constexpr int32_t kChunk = 256;
// The top-p walk's first level (exponent fields) in an AVX-512 pass covers this many exponents
// (one compare and one masked add each per 16 tokens): 127 (p = 1) down, then the next ones.
constexpr int kExponentsAPass = 8;
// Its second level (the top 8 mantissa bits) covers at most this many exponents a pass.
constexpr int kWindowExponents = 16;

// One thread's buffers for the rows it samples.
// The top-p walk's window (64 KiB) lives here, not on the stack: the engine calls from a Java
// thread, whose stack also holds its Java frames.
struct RowScratch {
  std::vector<float> p;              // probabilities, unnormalized (the maximum's is 1)
  std::vector<double> chunk;         // their sums per kChunk tokens
  std::vector<uint64_t> order;       // nucleus candidates as order_key
  std::vector<double> window_mass;   // the walk's sub-bucket masses [exponent][8 mantissa bits]
  std::vector<uint64_t> window_sum;  // the integer sums they are made from
  std::vector<float> edited;         // a copy of the row with its edits (bias, mask, penalties)
  bool avx512;                       // the row passes' AVX-512 forms (sampling_avx512.cpp)
  // cut: some row has a top-p below 1 or a top-k (needs order); edits: some row edits its logits
  RowScratch(int32_t vocab, bool cut, bool edits, bool avx512)
      : p(static_cast<size_t>(vocab)), chunk(static_cast<size_t>((vocab + kChunk - 1) / kChunk)),
        order(cut ? static_cast<size_t>(vocab) : 0), window_mass(cut ? kWindowExponents * 256 : 0),
        window_sum(cut ? kWindowExponents * 256 : 0), edited(edits ? static_cast<size_t>(vocab) : 0),
        avx512(avx512) {}
};


// What one unit of the 24-bit integer mantissa (leading 1 included) is worth in exponent field
// e: a float of field e is mantissa * 2^(e - 150); field 0 (subnormals, no leading 1) has the
// unit of field 1. The walk's integer sums times this are exact (a sum below 2^53 converts
// exactly, and a power of two scales it exactly).
inline double mantissa_unit(int exponent_field) { return std::ldexp(1.0, std::max(exponent_field, 1) - 150); }

// The nucleus order as one integer: ascending keys go by p down, then id up.
inline uint64_t order_key(uint32_t p_bits, int32_t id) { return (uint64_t{~p_bits} << 32) | static_cast<uint32_t>(id); }
inline int32_t key_id(uint64_t key) { return static_cast<int32_t>(key & 0xFFFFFFFFu); }
inline float key_p(uint64_t key) { return rkv::bits_f32(~static_cast<uint32_t>(key >> 32)); }

#if defined(__x86_64__)
// p[i] = exp_approx((l[i] - max) * inv_t), 0 for NaN, and the chunk sums; returns their sum.
// The bits of sampling.cpp's AVX2 pass: the same exp arithmetic, each 16 tokens summed into the
// same four double lanes groups, the same reductions, the same scalar tail.
double probabilities_avx512(const float* l, int32_t vocab, float max, float inv_t, float* p, double* chunk);
// mass[e] for the exponent fields e of (top - kExponentsAPass, top] (the others are left as they
// are), as exact sums (integer mantissas: the same doubles as summing the floats, which is exact
// too); returns whether some p has an exponent field above top.
bool exponent_masses_avx512(const float* p, int32_t vocab, int top, double* mass);
// Writes order_key of each token whose bits >> 15 == q (p > 0) to keys, in id order; returns
// their count.
int32_t gather_bucket_avx512(const float* p, int32_t vocab, uint32_t q, uint64_t* keys);
// mass[(e - lo) * 256 + m] for the tokens of exponent field e in [lo, lo + width) and top
// mantissa bits m, as exact sums (the doubles of RadixWalk's portable pass); width is a power of
// two up to kWindowExponents; sum is scratch of as many counters.
void window_masses_avx512(const float* p, int32_t vocab, int lo, int width, uint64_t* sum, double* mass);
#endif

}  // namespace sampling
}  // namespace rkv
