// Split-KV planning of CPU decode (see attention_split_kv.h).
#include "attention_split_kv.h"

#include <algorithm>

#include "attention_cpu.h"

namespace rkv {
namespace attn {

DecodePlan plan_decode(const std::vector<int64_t>& begin, const std::vector<int64_t>& end, int threads) {
  const int32_t batch = (int32_t)end.size();
  int64_t total = 0;
  for (int32_t b = 0; b < batch; b++) total += end[b] - begin[b];
  int64_t chunk = INT64_MAX;
  if (threads > 1) {
    chunk = std::max<int64_t>(256, (total + 4 * threads - 1) / (4 * threads));
    chunk = (chunk + kBlock - 1) / kBlock * kBlock;
  }
  DecodePlan plan;
  for (int32_t b = 0; b < batch; b++) {
    const int64_t t0 = begin[b], len = end[b] - begin[b];
    const int64_t nch = len <= chunk ? 1 : (len + chunk - 1) / chunk;
    if (nch == 1) {
      plan.items.push_back({b, t0, end[b], -1});
    } else {
      plan.groups.push_back({b, plan.nparts, nch});
      for (int64_t k = 0; k < nch; k++)
        plan.items.push_back({b, t0 + k * chunk, std::min(end[b], t0 + (k + 1) * chunk), plan.nparts++});
    }
  }
  return plan;
}

}  // namespace attn
}  // namespace rkv
