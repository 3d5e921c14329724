// Split-KV planning of CPU decode: one work item per sequence covering all its KV heads (the
// K/V bytes of a token block are one contiguous region per page). With several threads,
// sequences longer than the chunk length are split so that there are about 4 items per thread;
// the chunks of a sequence form a group whose partial results are merged afterwards with the
// merge_state arithmetic (in KV order).
#pragma once

#include <cstdint>
#include <vector>

namespace rkv {
namespace attn {

struct DecodeItem {
  int32_t b;
  int64_t t0, t1;  // KV positions [t0, t1) of sequence b
  int64_t part;    // index of the partial result, -1 when the item writes the output directly
};

struct DecodeGroup {
  int32_t b;
  int64_t part0, nparts;  // partial results part0 .. part0 + nparts - 1, in KV order
};

struct DecodePlan {
  std::vector<DecodeItem> items;
  std::vector<DecodeGroup> groups;
  int64_t nparts = 0;
};

// Plans the KV ranges [begin[b], end[b]) of every sequence for `threads` threads. Positions
// outside a sequence's range are in no item: they are never read.
DecodePlan plan_decode(const std::vector<int64_t>& begin, const std::vector<int64_t>& end, int threads);

}  // namespace attn
}  // namespace rkv
