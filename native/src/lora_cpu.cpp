// LoRA adapters over a mixed batch (CPU), in the SGMV shape of Punica / S-LoRA: the batch's rows
// come in segments, each with the adapter slot its request uses (or none), and one call adds
// scale_s * B_s (A_s x) to every adapted row of one projection. The adapted rows are grouped by
// slot and cut into chunks of up to kRowChunk rows, so a chunk's rows share every load of their
// adapter's factors. The shrink (t = A x, rank values per row) runs per chunk, four rows of A a
// pass; then the expand (y += scale B t) per chunk and block of output columns, so a decode step
// of a few rows still spreads over the threads. The expand transposes each 16-column block of B
// once for the chunk and computes 16 columns a vector: B is [n, rank] row-major, and a dot product
// of rank values per column is a latency-bound chain (the expand was most of the kernel's time).
// Rows of the base model are skipped. f32 throughout, accumulation in a fixed order (explicit fused
// multiply-adds in the expand): a row's delta is the same bits whatever is batched with it.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "rkv_common.h"
#include "rkv_parallel.h"

namespace {

// Below this many multiply-adds an OpenMP region costs more than it saves.
constexpr int64_t kParallelWork = int64_t{1} << 15;
// Output columns per expand work item.
constexpr int64_t kColumnBlock = 256;
// Rows of one slot per expand work item: they share each transposed block of B.
constexpr int32_t kRowChunk = 8;
// Columns of one transposed block of B (one vector of f32 accumulators).
constexpr int kVec = 16;

int validate(const rkv_lora_params* p) {
  RKV_CHECK_PTR(p);
  RKV_CHECK(p->rows >= 0, "rkv_lora_apply: rows must not be negative, got %lld", static_cast<long long>(p->rows));
  RKV_CHECK(p->k > 0 && p->n > 0, "rkv_lora_apply: k and n must be positive, got k %d, n %d", p->k, p->n);
  RKV_CHECK(p->y_offset >= 0 && p->y_offset + p->n <= p->y_pitch,
            "rkv_lora_apply: columns [%lld, %lld) lie outside a y row of %lld", static_cast<long long>(p->y_offset),
            static_cast<long long>(p->y_offset + p->n), static_cast<long long>(p->y_pitch));
  RKV_CHECK(p->num_segments >= 0, "rkv_lora_apply: num_segments must not be negative, got %d", p->num_segments);
  RKV_CHECK(p->num_slots >= 0 && p->max_rank >= 0, "rkv_lora_apply: num_slots and max_rank must not be negative");
  if (p->rows == 0) return RKV_OK;
  RKV_CHECK(p->num_segments > 0, "rkv_lora_apply: %lld rows but no segments", static_cast<long long>(p->rows));
  RKV_CHECK_PTR(p->x);
  RKV_CHECK_PTR(p->y);
  RKV_CHECK_PTR(p->seg_indptr);
  RKV_CHECK_PTR(p->seg_slot);
  RKV_CHECK(p->seg_indptr[0] == 0 && p->seg_indptr[p->num_segments] == p->rows,
            "rkv_lora_apply: seg_indptr must run from 0 to rows (%lld), got %d .. %d",
            static_cast<long long>(p->rows), p->seg_indptr[0], p->seg_indptr[p->num_segments]);
  bool any = false;
  for (int32_t i = 0; i < p->num_segments; i++) {
    RKV_CHECK(p->seg_indptr[i] <= p->seg_indptr[i + 1], "rkv_lora_apply: seg_indptr decreases at segment %d", i);
    const int32_t s = p->seg_slot[i];
    RKV_CHECK(s >= -1 && s < p->num_slots, "rkv_lora_apply: seg_slot[%d] = %d is outside [-1, %d)", i, s,
              p->num_slots);
    if (s < 0) continue;
    const rkv_lora_slot& sl = p->slots[s];
    RKV_CHECK(sl.rank >= 0 && sl.rank <= p->max_rank, "rkv_lora_apply: slot %d has rank %d, outside [0, %d]", s,
              sl.rank, p->max_rank);
    if (sl.rank == 0) continue;
    RKV_CHECK(sl.a != nullptr && sl.b != nullptr, "rkv_lora_apply: slot %d has rank %d but NULL factors", s, sl.rank);
    any = true;
  }
  if (!any) return RKV_OK;
  RKV_CHECK_PTR(p->slots);
  RKV_CHECK_PTR(p->scratch);
  RKV_CHECK(!rkv::overlaps(p->x, p->rows * p->k * 4, p->y, p->rows * p->y_pitch * 4), "rkv_lora_apply: y must not overlap x");
  return RKV_OK;
}

// a . x over n with a fixed assignment of elements to partial sums (element c to lane c % kLanes),
// so a row's result does not depend on its address or on the rows batched with it (an omp simd
// reduction may peel for alignment, which moves elements between lanes).
constexpr int kLanes = 16;
float dot(const float* a, const float* x, int64_t n) {
  float acc[kLanes] = {};
  int64_t c = 0;
  for (; c + kLanes <= n; c += kLanes) {
    for (int l = 0; l < kLanes; l++) acc[l] += a[c + l] * x[c + l];
  }
  float s = 0.f;
  for (int l = 0; l < kLanes; l++) s += acc[l];
  for (; c < n; c++) s += a[c] * x[c];
  return s;
}

// dot(a + q * k, x, n) for q < 4 in one pass over x, each with dot's lanes and order.
void dot4(const float* a, int64_t k, const float* x, int64_t n, float* out) {
  float acc[4][kLanes] = {};
  int64_t c = 0;
  for (; c + kLanes <= n; c += kLanes) {
    for (int q = 0; q < 4; q++) {
      for (int l = 0; l < kLanes; l++) acc[q][l] += a[q * k + c + l] * x[c + l];
    }
  }
  for (int q = 0; q < 4; q++) {
    float s = 0.f;
    for (int l = 0; l < kLanes; l++) s += acc[q][l];
    for (int64_t cc = c; cc < n; cc++) s += a[q * k + cc] * x[cc];
    out[q] = s;
  }
}

// One expand work item: columns [j0, j1) of the rows rows[0, count) of one slot.
// bt: rank * kVec scratch for a transposed block of B.
void expand(const rkv_lora_params* p, const rkv_lora_slot* sl, const int32_t* rows, int32_t count, int64_t j0,
            int64_t j1, float* bt) {
  const int32_t rank = sl->rank;
  const float scale = sl->scale;
  for (int64_t jb = j0; jb < j1; jb += kVec) {
    const int w = static_cast<int>(std::min<int64_t>(kVec, j1 - jb));
    const float* b = sl->b + jb * rank;
    if (w == kVec) {
      for (int32_t r = 0; r < rank; r++) {
        for (int jj = 0; jj < kVec; jj++) bt[r * kVec + jj] = b[jj * rank + r];
      }
    } else {
      for (int32_t r = 0; r < rank; r++) {
        for (int jj = 0; jj < kVec; jj++) bt[r * kVec + jj] = jj < w ? b[jj * rank + r] : 0.f;
      }
    }
    for (int32_t i = 0; i < count; i++) {
      const float* t = p->scratch + static_cast<int64_t>(rows[i]) * p->max_rank;
      float acc[kVec] = {};
      for (int32_t r = 0; r < rank; r++) {
        const float tr = t[r];
        for (int jj = 0; jj < kVec; jj++) acc[jj] = std::fma(bt[r * kVec + jj], tr, acc[jj]);
      }
      float* y = p->y + static_cast<int64_t>(rows[i]) * p->y_pitch + p->y_offset + jb;
      for (int jj = 0; jj < w; jj++) y[jj] = std::fma(scale, acc[jj], y[jj]);
    }
  }
}

const rkv_lora_slot* active(const rkv_lora_params* p, int32_t s) {
  return s >= 0 && p->slots[s].rank > 0 ? &p->slots[s] : nullptr;
}

}  // namespace

extern "C" {

RKV_API int rkv_lora_apply(const rkv_lora_params* p) {
  const int rc = validate(p);
  if (rc != RKV_OK || p->rows == 0) return rc;
  int64_t work = 0;
  for (int32_t i = 0; i < p->num_segments; i++) {
    const rkv_lora_slot* sl = active(p, p->seg_slot[i]);
    if (sl != nullptr) work += int64_t{p->seg_indptr[i + 1] - p->seg_indptr[i]} * sl->rank * (p->k + p->n);
  }
  if (work == 0) return RKV_OK;
  const bool parallel = work >= kParallelWork;
  const int64_t k = p->k, n = p->n, mr = p->max_rank;
  // the adapted rows by slot, in row order, cut into chunks of at most kRowChunk rows
  struct Chunk {
    int32_t slot, first, count;
  };
  thread_local std::vector<int32_t> order, start;
  thread_local std::vector<Chunk> chunks;
  start.assign(static_cast<size_t>(p->num_slots) + 1, 0);
  for (int32_t i = 0; i < p->num_segments; i++) {
    if (active(p, p->seg_slot[i]) != nullptr) start[p->seg_slot[i] + 1] += p->seg_indptr[i + 1] - p->seg_indptr[i];
  }
  for (int32_t s = 0; s < p->num_slots; s++) start[s + 1] += start[s];
  order.resize(static_cast<size_t>(start[p->num_slots]));
  chunks.clear();
  {
    thread_local std::vector<int32_t> fill;
    fill.assign(start.begin(), start.end() - 1);
    for (int32_t i = 0; i < p->num_segments; i++) {
      const int32_t s = p->seg_slot[i];
      if (active(p, s) == nullptr) continue;
      for (int32_t row = p->seg_indptr[i]; row < p->seg_indptr[i + 1]; row++) order[fill[s]++] = row;
    }
  }
  for (int32_t s = 0; s < p->num_slots; s++) {
    for (int32_t f = start[s]; f < start[s + 1]; f += kRowChunk) chunks.push_back({s, f, std::min(kRowChunk, start[s + 1] - f)});
  }
  // shrink: t[row, r] = a[r, :] . x[row, :], per chunk: four rows of A at a time serve its rows
  const std::vector<Chunk>& ch = chunks;
  const std::vector<int32_t>& ord = order;
  rkv::parallel_for(static_cast<int64_t>(ch.size()), parallel, [&](int64_t item) {
    const Chunk& c = ch[static_cast<size_t>(item)];
    const rkv_lora_slot* sl = &p->slots[c.slot];
    int32_t r = 0;
    for (; r + 4 <= sl->rank; r += 4) {
      for (int32_t i = 0; i < c.count; i++) {
        const int64_t row = ord[static_cast<size_t>(c.first + i)];
        dot4(sl->a + r * k, k, p->x + row * k, k, p->scratch + row * mr + r);
      }
    }
    for (; r < sl->rank; r++) {
      for (int32_t i = 0; i < c.count; i++) {
        const int64_t row = ord[static_cast<size_t>(c.first + i)];
        p->scratch[row * mr + r] = dot(sl->a + r * k, p->x + row * k, k);
      }
    }
  });
  // expand: y[row, off + j] += scale * b[j, :] . t[row, :], per (chunk, block of columns)
  const int64_t blocks = (n + kColumnBlock - 1) / kColumnBlock;
  const int32_t rank_cap = mr;
  rkv::parallel_for(static_cast<int64_t>(ch.size()) * blocks, parallel, [&](int64_t item) {
    thread_local std::vector<float> bt;
    if (bt.size() < static_cast<size_t>(rank_cap) * kVec) bt.resize(static_cast<size_t>(rank_cap) * kVec);
    const Chunk& c = ch[static_cast<size_t>(item / blocks)];
    const int64_t j0 = (item % blocks) * kColumnBlock;
    expand(p, &p->slots[c.slot], ord.data() + c.first, c.count, j0, std::min(n, j0 + kColumnBlock), bt.data());
  });
  return RKV_OK;
}

}  // extern "C"
