// LoRA adapters over a mixed batch (CPU), in the SGMV shape of Punica / S-LoRA: the batch's rows
// come in segments, each with the adapter slot its request uses (or none), and one call adds
// scale_s * B_s (A_s x) to every adapted row of one projection. The shrink (A x, rank values per
// row) runs first for all rows, then the expand (B t) over rows and blocks of output columns, so
// a decode step of a few rows still spreads over the threads. Rows of the base model are skipped.
// f32 throughout, f32 accumulation in a fixed order: a row's delta is the same bits whatever is
// batched with it.
#include <algorithm>
#include <cstdint>

#include "rkv_common.h"
#include "rkv_parallel.h"

namespace {

// Below this many multiply-adds an OpenMP region costs more than it saves.
constexpr int64_t kParallelWork = int64_t{1} << 15;
// Output columns per expand work item.
constexpr int64_t kColumnBlock = 256;

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

// The slot of row r (segments are few and short: a binary search over seg_indptr).
int32_t slot_of(const rkv_lora_params* p, int64_t r) {
  const int32_t* end = p->seg_indptr + p->num_segments + 1;
  const int64_t seg = std::upper_bound(p->seg_indptr, end, static_cast<int32_t>(r)) - p->seg_indptr - 1;
  return p->seg_slot[seg];
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
  // shrink: t[row, r] = a[r, :] . x[row, :]
  rkv::parallel_for(p->rows, parallel, [&](int64_t row) {
    const rkv_lora_slot* sl = active(p, slot_of(p, row));
    if (sl == nullptr) return;
    const float* x = p->x + row * k;
    float* t = p->scratch + row * mr;
    for (int32_t r = 0; r < sl->rank; r++) t[r] = dot(sl->a + r * k, x, k);
  });
  // expand: y[row, off + j] += scale * b[j, :] . t[row, :]
  const int64_t blocks = (n + kColumnBlock - 1) / kColumnBlock;
  rkv::parallel_for(p->rows * blocks, parallel, [&](int64_t item) {
    const int64_t row = item / blocks;
    const rkv_lora_slot* sl = active(p, slot_of(p, row));
    if (sl == nullptr) return;
    const float* t = p->scratch + row * mr;
    float* y = p->y + row * p->y_pitch + p->y_offset;
    const int64_t j0 = (item % blocks) * kColumnBlock;
    const int64_t j1 = std::min(n, j0 + kColumnBlock);
    const int32_t rank = sl->rank;
    for (int64_t j = j0; j < j1; j++) {
      const float* b = sl->b + j * rank;
      float s = 0.f;
      for (int32_t r = 0; r < rank; r++) s += b[r] * t[r];
      y[j] += sl->scale * s;
    }
  });
  return RKV_OK;
}

}  // extern "C"
