// Non-temporal (streaming) copies for outputs that are not read again soon: large KV
// scatters (prefill batches) and bulk FP8 quantization. Streaming stores skip the
// read-for-ownership of every destination line and do not evict the cache, so a copy moves
// read + written bytes only, as a large memcpy does.
#pragma once

#include <stdint.h>

#include "kv_convert.h"

namespace rkv {

// Calls writing more than this many bytes stream their output (beyond what the caches of
// the core that wrote it would keep anyway).
constexpr int64_t kStreamBytes = int64_t{8} << 20;

// Copies bytes from src to dst with streaming stores where the CPU has them (plain memcpy
// otherwise). Call stream_fence() before the data is handed to another thread.
void stream_copy(void* dst, const void* src, int64_t bytes);

// Converts n elements (src element size ss, dst element size ds) with fn through a small
// L1-resident buffer and streams the result to dst; copy = true when fn is a plain copy
// (then src is streamed directly).
void stream_convert(const RowConverter& c, bool copy, const void* src, int ss, void* dst, int ds, int64_t n);

// Orders the calling thread's streaming stores before its later stores (sfence).
void stream_fence();

}  // namespace rkv
