// ISA-generic CPU attention core. Included once per instruction set inside its own namespace
// (see attention_cpu_isa.cpp), after that namespace defines `struct I` (the vector ISA: W lanes,
// loads that convert cache dtypes in registers, exp2, a transpose-reduction) under the
// matching `#pragma GCC target`. No include guard on purpose, here or in the pieces below,
// which it includes in this order (each uses what the ones before it define):
//   attention_cpu_prefetch.h  K/V row pointers of a block, prefetching, e4m3 NaN scans
//   attention_cpu_tiles.h     scores, online softmax and value (P . V) tiles of one block
//   attention_cpu_prefill.h   prefill: f32 packing, transposed-K scores, the head-by-head loop
//   attention_cpu_decode.h    decode: the token-major loops (grouped and head-wise)
//
// Every loop works on R query rows that share one KV head (the G query heads of a GQA group
// for decode; q_tile x G rows for prefill) over a token range of one sequence, block by block:
//   scores  S[R][BT] = Q . K^T for a block of BT tokens (register tiles of GB rows x TB tokens,
//                      each K vector converted once per GB rows, one transpose-reduction per
//                      W dot products),
//   softmax per row, online (base-2 max/sum), masked by a per-row visible range [lo, hi),
//   values  O[R][hd] += P . V (register tiles of RB rows x CB head_dim chunks, each V vector
//                      converted once per RB rows).
// Each K/V row is therefore read once for all R rows: GQA groups read K/V once per KV head.
// Rows of the next block (or group of heads) are prefetched while the current one is computed.

#include "attention_cpu_prefetch.h"
#include "attention_cpu_tiles.h"
#include "attention_cpu_prefill.h"
#include "attention_cpu_decode.h"
