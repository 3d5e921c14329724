// Host planning arithmetic of the CUDA attention kernels (rkv_cuda_attn_plan_batch): how many
// split-KV chunks a decode batch gets and which prefill work items (blocks) an append-prefill
// batch has. Plain C++ with no CUDA dependency, so the native CPU tests exercise exactly the
// code the CUDA library runs (native/tests/attn_plan_test.cpp).
#pragma once

#include <cstdint>
#include <cstdio>

namespace rkv_attn_plan {

// Query rows (token x head of one GQA group) handled by one prefill block.
constexpr int kPrefillRows = 16;
// Split-KV bounds: at most this many chunks per (sequence, kv head), each of at least
// kMinChunkTokens tokens (shorter chunks cost more in the merge than they save).
constexpr int kMaxSplits = 32;
constexpr int64_t kMinChunkTokens = 64;

// One prefill block: rows r0 .. r0 + kPrefillRows of sequence b's flattened (query token,
// head-in-group) list, for kv head kvh.
struct PrefillItem {
  int32_t b, kvh, r0, pad;
};

// Split-KV chunks per (sequence, kv head) for a decode batch: enough blocks for one full wave
// of the GPU (resident_blocks = blocks per SM at the kernel's occupancy x SMs) when
// batch x kv heads is smaller, never more than kMaxSplits and never so many that a chunk of the
// longest sequence gets fewer than kMinChunkTokens tokens.
inline int decode_splits(int64_t batch, int32_t num_kv_heads, int32_t resident_blocks, int64_t max_kv_len) {
  const int64_t blocks = batch * (int64_t)num_kv_heads;
  if (blocks <= 0) return 1;
  const int64_t target = resident_blocks > 0 ? resident_blocks : 1;
  int64_t n = (target + blocks - 1) / blocks;
  const int64_t by_len = (max_kv_len + kMinChunkTokens - 1) / kMinChunkTokens;
  if (n > by_len) n = by_len;
  if (n > kMaxSplits) n = kMaxSplits;
  return n < 1 ? 1 : (int)n;
}

// Floats of the decode partial-output buffer: per output row and split, head_dim values and
// one LSE. 0 when the batch is not split.
inline int64_t decode_partial_floats(int64_t batch, int32_t num_qo_heads, int32_t head_dim, int nsplit) {
  return nsplit <= 1 ? 0 : batch * num_qo_heads * (int64_t)nsplit * (head_dim + 1);
}

// Checks a host CSR (kv_indptr[batch+1], kv_last_page_len[batch]) and returns its longest
// sequence in *max_len; false with a message naming the entry otherwise.
inline bool kv_lengths(const int32_t* kv_indptr, const int32_t* last, int32_t batch, int32_t page_size,
                       int64_t* max_len, char* msg, size_t msg_size) {
  *max_len = 0;
  if (kv_indptr[0] != 0) {
    std::snprintf(msg, msg_size, "kv_indptr[0] must be 0, got %d", kv_indptr[0]);
    return false;
  }
  for (int32_t b = 0; b < batch; b++) {
    const int32_t pages = kv_indptr[b + 1] - kv_indptr[b];
    if (pages < 0) {
      std::snprintf(msg, msg_size, "kv_indptr is not monotone at %d: %d < %d", b + 1, kv_indptr[b + 1], kv_indptr[b]);
      return false;
    }
    if (pages == 0) continue;
    if (last[b] < 1 || last[b] > page_size) {
      std::snprintf(msg, msg_size, "kv_last_page_len[%d] = %d is outside 1..%d", b, last[b], page_size);
      return false;
    }
    const int64_t len = (int64_t)page_size * (pages - 1) + last[b];
    if (len > *max_len) *max_len = len;
  }
  return true;
}

// Number of prefill items of a batch (qo_indptr[batch+1], host), or -1 with a message when
// qo_indptr does not start at 0 or is not monotone.
inline int64_t prefill_item_count(const int32_t* qo_indptr, int32_t batch, int32_t group, int32_t num_kv_heads,
                                  char* msg, size_t msg_size) {
  if (qo_indptr[0] != 0) {
    std::snprintf(msg, msg_size, "qo_indptr[0] must be 0, got %d", qo_indptr[0]);
    return -1;
  }
  int64_t items = 0;
  for (int32_t b = 0; b < batch; b++) {
    const int32_t ql = qo_indptr[b + 1] - qo_indptr[b];
    if (ql < 0) {
      std::snprintf(msg, msg_size, "qo_indptr is not monotone at %d: %d < %d", b + 1, qo_indptr[b + 1], qo_indptr[b]);
      return -1;
    }
    const int64_t rows = (int64_t)ql * group;
    if (rows > INT32_MAX) {
      std::snprintf(msg, msg_size, "sequence %d has %lld query rows (q_len x group), more than int32", b, (long long)rows);
      return -1;
    }
    items += num_kv_heads * ((rows + kPrefillRows - 1) / kPrefillRows);
  }
  return items;
}

// Checks that no sequence has more new query tokens than tokens in its pages (they must already
// be in the cache); qo_indptr and the CSR must have passed the checks above.
inline bool q_fits_kv(const int32_t* qo_indptr, const int32_t* kv_indptr, const int32_t* last, int32_t batch,
                      int32_t page_size, char* msg, size_t msg_size) {
  for (int32_t b = 0; b < batch; b++) {
    const int32_t pages = kv_indptr[b + 1] - kv_indptr[b];
    const int64_t len = pages == 0 ? 0 : (int64_t)page_size * (pages - 1) + last[b];
    const int32_t ql = qo_indptr[b + 1] - qo_indptr[b];
    if (ql > len) {
      std::snprintf(msg, msg_size, "sequence %d has q_len %d > kv_len %lld", b, ql, (long long)len);
      return false;
    }
  }
  return true;
}

// Writes the prefill items (prefill_item_count of them) in (sequence, kv head, row block)
// order. qo_indptr must have passed prefill_item_count.
inline void fill_prefill_items(const int32_t* qo_indptr, int32_t batch, int32_t group, int32_t num_kv_heads,
                               PrefillItem* out) {
  int64_t i = 0;
  for (int32_t b = 0; b < batch; b++) {
    const int64_t rows = (int64_t)(qo_indptr[b + 1] - qo_indptr[b]) * group;
    for (int32_t h = 0; h < num_kv_heads; h++)
      for (int64_t r0 = 0; r0 < rows; r0 += kPrefillRows) out[i++] = PrefillItem{b, h, (int32_t)r0, 0};
  }
}

}  // namespace rkv_attn_plan
