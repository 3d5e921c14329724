// The CUDA attention planner's host arithmetic (native/cuda/attn_plan.h) on the CPU: the split-KV
// count of decode batches, the CSR checks and the prefill work items, which must cover every
// (sequence, kv head, query row) exactly once in rows of kPrefillRows.
#include "attn_plan.h"

#include <cstdio>
#include <cstring>
#include <vector>
#include "rkv_test.h"

namespace {



using namespace rkv_attn_plan;

void decode_split_counts() {
  // resident capacity 1056 blocks (8 per SM on 132 SMs)
  // one sequence, 8 kv heads: 1056 / 8 = 132 -> capped at kMaxSplits, long context
  EXPECT(decode_splits(1, 8, 1056, 1 << 20) == kMaxSplits, "got %d", decode_splits(1, 8, 1056, 1 << 20));
  // enough blocks already: no split
  EXPECT(decode_splits(512, 8, 1056, 1 << 20) == 1, "got %d", decode_splits(512, 8, 1056, 1 << 20));
  // ceil(1056 / 256) = 5 (the benchmark's batch of 32 x 8 kv heads)
  EXPECT(decode_splits(32, 8, 1056, 8192) == 5, "got %d", decode_splits(32, 8, 1056, 8192));
  // ceil(1056 / 40) = 27
  EXPECT(decode_splits(5, 8, 1056, 1 << 20) == 27, "got %d", decode_splits(5, 8, 1056, 1 << 20));
  // short sequences: every chunk keeps >= kMinChunkTokens tokens
  EXPECT(decode_splits(1, 8, 1056, 100) == 2, "got %d", decode_splits(1, 8, 1056, 100));
  EXPECT(decode_splits(1, 8, 1056, kMinChunkTokens) == 1, "got %d", decode_splits(1, 8, 1056, kMinChunkTokens));
  EXPECT(decode_splits(1, 8, 1056, 0) == 1, "empty batch rows: got %d", decode_splits(1, 8, 1056, 0));
  EXPECT(decode_splits(0, 8, 1056, 0) == 1, "batch 0: got %d", decode_splits(0, 8, 1056, 0));
  EXPECT(decode_splits(1, 1, 0, 1 << 20) == 1, "no occupancy figure: got %d", decode_splits(1, 1, 0, 1 << 20));
  for (int64_t len = 1; len < 5000; len += 37)
    for (int b = 1; b < 20; b += 3) {
      const int n = decode_splits(b, 4, 864, len);
      EXPECT(n >= 1 && n <= kMaxSplits, "b=%d len=%lld n=%d", b, (long long)len, n);
      EXPECT(n == 1 || (len + n - 1) / n >= kMinChunkTokens / 2, "b=%d len=%lld n=%d: chunks too short", b,
             (long long)len, n);
    }
  EXPECT(decode_partial_floats(3, 4, 64, 1) == 0, "unsplit");
  EXPECT(decode_partial_floats(3, 4, 64, 5) == 3LL * 4 * 5 * 65, "got %lld",
         (long long)decode_partial_floats(3, 4, 64, 5));
}

void csr_checks() {
  char msg[160];
  int64_t max_len = -1;
  const int32_t indptr[] = {0, 2, 2, 5};
  const int32_t last[] = {3, 99, 16};  // the empty sequence's last_page_len is ignored
  EXPECT(kv_lengths(indptr, last, 3, 16, &max_len, msg, sizeof msg), "%s", msg);
  EXPECT(max_len == 16 * 2 + 16, "max_len %lld", (long long)max_len);
  const int32_t bad_start[] = {1, 2};
  EXPECT(!kv_lengths(bad_start, last, 1, 16, &max_len, msg, sizeof msg) && std::strstr(msg, "kv_indptr[0]"), "%s", msg);
  const int32_t not_monotone[] = {0, 3, 2};
  EXPECT(!kv_lengths(not_monotone, last, 2, 16, &max_len, msg, sizeof msg) && std::strstr(msg, "not monotone at 2"),
         "%s", msg);
  const int32_t last_bad[] = {17};
  EXPECT(!kv_lengths(indptr, last_bad, 1, 16, &max_len, msg, sizeof msg) && std::strstr(msg, "kv_last_page_len[0] = 17"),
         "%s", msg);
  const int32_t qo_bad[] = {0, 4, 3};
  EXPECT(prefill_item_count(qo_bad, 2, 2, 2, msg, sizeof msg) == -1 && std::strstr(msg, "qo_indptr is not monotone at 2"),
         "%s", msg);
  const int32_t qo_fits[] = {0, 32, 32, 80};  // kv lens 32, 0, 48 (indptr {0, 2, 2, 5}, last {16, -, 16})
  const int32_t last_full[] = {16, 1, 16};
  EXPECT(q_fits_kv(qo_fits, indptr, last_full, 3, 16, msg, sizeof msg), "%s", msg);
  const int32_t qo_long[] = {0, 33, 33, 80};
  EXPECT(!q_fits_kv(qo_long, indptr, last_full, 3, 16, msg, sizeof msg) &&
             std::strstr(msg, "sequence 0 has q_len 33 > kv_len 32"),
         "%s", msg);
  const int32_t qo_empty[] = {0, 0, 1, 1};
  EXPECT(!q_fits_kv(qo_empty, indptr, last_full, 3, 16, msg, sizeof msg) && std::strstr(msg, "sequence 1"), "%s", msg);
  const int32_t qo_start[] = {2, 4};
  EXPECT(prefill_item_count(qo_start, 1, 2, 2, msg, sizeof msg) == -1 && std::strstr(msg, "qo_indptr[0]"), "%s", msg);
}

void prefill_items_cover_every_row_once() {
  char msg[160];
  const int32_t qo[] = {0, 1, 1, 20, 53};
  for (int group : {1, 4, 7}) {
    for (int nkv : {1, 3}) {
      const int64_t n = prefill_item_count(qo, 4, group, nkv, msg, sizeof msg);
      EXPECT(n >= 0, "%s", msg);
      std::vector<PrefillItem> items((size_t)n);
      fill_prefill_items(qo, 4, group, nkv, items.data());
      // count how often each (b, kvh, row) is covered
      std::vector<int> seen;
      std::vector<int64_t> base(5, 0);
      for (int b = 0; b < 4; b++) base[b + 1] = base[b] + (int64_t)(qo[b + 1] - qo[b]) * group * nkv;
      seen.assign((size_t)base[4], 0);
      for (const PrefillItem& it : items) {
        const int64_t rows = (int64_t)(qo[it.b + 1] - qo[it.b]) * group;
        EXPECT(it.b >= 0 && it.b < 4 && it.kvh >= 0 && it.kvh < nkv && it.r0 >= 0 && it.r0 < rows && it.r0 % kPrefillRows == 0,
               "item b=%d kvh=%d r0=%d", it.b, it.kvh, it.r0);
        for (int64_t r = it.r0; r < it.r0 + kPrefillRows && r < rows; r++) seen[(size_t)(base[it.b] + it.kvh * rows + r)]++;
      }
      for (size_t i = 0; i < seen.size(); i++) EXPECT(seen[i] == 1, "group %d nkv %d row %zu covered %d times", group, nkv, i, seen[i]);
      // rows per sequence: 1*g, 0, 19*g, 33*g -> blocks of 16 per kv head
      int64_t want = 0;
      for (int b = 0; b < 4; b++) want += nkv * (((int64_t)(qo[b + 1] - qo[b]) * group + kPrefillRows - 1) / kPrefillRows);
      EXPECT(n == want, "group %d nkv %d: %lld items, want %lld", group, nkv, (long long)n, (long long)want);
    }
  }
}

}  // namespace

int main() {
  decode_split_counts();
  csr_checks();
  prefill_items_cover_every_row_once();
  if (g_failures) {
    std::printf("%d failure(s)\n", g_failures);
    return 1;
  }
  std::printf("attn_plan_test: ok\n");
  return 0;
}
