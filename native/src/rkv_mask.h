// Attention masks shared by the CPU and CUDA kernels (RKV_HD: compiled for host and device;
// the CPU tests exercise them through the CPU kernels).
#pragma once

#include <stdint.h>

#include "rkv_common.h"

namespace rkv {

// First KV position a query at position `pos` sees under FlashInfer's sliding window
// convention: keys k with pos - window_left <= k <= pos; window_left < 0 means no window.
RKV_HD int64_t window_begin(int64_t pos, int32_t window_left) {
  return (window_left < 0 || pos <= (int64_t)window_left) ? 0 : pos - (int64_t)window_left;
}

// Last KV position a query at position `pos` sees: pos itself, or the last position of a
// bidirectional region [s, e) that holds pos (regions: bidir_regions[2*first .. 2*end)).
RKV_HD int64_t causal_last(int64_t pos, const int32_t* regions, int32_t first, int32_t end) {
  int64_t last = pos;
  for (int32_t r = first; r < end; r++) {
    const int64_t s = regions[2 * r], e = regions[2 * r + 1];
    if (s <= pos && pos < e && e - 1 > last) last = e - 1;
  }
  return last;
}

}  // namespace rkv
