// Host-side validation of copy_blocks' block mapping, shared by libradixkv (kv_cache.cpp)
// and libradixkv_cuda (kv_cache.cu): ids in [0, num_pages), destinations distinct and never
// a source (else the result would depend on the order of the copies).
#pragma once

#include <stdint.h>

#include <cstdio>
#include <vector>

namespace rkv {

// Returns true when the mapping is valid; otherwise writes the reason to msg.
inline bool check_block_mapping(const int64_t* block_mapping, int64_t num_pairs, int64_t num_pages, char* msg,
                                size_t msg_len) {
  std::vector<uint8_t> role((size_t)num_pages, 0);  // bit 0: source, bit 1: destination
  for (int64_t i = 0; i < 2 * num_pairs; ++i) {
    int64_t id = block_mapping[i];
    if (id < 0 || id >= num_pages) {
      std::snprintf(msg, msg_len, "block_mapping[%lld] = %lld is out of range [0, %lld)", (long long)i, (long long)id,
                    (long long)num_pages);
      return false;
    }
    if (i % 2 == 0) role[(size_t)id] |= 1;
  }
  for (int64_t p = 0; p < num_pairs; ++p) {
    int64_t d = block_mapping[2 * p + 1];
    if (role[(size_t)d] & 1) {
      std::snprintf(msg, msg_len, "destination page %lld (pair %lld) is also a source", (long long)d, (long long)p);
      return false;
    }
    if (role[(size_t)d] & 2) {
      std::snprintf(msg, msg_len, "destination page %lld appears twice (pair %lld)", (long long)d, (long long)p);
      return false;
    }
    role[(size_t)d] |= 2;
  }
  return true;
}

}  // namespace rkv
