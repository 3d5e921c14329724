// Token sampling on the CPU (rkv_sample): softmax(logits / T), optionally cut to the top-p
// nucleus, one draw per row from the caller's uniform number. The engine samples every
// non-greedy row of a decode step here: in Java, Math.exp over the vocabulary of 64 rows took a
// fifth of a small model's decode step, and top-p sorting most of the rest.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <vector>

#include "rkv_argmax.h"
#include "rkv_common.h"
#include "rkv_dense_math.h"
#include "rkv_dtype.h"
#include "rkv_exp_avx2.h"
#include "rkv_parallel.h"
#include "rkv_region_scratch.h"

namespace {

constexpr int64_t kParallelElems = int64_t{1} << 15;
// Probabilities are summed per chunk; the draw walks the chunk sums, then one chunk's tokens.
constexpr int32_t kChunk = 256;

struct RowScratch {
  std::vector<float> p;         // probabilities, unnormalized (the maximum's is 1)
  std::vector<double> chunk;    // their sums per kChunk tokens
  std::vector<uint64_t> order;  // nucleus candidates as order_key
  RowScratch(int32_t vocab, bool cut)  // cut: some row has a top-p below 1 (needs order)
      : p(static_cast<size_t>(vocab)), chunk(static_cast<size_t>((vocab + kChunk - 1) / kChunk)),
        order(cut ? static_cast<size_t>(vocab) : 0) {}
};

// The nucleus order as one integer: ascending keys go by p down, then id up.
inline uint64_t order_key(uint32_t p_bits, int32_t id) { return (uint64_t{~p_bits} << 32) | static_cast<uint32_t>(id); }
inline int32_t key_id(uint64_t key) { return static_cast<int32_t>(key & 0xFFFFFFFFu); }
inline float key_p(uint64_t key) { return rkv::bits_f32(~static_cast<uint32_t>(key >> 32)); }

// p[i] = exp_approx((l[i] - max) * inv_t), 0 for NaN; fills the chunk sums and returns their sum.
double probabilities(const float* l, int32_t vocab, float max, float inv_t, RowScratch& s) {
  double total = 0;
  for (int32_t c0 = 0; c0 < vocab; c0 += kChunk) {
    const int32_t c1 = std::min(vocab, c0 + kChunk);
    double sum = 0;
    int32_t i = c0;
#if defined(RKV_EXP_AVX2)
    __m256d acc = _mm256_setzero_pd();
    for (; i + 8 <= c1; i += 8) {
      const __m256 v = _mm256_loadu_ps(l + i);
      __m256 e = rkv::dense::exp_approx8(_mm256_mul_ps(_mm256_sub_ps(v, _mm256_set1_ps(max)), _mm256_set1_ps(inv_t)));
      e = _mm256_blendv_ps(e, _mm256_setzero_ps(), _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
      _mm256_storeu_ps(s.p.data() + i, e);
      acc = _mm256_add_pd(acc, _mm256_cvtps_pd(_mm256_castps256_ps128(e)));
      acc = _mm256_add_pd(acc, _mm256_cvtps_pd(_mm256_extractf128_ps(e, 1)));
    }
    alignas(32) double lanes[4];
    _mm256_store_pd(lanes, acc);
    sum = (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
#endif
    for (; i < c1; i++) {
      const float e = std::isnan(l[i]) ? 0.f : rkv::dense::exp_approx((l[i] - max) * inv_t);
      s.p[static_cast<size_t>(i)] = e;
      sum += e;
    }
    s.chunk[static_cast<size_t>(c0 / kChunk)] = sum;
    total += sum;
  }
  return total;
}

// The first token in id order at which the running mass passes target (chunk sums first).
int32_t draw_in_order(const RowScratch& s, int32_t vocab, double target) {
  double acc = 0;
  for (int32_t c0 = 0; c0 < vocab; c0 += kChunk) {
    const double cs = s.chunk[static_cast<size_t>(c0 / kChunk)];
    if (acc + cs > target) {
      double run = acc;
      for (int32_t i = c0; i < std::min(vocab, c0 + kChunk); i++) {
        run += s.p[static_cast<size_t>(i)];
        if (s.p[static_cast<size_t>(i)] > 0.f && run > target) return i;
      }
    }
    acc += cs;  // not crossed (or, by rounding, not inside the chunk): go on
  }
  for (int32_t i = vocab - 1; i > 0; i--)  // rounding past the end: the last possible token
    if (s.p[static_cast<size_t>(i)] > 0.f) return i;
  return 0;
}

// Sorts the tokens with p at or above 2^(min_exp - 127) into s.order (p down, id up); returns
// their count.
int32_t nucleus_candidates(RowScratch& s, int32_t vocab, uint32_t min_exp) {
  int32_t n = 0;
  for (int32_t i = 0; i < vocab; i++) {
    const uint32_t b = rkv::f32_bits(s.p[static_cast<size_t>(i)]);
    if (b != 0 && (b >> 23) >= min_exp) s.order[static_cast<size_t>(n++)] = order_key(b, i);
  }
  std::sort(s.order.begin(), s.order.begin() + n);
  return n;
}

// Up to max(this, vocab / 32) candidates (a lower bound of their count) the nucleus is sorted;
// past it (flat rows, much of the vocabulary in the nucleus) the cut and the draw are each found
// by a walk over p's bits (RadixWalk), which reads the row three or four times but sorts only a
// bucket or two. Zen 5, 1 thread, T 0.8, top-p 0.9, 32000 logits ~ N(0, 0.3): sorting took
// 1640 us a row, the walk 79 (no cut: 25); N(0, 2) 281 -> 73; 128256 ~ N(0, 0.3) 7300 -> 332.
// N(0, 2.5) 127 -> 98 (vocab / 16 as the threshold had sorted it: 129). Below the threshold
// (peaked rows: N(0, 3) to N(0, 8)) the sort is as fast as the walk or faster.
constexpr int32_t kSortMinCandidates = 512;

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
// and sorted (kept for a second walk into the same bucket). A bucket is entered when the mass
// ahead of it plus its own reaches the target; where rounding lets no bucket reach it, the walk
// takes the last token with p > 0, as the sorted walk does.
class RadixWalk {
 public:
  RadixWalk(RowScratch& s, int32_t vocab, const double* mass_by_exp) : s_(s), vocab_(vocab), mass_exp_(mass_by_exp) {}

  // strict: the mass must pass the target (the draw); else reach it (the cut)
  Crossing cross(double target, bool strict) {
    double cum = 0;
    const int e = pick(mass_exp_, 256, target, strict, cum);
    if (e < lo_ || e >= lo_ + kWindow) histogram(e);
    const int q = (e << 8) | pick(sub_mass_ + (e - lo_) * 256, 256, target, strict, cum);
    if (q != bucket_) gather(q);
    const uint64_t* keys = s_.order.data();
    for (int32_t j = 0; j < n_; j++) {
      const float p = key_p(keys[j]);
      if (reaches(cum + p, target, strict) || j + 1 == n_) return {keys[j], cum, p};
      cum += p;
    }
    return {0, 0, 0};  // not reached: a picked bucket holds a token with p > 0
  }

 private:
  static constexpr int kWindow = 16;  // exponents per sub-bucket pass (32 KiB of masses)

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

  // Sub-bucket masses of exponents [e, e + kWindow) (the walk goes up from the cut), branch-free:
  // a token outside the window adds 0 to the bucket its low bits name (one spare bucket would
  // chain the adds of every token below the window, most of a peaked row).
  void histogram(int e) {
    lo_ = std::min(e, 256 - kWindow);
    std::fill(sub_mass_, sub_mass_ + kWindow * 256, 0.0);
    const uint32_t base = static_cast<uint32_t>(lo_) << 8;
    for (int32_t i = 0; i < vocab_; i++) {
      const uint32_t b = rkv::f32_bits(s_.p[static_cast<size_t>(i)]);
      const uint32_t q = (b >> 15) - base;  // wraps below the window
      sub_mass_[q & (kWindow * 256 - 1)] += rkv::bits_f32(b & (0u - uint32_t{q < kWindow * 256}));
    }
  }

  void gather(int q) {
    int32_t n = 0;
    uint64_t* keys = s_.order.data();
    const uint32_t uq = static_cast<uint32_t>(q);
    const float* p = s_.p.data();
    int32_t i = 0;
#if defined(RKV_EXP_AVX2)
    // a bucket holds a small share of the row: test 8 tokens at once, store only those that match
    const __m256i want = _mm256_set1_epi32(q);
    for (; i + 8 <= vocab_; i += 8) {
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
    std::sort(keys, keys + n);
    n_ = n;
    bucket_ = q;
  }

  RowScratch& s_;
  const int32_t vocab_;
  const double* mass_exp_;
  int lo_ = 256;  // sub_mass_[j] is for exponent lo_ + j (none yet)
  double sub_mass_[kWindow * 256];  // [exponent - lo_][8 mantissa bits]
  int bucket_ = -1;  // the bucket s.order holds, sorted
  int32_t n_ = 0;
};

// The top-p draw: the nucleus is the shortest prefix of the tokens by decreasing p whose mass
// reaches keep. Only tokens whose binary exponent can reach into it are sorted, or, where they
// are many, none but a bucket or two (RadixWalk).
int32_t draw_nucleus(RowScratch& s, int32_t vocab, double total, float top_p, double u) {
  const double keep = static_cast<double>(top_p) * total;
  // mass by exponent field (p >= 0), in four interleaved copies: most p of a row share a few
  // exponents, and one copy would chain every add on the last one (4 cycles each)
  double part[4][256] = {};
  int32_t i = 0;
  for (; i + 4 <= vocab; i += 4)
    for (int k = 0; k < 4; k++) {
      const float v = s.p[static_cast<size_t>(i + k)];
      part[k][rkv::f32_bits(v) >> 23] += v;
    }
  for (; i < vocab; i++) part[0][rkv::f32_bits(s.p[static_cast<size_t>(i)]) >> 23] += s.p[static_cast<size_t>(i)];
  double mass[256];
  for (int e = 0; e < 256; e++) mass[e] = (part[0][e] + part[1][e]) + (part[2][e] + part[3][e]);
  uint32_t min_exp = 1;  // every positive normal p (subnormals join in the fallback below)
  double cum = 0;
  // at least this many candidates: a p of exponent field e is below 2^(e - 126)
  double candidates = 0;
  for (int e = 255; e >= 1; e--) {
    cum += mass[e];
    candidates += std::ldexp(mass[e], 126 - e);
    if (cum >= keep * (1 + 1e-6)) {
      min_exp = static_cast<uint32_t>(e);
      break;
    }
  }
  if (candidates > std::max(kSortMinCandidates, vocab / 32)) {
    RadixWalk walk(s, vocab, mass);
    const Crossing cut = walk.cross(keep, false);
    const Crossing draw = walk.cross(u * (cut.before + static_cast<double>(cut.p)), true);
    // past the cut only by rounding: the cut's token is the last of the nucleus
    return key_id(draw.key > cut.key ? cut.key : draw.key);
  }
  for (;;) {
    const int32_t n = nucleus_candidates(s, vocab, min_exp);
    double acc = 0;
    int32_t cut = 0;
    while (cut < n) {
      acc += s.p[static_cast<size_t>(key_id(s.order[static_cast<size_t>(cut)]))];
      cut++;
      if (acc >= keep) break;
    }
    if (acc < keep && min_exp > 0) {  // rounding left the candidates short: take every token
      min_exp = 0;
      continue;
    }
    const double target = u * acc;
    double run = 0;
    for (int32_t j = 0; j < cut; j++) {
      const int32_t id = key_id(s.order[static_cast<size_t>(j)]);
      run += s.p[static_cast<size_t>(id)];
      if (run > target) return id;
    }
    return key_id(s.order[static_cast<size_t>(cut - 1)]);
  }
}

int32_t sample_row(const float* l, int32_t vocab, float temperature, float top_p, double u, RowScratch& s) {
  if (temperature == 0.f) return rkv::dense::argmax_row(l, vocab);
  const float max = rkv::dense::row_max(l, vocab);
  if (!std::isfinite(max)) return rkv::dense::argmax_row(l, vocab);  // no finite logit (or +inf: argmax)
  const double total = probabilities(l, vocab, max, 1.f / temperature, s);
  if (top_p >= 1.f) return draw_in_order(s, vocab, u * total);
  return draw_nucleus(s, vocab, total, top_p, u);
}

}  // namespace

extern "C" {

RKV_API int rkv_sample(const float* logits, int64_t rows, int32_t vocab, const float* temperature,
                       const float* top_p, const double* uniform, int32_t* out) {
  RKV_CHECK(rows >= 0, "rkv_sample: rows must not be negative, got %lld", static_cast<long long>(rows));
  RKV_CHECK(vocab > 0, "rkv_sample: vocab must be positive, got %d", vocab);
  if (rows == 0) return RKV_OK;
  RKV_CHECK_PTR(logits);
  RKV_CHECK_PTR(temperature);
  RKV_CHECK_PTR(top_p);
  RKV_CHECK_PTR(uniform);
  RKV_CHECK_PTR(out);
  bool cut = false;  // some row cuts by top-p: the scratch needs the nucleus order
  for (int64_t r = 0; r < rows; r++) {
    RKV_CHECK(std::isfinite(temperature[r]) && temperature[r] >= 0.f,
              "rkv_sample: temperature[%lld] = %g is not finite and >= 0", static_cast<long long>(r), temperature[r]);
    RKV_CHECK(top_p[r] > 0.f && top_p[r] <= 1.f, "rkv_sample: top_p[%lld] = %g is outside (0, 1]",
              static_cast<long long>(r), top_p[r]);
    RKV_CHECK(uniform[r] >= 0.0 && uniform[r] < 1.0, "rkv_sample: uniform[%lld] = %g is outside [0, 1)",
              static_cast<long long>(r), uniform[r]);
    cut = cut || (temperature[r] > 0.f && top_p[r] < 1.f);
  }
  rkv::RegionScratch region;
  rkv::parallel_region(rows * vocab >= kParallelElems && rows > 1, [&] {
    std::optional<RowScratch> s;
    if (region.build(s, vocab, cut)) {
#pragma omp for schedule(dynamic, 1)
      for (int64_t r = 0; r < rows; r++)
        out[r] = sample_row(logits + r * vocab, vocab, temperature[r], top_p[r], uniform[r], *s);
    }
  });
  if (region.failed()) return rkv::set_error(RKV_ERR_OUT_OF_MEMORY, "rkv_sample: out of memory");
  return RKV_OK;
}

}  // extern "C"
