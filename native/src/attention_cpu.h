// Internal interface of the CPU attention kernels, split by concern as FlashInfer does:
//   attention_cpu_isa.cpp    the per-ISA cores (attention_cpu_impl.h compiled for AVX-512, AVX2
//                            and scalar) and the choice between them (rkv_isa.h's cached probe)
//   attention_cpu_common.cpp argument validation and the row helpers shared by the entry points
//   attention_split_kv.cpp   split-KV planning of decode (work items and their merge groups)
//   attention_decode.cpp     rkv_decode_attention
//   attention_prefill.cpp    rkv_append_prefill_attention
//   attention_merge.cpp      rkv_merge_state
//
// Dequantization folding: vector loaders may return the cache value times a power of two
// (fp8 e4m3 is widened through f16 bit patterns, which yields value/256). The factor, the fp8
// scale and sm_scale are folded into q (for K) and into the final normalization (for V), so the
// inner loops never multiply by a scale.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "rkv_common.h"

namespace rkv {
namespace attn {

// The register-tile helpers of the CPU attention core (attention_cpu_tiles.h and
// attention_cpu_prefill.h, included by attention_cpu_impl.h): inlined so their accumulators stay
// in registers (an out-of-line tile spilled and zeroed them through the stack on every call).
#define RKV_ATTN_INLINE static inline __attribute__((always_inline))

constexpr int kBlock = 32;  // tokens per online-softmax block
// Prefill's (attend_rows_t) block: twice decode's, so that the per-row softmax work and each value
// tile's accumulator loads and stores come half as often per token (decode keeps 32: its grouped
// loop reads memory slower with 64).
// Measured: docs/measurements/kernel-constants.md#prefill-softmax-blocks-of-64-tokens
constexpr int kPrefillBlock = 64;
// Pseudo cache dtype for e4m3 blocks known to hold no NaN code: the vector loaders then skip
// the NaN fix-up (blocks are scanned once, 64 bytes at a time, in attend_rows_t).
constexpr int kE4M3Finite = 103;
// Pseudo cache dtype for bf16 rows read as element pairs (AVX-512 decode, head_dim % 32 == 0):
// each 32-element chunk widens into one vector of its even elements and one of its odd ones (a
// shift and a mask of one 64-byte load, against two zero-extending loads and two shifts). Q and O
// use that order too: attend_token_major permutes Q before the call and O back after it.
constexpr int kBf16Pairs = 104;
// Pseudo cache dtype for e4m3 rows widened by table lookup (AVX512-VBMI decode, head_dim % 64 ==
// 0): each 64-code chunk becomes four vectors through two 128-entry byte tables (the bf16 bits of
// every code, NaN codes included) and byte / word interleaves, with no f16 conversions and no NaN
// fix-up. The interleaves leave the chunk's 4-element groups transposed (a 4 x 4 transpose of
// 128-bit lanes, its own inverse); Q and O use that order too, as for kBf16Pairs.
constexpr int kE4M3Lut = 105;

// One sequence's pages seen from one KV head.
struct SeqView {
  const uint8_t* k_base;
  const uint8_t* v_base;
  const int32_t* pages;  // this sequence's page ids
  int32_t page_size;
  int32_t num_kv_heads;
  int32_t kv_head;
  int32_t head_dim;
  int32_t row_bytes;  // head_dim * element size
  int32_t dtype;
};

// The KV positions the query rows of one call see: row r sees [lo[r], hi[r]).
struct RowLimits {
  const int64_t* lo;
  const int64_t* hi;
};

// A run of T in one RowsScratch block.
template <typename T>
struct ScratchSpan {
  T* p = nullptr;
  size_t n = 0;
  T* data() const { return p; }
  T* begin() const { return p; }
  T* end() const { return p + n; }
  T& operator[](size_t i) const { return p[i]; }
};

// Per-thread scratch of one attend call (sizes: see attend_rows_t in attention_cpu_prefill.h and
// grouped_block in attention_cpu_decode.h).
struct Scratch {
  float* S;
  float* scale;
  int* vis;
  float* pack;        // attend only; may be null (no f32 packing)
  float* kt;          // attend only: kPrefillBlock * head_dim floats for a transposed K tile (AVX-512
                      // prefill scores); null: scores from K row tiles
  float* q_pairs;     // attend_token_major only: nh * R * head_dim floats for Q in kBf16Pairs or
                      // kE4M3Lut order; null: neither is used
};

// One thread's buffers of a decode or prefill call for up to `rows` query rows (decode: every
// head of one sequence; prefill: one query tile) of head_dim hd. Prefill's also hold the packed
// and transposed K/V tiles; decode's the reordered Q (q_pairs). One allocation, not zeroed: the
// kernels write every buffer before they read it, and zeroing 256 KiB per thread and call (a
// prefill tile of 128 rows) made a 16-token prefill 2.5x slower than with 64-row tiles (Zen 5, 2
// threads); vectors had zeroed each buffer.
struct RowsScratch {
  RowsScratch(int64_t rows, int hd, bool prefill);
  // The attend call's view: prefill packs K/V to f32 from 16 rows (`pack_rows`).
  Scratch view(bool pack_rows) const {
    if (prefill) return Scratch{S.data(), scale.data(), vis.data(), pack_rows ? pack.data() : nullptr, kt.data(), nullptr};
    return Scratch{S.data(), scale.data(), vis.data(), nullptr, nullptr, q_pairs.data()};
  }
  const bool prefill;
  // each 64-byte aligned: the kernels load whole cache lines of their scratch (K^T tiles, packed V
  // rows, q rows, accumulators), and a 64-byte load across two lines costs two
  ScratchSpan<float> Q, O, S, pack, kt, q_pairs, m, l, scale;
  ScratchSpan<int> vis;
  ScratchSpan<int64_t> lo, hi;

 private:
  // points the spans into base, each at a 64-byte boundary (null: only counts); the bytes needed
  size_t layout(std::byte* base, size_t r, size_t d);
  std::unique_ptr<std::byte[]> block_;
};

// attend: R rows per KV head, one KV head after another per token block (prefill).
using AttendFn = void (*)(const SeqView&, int nh, const float* Q, int R, int64_t t0, int64_t t1, RowLimits lim,
                          float soft_cap, float* O, float* m, float* l, const Scratch& sc);
// attend_token_major: all KV heads of each token together (decode).
using AttendTokenMajorFn = AttendFn;

struct Isa {
  const char* name;
  int width;  // head_dim must be a multiple of it
  AttendFn attend;
  AttendTokenMajorFn attend_token_major;
  float e4m3_factor;  // value returned by the loader = real / factor
};

// The best core for this head_dim on this CPU (rkv_isa.h's probe, cached per process).
Isa choose_isa(int head_dim);

struct Common {
  int64_t num_pages;
  int32_t page_size, num_qo_heads, num_kv_heads, head_dim, batch;
  int32_t cache_dtype, q_dtype, out_dtype;
  float sm_scale, soft_cap, k_scale, v_scale;
  int32_t window_left;  // -1: no sliding window
};

// The scalar parameters of an attention call (everything but the tables and pointers).
int validate_params(const Common& c);

// The CSR page table against the pool: indptr from 0 and monotone, every page id in range, every
// non-empty sequence's last_page_len in 1..page_size; fills lens[b] (tokens of sequence b).
int validate_tables(int32_t batch, int64_t num_pages, int32_t page_size, const int32_t* kv_indptr,
                    const int32_t* kv_indices, const int32_t* kv_last_page_len, std::vector<int64_t>& lens);

// The scalar parameters of a call's params struct.
Common common_of(const rkv_attention_args& a, const rkv_paged_kv& kv);

// validate_params + validate_tables + the tensor pointers.
int validate_common(const Common& c, const rkv_attention_args& a, const rkv_paged_kv& kv, std::vector<int64_t>& lens);

struct Scales {
  float q_mul;     // multiplies q: sm_scale * k_scale * factor, and log2(e) or 1/cap
  float soft_cap;  // > 0: soft cap active
  float v_mul;     // multiplies the normalized output: v_scale * factor
};

Scales make_scales(const Common& c, const Isa& isa);
SeqView seq_view(const Common& c, const void* k_cache, const void* v_cache, const int32_t* kv_indptr,
                 const int32_t* kv_indices, int b, int h);
// Loads n consecutive q elements (starting at element index `base`) into f32, times mul.
void load_q(const void* q, int32_t dtype, int64_t base, int64_t n, float mul, float* dst);
void store_out(void* out, int32_t dtype, int64_t base, const float* src, int64_t n);
// Normalizes one row in place: O / l * v_mul (zeros for an empty row); returns the LSE.
float finish_row(float* o, int hd, float m, float l, float v_mul);
// a = merge(a, b) over head_dim elements with natural-log LSEs.
void merge_into(float* va, float* sa, const float* vb, float sb, int hd);
// OpenMP threads for `items` independent work items.
int threads_for(int64_t items);

}  // namespace attn
}  // namespace rkv
