// The top-p walk over p's bits (rkv_sample's flat rows, sampling.cpp): RadixWalk finds where the
// running mass of the tokens in nucleus order (p down, id up) reaches a target without sorting
// them, by masses of buckets of p's bits, level by level.
#pragma once

#include <algorithm>
#include <climits>
#include <cstdint>

#include "rkv_dtype.h"
#include "rkv_exp_avx2.h"
#include "sampling_rows.h"

namespace rkv {
namespace sampling {

// Where a walk over the tokens by p down (id up) first brings the running mass to a target:
// the token's order_key, its p, and the mass ahead of it.
struct Crossing {
  uint64_t key;
  double before;
  float p;
};

// The walk by buckets of p's bits: the exponent field (masses given), then its top 8 mantissa
// bits (one pass over the row fills them for a window of kWindow exponents, so the cut and the
// draw, a few exponents apart on a flat row, share it), then the tokens of that bucket gathered
// and sorted (kept for a second walk into the same bucket). A bucket of more than kFineMin
// tokens (very flat rows: N(0, 0.05) logits put 570 in one) goes one level further, by the next
// 8 mantissa bits of its keys, before a sort. A bucket is entered when the mass ahead of it plus
// its own reaches the target; where rounding lets no bucket reach it, the walk takes the last
// token with p > 0, as the sorted walk does.
class RadixWalk {
 public:
  RadixWalk(RowScratch& s, int32_t vocab, const double* mass_by_exp) : s_(s), vocab_(vocab), mass_exp_(mass_by_exp) {}

  // strict: the mass must pass the target (the draw); else reach it (the cut)
  Crossing cross(double target, bool strict) {
    double cum = 0;
    const int e = pick(mass_exp_, 256, target, strict, cum);
    if (e < lo_ || e >= lo_ + width_) histogram(e);
    const int q = (e << 8) | pick(sub_mass_ + (e - lo_) * 256, 256, target, strict, cum);
    if (q != bucket_) gather(q);
    int32_t n = n_;
    if (n_ > kFineMin) {
      const int f = pick(fine_mass_, 256, target, strict, cum);
      if (f != fine_) refine(f);
      n = fine_n_;
    }
    const uint64_t* keys = s_.order.data();
    for (int32_t j = 0; j < n; j++) {
      const float p = key_p(keys[j]);
      if (reaches(cum + p, target, strict) || j + 1 == n) return {keys[j], cum, p};
      cum += p;
    }
    return {0, 0, 0};  // not reached: a picked bucket holds a token with p > 0
  }

 private:
  static constexpr int kWindow = kWindowExponents;  // per sub-bucket pass (32 KiB of masses)
  // Up to this many tokens a bucket is sorted whole: Zen 5, 32000 logits ~ N(0, 0.05), one bucket
  // of 570 sorted twice a row took a third of its time.
  static constexpr int32_t kFineMin = 128;

  static uint32_t fine_bits(uint64_t key) { return (rkv::f32_bits(key_p(key)) >> 7) & 0xFFu; }

  static bool reaches(double mass, double target, bool strict) { return strict ? mass > target : mass >= target; }

  // The highest bucket whose mass brings cum to the target (cum then holds the mass ahead of it),
  // or the lowest non-empty one.
  static int pick(const double* mass, int buckets, double target, bool strict, double& cum) {
    int last = -1;
    for (int b = buckets - 1; b >= 0; b--) {
      if (mass[b] <= 0) continue;
      if (reaches(cum + mass[b], target, strict)) return b;
      cum += mass[b];
      last = b;
    }
    cum -= mass[last];
    return last;
  }

  // Sub-bucket masses of exponents [e, e + width_) (the walk goes up from the cut), branch-free:
  // a token outside the window adds 0 to the bucket its low bits name (one spare bucket would
  // chain the adds of every token below the window, most of a peaked row).
  void histogram(int e) {
    lo_ = std::min(e, 256 - kWindow);
    // only up to exponent field 127 (p = 1), in a power of two of exponents: less to clear and to
    // convert (a later walk above the window would build it again)
    width_ = kWindow;
    while (width_ > 1 && lo_ + width_ / 2 >= 128) width_ /= 2;
#if defined(__x86_64__)
    if (s_.avx512) return window_masses_avx512(s_.p.data(), vocab_, lo_, width_, s_.window_sum.data(), sub_mass_);
#endif
    // as window_masses_avx512 does: bucket indices and mantissas a block at a time (8 lanes),
    // then integer adds (exact: the doubles the floats' sums give)
    // Measured: docs/measurements/kernel-constants.md#sampling-window-masses-in-blocks-portable
    constexpr int32_t kBlock = 1024;
    const int32_t buckets = width_ * 256;
    uint64_t* sum = s_.window_sum.data();
    std::fill(sum, sum + buckets, uint64_t{0});
    alignas(32) uint32_t index[kBlock];
    alignas(32) uint32_t mant[kBlock];
    const uint32_t base = static_cast<uint32_t>(lo_) << 8;
    const float* p = s_.p.data();
    for (int32_t i0 = 0; i0 < vocab_; i0 += kBlock) {
      const int32_t n = std::min(kBlock, vocab_ - i0);
      int32_t t = 0;
#if defined(RKV_EXP_AVX2)
      const __m256i vbase = _mm256_set1_epi32(static_cast<int>(base)), flip = _mm256_set1_epi32(INT32_MIN);
      for (; t + 8 <= n; t += 8) {
        const __m256i b = _mm256_castps_si256(_mm256_loadu_ps(p + i0 + t));
        const __m256i q = _mm256_sub_epi32(_mm256_srli_epi32(b, 15), vbase);  // wraps below the window
        // q < buckets, unsigned (AVX2 compares signed: both sides flipped by the sign bit)
        const __m256i in = _mm256_cmpgt_epi32(_mm256_set1_epi32(buckets ^ INT32_MIN), _mm256_xor_si256(q, flip));
        const __m256i normal = _mm256_cmpgt_epi32(b, _mm256_set1_epi32(0x7FFFFF));  // p >= 0: the sign is clear
        const __m256i m = _mm256_or_si256(_mm256_and_si256(b, _mm256_set1_epi32(0x7FFFFF)),
                                          _mm256_and_si256(normal, _mm256_set1_epi32(0x800000)));
        _mm256_store_si256(reinterpret_cast<__m256i*>(index + t), _mm256_and_si256(q, _mm256_set1_epi32(buckets - 1)));
        _mm256_store_si256(reinterpret_cast<__m256i*>(mant + t), _mm256_and_si256(m, in));
      }
#endif
      for (; t < n; t++) {
        const uint32_t b = rkv::f32_bits(p[i0 + t]);
        const uint32_t q = (b >> 15) - base;
        index[t] = q & static_cast<uint32_t>(buckets - 1);
        mant[t] = q < static_cast<uint32_t>(buckets) ? (b & 0x7FFFFFu) | (b > 0x7FFFFFu ? 0x800000u : 0u) : 0u;
      }
      for (t = 0; t < n; t++) sum[index[t]] += mant[t];
    }
    for (int e = 0; e < width_; e++) {
      const double scale = mantissa_unit(lo_ + e);
      for (int32_t k = e * 256; k < (e + 1) * 256; k++) sub_mass_[k] = static_cast<double>(sum[k]) * scale;
    }
  }

  void gather(int q) {
    int32_t n = 0;
    uint64_t* keys = s_.order.data();
    const uint32_t uq = static_cast<uint32_t>(q);
    const float* p = s_.p.data();
    int32_t i = 0;
#if defined(__x86_64__)
    if (s_.avx512) {
      n = gather_bucket_avx512(p, vocab_, uq, keys);
      i = vocab_;
    }
#endif
#if defined(RKV_EXP_AVX2)
    // a bucket holds a small share of the row: test 8 tokens at once, store only those that match
    const __m256i want = _mm256_set1_epi32(q);
    for (; i + 8 <= vocab_; i += 8) {  // (AVX-512 has done them all)
      const __m256i b = _mm256_castps_si256(_mm256_loadu_ps(p + i));
      unsigned hit = static_cast<unsigned>(
          _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(_mm256_srli_epi32(b, 15), want))));
      for (; hit; hit &= hit - 1) {
        const int32_t id = i + __builtin_ctz(hit);
        const uint32_t bits = rkv::f32_bits(p[id]);
        keys[n] = order_key(bits, id);
        n += bits != 0;
      }
    }
#endif
    for (; i < vocab_; i++) {  // branch-free: a token outside the bucket is overwritten
      const uint32_t bits = rkv::f32_bits(p[i]);
      keys[n] = order_key(bits, i);
      n += (bits >> 15) == uq && bits != 0;
    }
    n_ = n;
    bucket_ = q;
    fine_ = -1;
    if (n <= kFineMin) {
      std::sort(keys, keys + n);
      return;
    }
    // the next level's masses: one exponent, so exact sums as in the levels above
    std::fill(fine_mass_, fine_mass_ + 256, 0.0);
    for (int32_t j = 0; j < n; j++) fine_mass_[fine_bits(keys[j])] += key_p(keys[j]);
  }

  // Brings the keys of fine bucket f to the front of the bucket's, sorted (the rest stay behind
  // them, for a later walk into another fine bucket).
  void refine(int f) {
    uint64_t* keys = s_.order.data();
    const uint32_t uf = static_cast<uint32_t>(f);
    uint64_t* mid = std::partition(keys, keys + n_, [uf](uint64_t k) { return fine_bits(k) == uf; });
    std::sort(keys, mid);
    fine_n_ = static_cast<int32_t>(mid - keys);
    fine_ = f;
  }

  RowScratch& s_;
  const int32_t vocab_;
  const double* mass_exp_;
  int lo_ = 256;  // sub_mass_[j] is for exponent lo_ + j / 256 (none yet)
  int width_ = kWindow;  // exponents in the window
  double* const sub_mass_ = s_.window_mass.data();  // [exponent - lo_][8 mantissa bits]
  int bucket_ = -1;  // the bucket s.order holds: sorted, or (n_ > kFineMin) fine bucket fine_ first
  int32_t n_ = 0;
  double fine_mass_[256];  // the next 8 mantissa bits' masses, where n_ > kFineMin
  int fine_ = -1;          // the fine bucket sorted at the front of s.order (none yet)
  int32_t fine_n_ = 0;
};

}  // namespace sampling
}  // namespace rkv
