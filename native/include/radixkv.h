/*
 * radixkv.h — the whole C ABI of radixkv's native kernels.
 *
 * Two libraries implement it:
 *   libradixkv       CPU kernels (host pointers). Always built.
 *   libradixkv_cuda  CUDA kernels: the CPU kernels' twins with a rkv_cuda_ prefix,
 *                    the same arguments in the same order (the same params structs)
 *                    plus a trailing `stream` (and, before it, a device error record
 *                    where device-resident values are checked), taking *device*
 *                    pointers for tensors and page tables; built only when nvcc is
 *                    present.
 * The benchmark yardsticks (memory read/copy, FMA peak) are not part of this ABI: they live in
 * radixkv_bench.h / libradixkv_bench, which only benchmarks load.
 *
 * Conventions
 * -----------
 * - Every function returns an int status: RKV_OK (0) or a negative RKV_ERR_* code.
 *   rkv_last_error() returns a thread-local message describing the last failure
 *   on the calling thread. No function aborts or prints on bad input.
 * - Paged KV cache, per layer: separate K and V pools, each laid out as
 *   [num_pages, page_size, num_kv_heads, head_dim] (FlashInfer "NHD", tuple form),
 *   row-major, elements of the cache dtype.
 * - Slot of a token = page * page_size + offset_in_page. A negative slot means
 *   "skip" (padding): nothing is written for that token.
 * - Page tables are FlashInfer CSR arrays (int32):
 *     kv_indptr[batch + 1]       pages of sequence b are kv_indices[kv_indptr[b] .. kv_indptr[b+1])
 *     kv_indices[nnz]            page ids, each in [0, num_pages)
 *     kv_last_page_len[batch]    tokens in the sequence's last page, 1..page_size
 *                                (ignored for a sequence with no pages)
 *   sequence length = page_size * (pages - 1) + last_page_len, or 0 with no pages.
 * - Dtypes (RKV_DTYPE_*): f32, f16, bf16, fp8 e4m3 (finite-only, max 448),
 *   fp8 e5m2 (max 57344). FP8 pools use a per-tensor scale:
 *   stored = real / scale, real = stored * scale. Conversions to fp8 saturate to
 *   the largest finite value and round to nearest even; NaN stays NaN.
 *   Bit-exact with NVIDIA's cuda_fp8.h (__nv_cvt_float_to_fp8 with __NV_SATFINITE).
 * - LSE values are natural-log log-sum-exp of the scaled (and soft-capped) logits;
 *   an empty attention range gives output 0 and LSE = -inf.
 * - Sizes are int64_t where they count elements or tokens, int32_t for small dims.
 */
#ifndef RADIXKV_H
#define RADIXKV_H

#include <stdint.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define RKV_API __declspec(dllexport)
#else
#define RKV_API __attribute__((visibility("default")))
#endif

/* ---- status codes ---- */
#define RKV_OK 0
#define RKV_ERR_INVALID_ARGUMENT (-1)
#define RKV_ERR_UNSUPPORTED (-2)
#define RKV_ERR_OUT_OF_MEMORY (-3)
#define RKV_ERR_CUDA (-4)
#define RKV_ERR_INTERNAL (-5)

/* ---- dtypes ---- */
#define RKV_DTYPE_F32 0
#define RKV_DTYPE_F16 1
#define RKV_DTYPE_BF16 2
#define RKV_DTYPE_FP8_E4M3 3
#define RKV_DTYPE_FP8_E5M2 4

#define RKV_ABI_VERSION 6

/* ---- library ---- */

/* Message of the last failure on this thread ("" if none). Valid until the next call on this thread. */
RKV_API const char* rkv_last_error(void);
/* RKV_ABI_VERSION of the built library. */
RKV_API int32_t rkv_abi_version(void);
/* Human-readable build and CPU description: compiler, ISA the library was compiled for,
 * runtime CPU features (avx2, avx512f, avx512_bf16, avx512_fp16, amx), OpenMP threads. */
RKV_API const char* rkv_build_info(void);
/* Threads the CPU kernels may use (OpenMP). n <= 0 restores the default. Like
 * omp_set_num_threads, this applies to kernels called from the calling thread. */
RKV_API int32_t rkv_set_num_threads(int32_t n);
RKV_API int32_t rkv_get_num_threads(void);
/* Size in bytes of one element of dtype, or a negative error code. */
RKV_API int32_t rkv_dtype_size(int32_t dtype);

/* ---- conversion and FP8 ---- */

/* Element-wise conversion between any two dtypes. scale > 0: when dst is fp8,
 * stored = src / scale; when src is fp8, real = stored * scale; with neither (or both)
 * fp8 it must be 1 (or equal for fp8 -> fp8, a re-encode). */
RKV_API int rkv_convert(const void* src, int32_t src_dtype, void* dst, int32_t dst_dtype, int64_t n, float scale);
/* dst = fp8(src / scale). fp8_dtype is RKV_DTYPE_FP8_E4M3 or RKV_DTYPE_FP8_E5M2; scale > 0, finite. */
RKV_API int rkv_fp8_quantize(const float* src, uint8_t* dst, int64_t n, int32_t fp8_dtype, float scale);
/* dst = float(src) * scale. */
RKV_API int rkv_fp8_dequantize(const uint8_t* src, float* dst, int64_t n, int32_t fp8_dtype, float scale);

/* ---- KV scatter (vLLM reshape_and_cache, FlashInfer append_paged_kv_cache) ---- */

/* k, v: [num_tokens, num_kv_heads, head_dim] of src_dtype (f32, f16 or bf16).
 * slot_mapping[num_tokens]: int64 slot per token, negative = skip; each slot < num_pages*page_size.
 * k_cache, v_cache: pools as above, of cache_dtype; k_scale, v_scale used for fp8 caches (else 1). */
RKV_API int rkv_reshape_and_cache(const void* k, const void* v, int32_t src_dtype,
                                  const int64_t* slot_mapping, int64_t num_tokens,
                                  int32_t num_kv_heads, int32_t head_dim,
                                  void* k_cache, void* v_cache, int32_t cache_dtype,
                                  int64_t num_pages, int32_t page_size,
                                  float k_scale, float v_scale);

/* ---- page copy (copy-on-write, compaction) ---- */

/* For each layer l in [0, num_layers) and pair p: copy page block_mapping[2p] to page
 * block_mapping[2p+1] in k_caches[l] and v_caches[l]. page_bytes = page_size*num_kv_heads*head_dim*elem.
 * Every id must be in [0, num_pages); destination pages must be distinct and never a source. */
RKV_API int rkv_copy_blocks(void* const* k_caches, void* const* v_caches, int32_t num_layers,
                            const int64_t* block_mapping, int64_t num_pairs,
                            int64_t page_bytes, int64_t num_pages);

/* ---- attention ---- */

/* Attention arguments travel in params structs (FlashInfer's BatchDecodeParams / paged_kv_t
 * style), the same structs for libradixkv and its rkv_cuda_ twins: host pointers for the CPU
 * library, device pointers (the struct itself stays in host memory) for the CUDA one. */

/* One layer's paged KV pools and the batch's page table (see Conventions). k_scale and v_scale
 * apply to fp8 caches and must be 1 otherwise. */
typedef struct rkv_paged_kv {
    const void* k_cache;
    const void* v_cache;
    int32_t cache_dtype;
    int32_t page_size;
    int64_t num_pages;
    int32_t num_kv_heads;
    int32_t head_dim;
    const int32_t* kv_indptr;
    const int32_t* kv_indices;
    const int32_t* kv_last_page_len;
    int32_t batch_size;
    float k_scale;
    float v_scale;
} rkv_paged_kv;

/* The query side of one attention call, shared by decode and prefill.
 * q: [rows, num_qo_heads, head_dim] of q_dtype (f32, f16, bf16); out: same shape, out_dtype;
 * lse: [rows, num_qo_heads] f32 (may be NULL). num_qo_heads % num_kv_heads == 0 (GQA/MQA/MHA).
 * logits_soft_cap <= 0 disables soft-capping (else logits = cap * tanh(logits / cap)),
 * applied after sm_scale.
 * window_left (FlashInfer's convention): -1 for no window, else >= 0: a query at KV position p
 * sees only keys k >= p - window_left (a sliding window of window_left + 1 keys counting
 * itself); positions before the window are never read. */
typedef struct rkv_attention_args {
    const void* q;
    void* out;
    float* lse;
    int32_t q_dtype;
    int32_t out_dtype;
    int32_t num_qo_heads;
    float sm_scale;
    float logits_soft_cap;
    int32_t window_left;
} rkv_attention_args;

/* Decode: one query per sequence (rows = kv.batch_size). */
typedef struct rkv_decode_params {
    rkv_attention_args attn;
    rkv_paged_kv kv;
} rkv_decode_params;

/* Append prefill (extend) with a causal mask aligned to the right: qo_indptr[batch+1] (q rows
 * of sequence b are qo_indptr[b]..qo_indptr[b+1]); query i of a sequence with q_len new tokens
 * and kv_len tokens in its pages (cached + new, q_len <= kv_len) attends to KV positions
 * 0 .. kv_len - q_len + i. bidir_indptr[batch+1] / bidir_regions[2*n] (may both be NULL): per
 * sequence, half-open KV position ranges [start, end) whose positions all see each other (image
 * regions); positions inside a region also see every earlier position as usual. window_left
 * bounds every query's keys from below, on top of the causal/bidirectional upper bound. */
typedef struct rkv_prefill_params {
    rkv_attention_args attn;
    rkv_paged_kv kv;
    const int32_t* qo_indptr;
    const int32_t* bidir_indptr;
    const int32_t* bidir_regions;
} rkv_prefill_params;

/* One-shot decode attention over the page table in p->kv. */
RKV_API int rkv_decode_attention(const rkv_decode_params* p);

/* Decode plan/run (FlashInfer's split, CPU): rkv_decode_plan_tables validates one batch's page
 * table against the pool (as rkv_decode_attention does) and keeps its sequence lengths; then
 * rkv_decode_attention_run runs every layer of that step with the same tables, deciding the
 * split-KV work once per distinct window_left and reusing the plan's scratch, without walking
 * the tables again. The tables passed to run must be the ones planned, unchanged (batch_size,
 * num_pages and page_size are checked against the plan). A plan is single-threaded: one engine
 * thread plans and runs it. rkv_decode_plan_splits returns how many split-KV plans the current
 * batch needed so far (one per distinct window_left run), or -1 for a NULL plan. Destroying
 * NULL is a no-op. */
typedef struct rkv_decode_plan rkv_decode_plan;
RKV_API int rkv_decode_plan_create(rkv_decode_plan** out);
RKV_API int rkv_decode_plan_destroy(rkv_decode_plan* plan);
RKV_API int rkv_decode_plan_tables(rkv_decode_plan* plan, const int32_t* kv_indptr, const int32_t* kv_indices,
                                   const int32_t* kv_last_page_len, int32_t batch_size, int64_t num_pages,
                                   int32_t page_size);
RKV_API int64_t rkv_decode_plan_splits(const rkv_decode_plan* plan);
RKV_API int rkv_decode_attention_run(rkv_decode_plan* plan, const rkv_decode_params* p);

/* One-shot append-prefill attention (rows = total q rows, qo_indptr[batch]). */
RKV_API int rkv_append_prefill_attention(const rkv_prefill_params* p);

/* Merge two partial attention states over disjoint KV ranges (FlashInfer merge_state):
 * v_a, v_b, v_out: [num_tokens, num_heads, head_dim] f32; s_a, s_b, s_out: [num_tokens, num_heads] LSE.
 * v_out/s_out may alias v_a/s_a. -inf LSEs are handled (empty partial states). */
RKV_API int rkv_merge_state(const float* v_a, const float* s_a, const float* v_b, const float* s_b,
                            float* v_out, float* s_out, int64_t num_tokens, int32_t num_heads, int32_t head_dim);

/* ---- dense ops for the model runner (CPU) ---- */

/* y[m, n] = x[m, k] . w[n, k]^T (+ y if accumulate != 0). w of w_dtype (f32 or bf16), row-major. */
RKV_API int rkv_linear(const float* x, const void* w, int32_t w_dtype, float* y,
                       int64_t m, int64_t n, int64_t k, int32_t accumulate);
/* Packed linear weights: a layout of w that streams as one sequence per 64 output rows, for
 * decode batches (m <= 16) at the memory limit, and oneDNN's own blocked format for larger m.
 * Panel p (rows 64p .. 64p+63) occupies the same bytes as those rows do row-major. bf16: laid
 * out as [k/2][64][2], element (row 64p + j, column c) at panel element ((c/2) * 64 + j) * 2 + c % 2
 * (oneDNN's BA16a64b2a for the k x n matrix w^T); f32 and f16: [k][64], element (64p + j, c) at
 * panel element c * 64 + j (BA16a64b). 1 when this library packs w_dtype [n, k] weights on this
 * CPU (n % 64 == 0, k % 16 == 0, AVX-512; bf16 also needs k % 32 == 0 and AVX512-BF16), else
 * 0, with or without oneDNN (without it, m > 16 runs the decode kernel over blocks of rows). */
RKV_API int32_t rkv_linear_pack_supported(int32_t w_dtype, int64_t n, int64_t k);
/* Rearranges row-major w [n, k] into the packed layout in place (RKV_ERR_UNSUPPORTED, w
 * untouched, where rkv_linear_pack_supported is 0), on the calling thread only (no OpenMP: pack
 * several matrices from several threads). rkv_linear_unpack reverses it. */
RKV_API int rkv_linear_pack(void* w, int32_t w_dtype, int64_t n, int64_t k);
RKV_API int rkv_linear_unpack(void* w, int32_t w_dtype, int64_t n, int64_t k);
/* rkv_linear with packed weights: the same result (up to summation order). */
RKV_API int rkv_linear_packed(const float* x, const void* w, int32_t w_dtype, float* y,
                              int64_t m, int64_t n, int64_t k, int32_t accumulate);
/* ---- block-quantized weights (ggml's formats, as stored in GGUF files) ----
 * A weight row of k values is k / block_values blocks of ggml's struct, little-endian; the codes
 * are ggml's type ids. Q8_0 {f16 d; i8 q[32]}: w = d*q. Q4_0 {f16 d; u8 q[16]}: w = d*(q - 8).
 * Q5_0 {f16 d; u8 qh[4]; u8 q[16]}: w = d*(q - 16). Q4_K (256 values) {f16 d, dmin; u8
 * scales[12]; u8 q[128]}: w = d*sc*q - dmin*m per 32. Q6_K (256) {u8 ql[128]; u8 qh[64]; i8
 * scales[16]; f16 d}: w = d*sc*(q - 32) per 16. */
#define RKV_QUANT_Q4_0 2
#define RKV_QUANT_Q5_0 6
#define RKV_QUANT_Q8_0 8
#define RKV_QUANT_Q4_K 12
#define RKV_QUANT_Q6_K 14
/* Bytes of one row of k values of format (-1: unknown format, or k not a whole number of blocks). */
RKV_API int64_t rkv_quant_row_bytes(int32_t format, int64_t k);
/* y[i, j] (+)= sum_c x[i, c] * w[j, c], x [m, k] f32 with rows ldx apart, w [n, k] rows of format,
 * y rows ldy apart (ldy >= n: a band of a wider output). Up to 16 rows of x are quantized to 8
 * bits per block as llama.cpp does (per 32 values; per 256 for Q4_K / Q6_K) and multiplied in
 * integers (AVX-512 VNNI, AVX2 or scalar, rkv_isa.h); more rows dequantize the weights in panels
 * and run rkv_linear's GEMMs. y must not overlap x or w. */
typedef struct rkv_quant_linear_params {
  const float* x;
  int64_t ldx;
  const void* w;
  int32_t format;
  float* y;
  int64_t ldy;
  int64_t m;
  int64_t n;
  int64_t k;
  int32_t accumulate;
} rkv_quant_linear_params;
RKV_API int rkv_quant_linear(const rkv_quant_linear_params* p);
/* out[i, :] = dequantized row ids[i] of w (rows [0, rows) of format, k values each), bit-exact with
 * ggml's dequantize_row_*; ids NULL: rows [0, n) in order. An id outside [0, rows) fails. */
typedef struct rkv_quant_rows_params {
  const void* w;
  int32_t format;
  int64_t rows;
  int64_t k;
  const int32_t* ids;
  int64_t n;
  float* out;
} rkv_quant_rows_params;
RKV_API int rkv_quant_dequantize_rows(const rkv_quant_rows_params* p);

/* y[r, :] = x[r, :] / sqrt(mean(x[r, :]^2) + eps) * (w_offset + w[:]); w_offset 0 (x.w) or 1
 * (Gemma's x.(1+w)); y may alias x. Per-head q/k norms: rows = tokens * heads, dim = head_dim. */
RKV_API int rkv_rmsnorm(const float* x, const float* w, float* y, int64_t rows, int32_t dim, float eps,
                        float w_offset);
/* Rotary embedding in place (Llama / GPT-NeoX "rotate_half" layout), q: [n, num_q_heads, head_dim],
 * k: [n, num_kv_heads, head_dim], positions[n] int32 >= 0. */
RKV_API int rkv_rope(float* q, float* k, const int32_t* positions, int64_t num_tokens,
                     int32_t num_q_heads, int32_t num_kv_heads, int32_t head_dim, float theta);
/* The same rotation with angle = position * inv_freq[i] from a table of head_dim / 2 doubles
 * (any RoPE scaling: default, linear, llama3; per-layer theta). */
RKV_API int rkv_rope_table(float* q, float* k, const int32_t* positions, int64_t num_tokens,
                           int32_t num_q_heads, int32_t num_kv_heads, int32_t head_dim, const double* inv_freq);
/* out[r, i] = silu(gate_up[r, i]) * gate_up[r, inter + i]; gate_up: [rows, 2*inter]. */
RKV_API int rkv_silu_mul(const float* gate_up, float* out, int64_t rows, int32_t inter);
/* out[i, :] = table[ids[i], :] (table [vocab, dim] of dtype f32 or bf16); ids outside [0, vocab) fail. */
RKV_API int rkv_embedding(const int32_t* ids, int64_t n, const void* table, int32_t dtype,
                          int32_t vocab, int32_t dim, float* out);
/* y[i] += x[i]. */
RKV_API int rkv_add_inplace(float* y, const float* x, int64_t n);
/* out[r] = argmax(logits[r, :]) (first maximum). */
RKV_API int rkv_argmax(const float* logits, int64_t rows, int32_t vocab, int32_t* out);
/* One token per row of logits [rows, vocab] (rkv_sample), in vLLM's order:
 *  1. edits of a copy of the row (the logits are never written): logit_bias (bias_ids[j] +=
 *     bias_values[j] for j in bias_indptr[r] .. bias_indptr[r+1]), then the masked ids (min_tokens:
 *     mask_ids[mask_indptr[r] .. mask_indptr[r+1]] become -inf), then the penalties over the row's
 *     token counts counts[r][0 .. counts_len[r]) (each distinct token of prompt + output once, with
 *     its count in the output): repetition (HF: a positive logit divided by repetition_penalty[r],
 *     any other multiplied), then logit -= frequency_penalty[r] * output_count + presence_penalty[r]
 *     * (output_count > 0) (OpenAI);
 *  2. temperature[r] == 0: the argmax (first maximum) of the edited row;
 *  3. otherwise p = softmax(row / temperature[r]), then min_p (tokens with p below min_p[r] times
 *     the largest p get 0), then top_k (only the top_k[r] most probable stay, and every token tied
 *     with the last of them; <= 0 keeps every token), then the top_p[r] nucleus (the most probable
 *     tokens, ties by id, whose mass first reaches top_p[r]; 1 keeps every token);
 *  4. the draw by uniform[r] in [0, 1): the first token in the order (nucleus order, or id order
 *     without a nucleus cut) at which the running mass passes uniform[r] times the kept mass.
 * A row with no finite logit takes its argmax. NaN logits have probability 0. Probabilities use
 * rkv_dense_math.h's exp_approx: the same inputs give the same token on every CPU, whatever the
 * other rows. Every per-row array has `rows` entries; the optional ones may be NULL (neutral for
 * every row: top_k 0, min_p 0, penalties 1 / 0 / 0, no counts, no bias, no mask). Ids must lie in
 * [0, vocab), counts must be >= 0, penalties finite with repetition_penalty > 0, min_p in [0, 1],
 * bias values finite; indptr arrays have rows + 1 non-decreasing entries from 0. */
typedef struct rkv_token_count {
    int32_t token;
    int32_t output_count;
} rkv_token_count;

typedef struct rkv_sample_params {
    const float* logits;
    int64_t rows;
    int32_t vocab;
    const float* temperature;
    const float* top_p;
    const double* uniform;
    const int32_t* top_k;
    const float* min_p;
    const float* repetition_penalty;
    const float* presence_penalty;
    const float* frequency_penalty;
    const rkv_token_count* const* counts;
    const int64_t* counts_len;
    const int64_t* bias_indptr;
    const int32_t* bias_ids;
    const float* bias_values;
    const int64_t* mask_indptr;
    const int32_t* mask_ids;
    int32_t* out;
} rkv_sample_params;

RKV_API int rkv_sample(const rkv_sample_params* params);
/* Log-probabilities of rows of logits (native/src/logprobs.cpp): for every r < rows, with
 * row = row_index[r] (or r when row_index is NULL) and lse = log(sum_i exp(logits[row, i])):
 *   target_logprob[r]           = logits[row, target[r]] - lse
 *   top_ids[r * top_k + j]      = the j-th most probable token of the row (ties by lower id)
 *   top_logprobs[r * top_k + j] = its log-probability
 * The log-softmax of the raw logits as given (no temperature). NaN logits count as -inf. Sums
 * are taken in double over rkv_dense_math.h's exp_approx (within 2 ulp of e^x), so values are
 * within about 1e-6 of a double-precision log-softmax. A row whose largest logit is -inf (all
 * -inf or NaN) gives -inf everywhere; one holding +inf gives its c +inf tokens -log(c) and every
 * other token -inf. Every index is checked (row_index in [0, num_logit_rows), target in
 * [0, vocab), 0 <= top_k <= min(RKV_LOGPROBS_MAX_TOP_K, vocab)) before anything is written. */
#define RKV_LOGPROBS_MAX_TOP_K 20
typedef struct rkv_logprobs_params {
    const float* logits;      /* [num_logit_rows, vocab] f32 */
    int64_t num_logit_rows;
    int32_t vocab;
    const int32_t* row_index; /* [rows] logits rows, or NULL: rows 0 .. rows - 1 */
    int64_t rows;
    const int32_t* target;    /* [rows] token ids */
    int32_t top_k;
    double* target_logprob;   /* [rows] */
    int32_t* top_ids;         /* [rows, top_k]; may be NULL when top_k == 0 */
    double* top_logprobs;     /* [rows, top_k]; may be NULL when top_k == 0 */
} rkv_logprobs_params;
RKV_API int rkv_logprobs(const rkv_logprobs_params* p);
/* Constrained decoding (structured outputs): bitmask row i (int32 words, bit (t & 31) of word
 * t >> 5 set when token t is allowed) applies to logits row row_indices[i]; every disallowed
 * token's logit becomes -inf, before any sampling parameter. Words past the vocabulary are
 * ignored; bitmask_words * 32 must cover vocab. row_indices NULL: bitmask row i applies to logits
 * row i. Each row index must be in [0, rows) and appear at most once. */
typedef struct rkv_token_bitmask_params {
  float* logits;                /* [rows, vocab] f32, masked in place */
  int64_t rows;
  int32_t vocab;
  const int32_t* bitmask;       /* [num_masked, bitmask_words] */
  int32_t bitmask_words;
  const int32_t* row_indices;   /* [num_masked], or NULL */
  int64_t num_masked;
} rkv_token_bitmask_params;
RKV_API int rkv_apply_token_bitmask(const rkv_token_bitmask_params* p);
/* out[r, i] = gelu_tanh(gate_up[r, i]) * gate_up[r, inter + i] (GELU, tanh approximation). */
RKV_API int rkv_gelu_tanh_mul(const float* gate_up, float* out, int64_t rows, int32_t inter);
/* y[r, i] += bias[i] for r < rows, i < n. */
RKV_API int rkv_add_bias(float* y, const float* bias, int64_t rows, int32_t n);
/* x[i] = cap * tanh(x[i] / cap), cap > 0. */
RKV_API int rkv_soft_cap(float* x, int64_t n, float cap);
/* x[i] *= s. */
RKV_API int rkv_scale(float* x, int64_t n, float s);

/* ---- LoRA adapters over a mixed batch (SGMV: segments of rows by adapter slot, CPU) ---- */

/* One adapter slot's factors of one projection: a [rank, k] and b [n, rank], f32 row-major, and
 * the adapter's scale for it (lora_alpha / rank, or lora_alpha / sqrt(rank) with rsLoRA). A slot
 * with rank 0 (or NULL factors) does not adapt this projection. */
typedef struct rkv_lora_slot {
    const float* a;
    const float* b;
    int32_t rank;
    float scale;
} rkv_lora_slot;

/* One projection of a batch whose rows are grouped in segments: segment i is rows
 * seg_indptr[i] .. seg_indptr[i+1] (0 = seg_indptr[0] <= ... <= seg_indptr[num_segments] = rows)
 * and uses slot seg_slot[i] (-1: the base model, skipped). For every row of a segment with slot s:
 *   y[row, y_offset + j] += slots[s].scale * sum_r b_s[j, r] * (sum_c a_s[r, c] * x[row, c]),  j < n
 * x: [rows, k] f32; y: [rows, y_pitch] f32, the delta added to the column slice [y_offset,
 * y_offset + n) (one of q/k/v in a fused q|k|v row, gate or up in gate|up); y must not overlap x.
 * scratch: rows * max_rank f32 (A x per row), every slot's rank <= max_rank. */
typedef struct rkv_lora_params {
    const float* x;
    float* y;
    int64_t rows;
    int32_t k;
    int32_t n;
    int64_t y_pitch;
    int64_t y_offset;
    int32_t num_segments;
    const int32_t* seg_indptr;
    const int32_t* seg_slot;
    const rkv_lora_slot* slots;
    int32_t num_slots;
    int32_t max_rank;
    float* scratch;
} rkv_lora_params;

RKV_API int rkv_lora_apply(const rkv_lora_params* p);

/* ---- CUDA (libradixkv_cuda only; every tensor and table pointer is a device pointer) ----
 *
 * Streams: every rkv_cuda_* kernel entry point takes a trailing `stream` (a cudaStream_t,
 * NULL = the legacy default stream), launches on it and returns without synchronizing,
 * except the one-shot attention conveniences (rkv_cuda_decode_attention,
 * rkv_cuda_append_prefill_attention), which plan on a temporary plan and synchronize.
 *
 * Device error record: values that live in device memory (slots, token ids, page ids) are
 * checked on the device. A kernel that meets a bad one skips that row (never writes out of
 * bounds) and records the first error into a caller-owned device array of
 * RKV_CUDA_ERROR_RECORD_SLOTS int64, all zero meaning "no error":
 *   [0] code (RKV_CUDA_DEVERR_*), [1] row (token or pair index), [2] the bad value, [3] its bound.
 * The first writer wins (atomicCAS on [0]); nothing waits for it: the host reads the record once
 * per step, after synchronizing, and zeroes it. A NULL record skips bad rows silently. */
#define RKV_CUDA_ERROR_RECORD_SLOTS 4
#define RKV_CUDA_DEVERR_NONE 0
#define RKV_CUDA_DEVERR_BAD_SLOT 1  /* reshape_and_cache: slot >= num_pages * page_size */
#define RKV_CUDA_DEVERR_BAD_TOKEN 2 /* embedding: id outside [0, vocab) */
#define RKV_CUDA_DEVERR_BAD_PAGE 3  /* copy_blocks: page id outside [0, num_pages) */

/* The CUDA library's own thread-local error message (rkv_last_error covers libradixkv only). */
RKV_API const char* rkv_cuda_last_error(void);
/* RKV_ABI_VERSION libradixkv_cuda was built with. */
RKV_API int32_t rkv_cuda_abi_version(void);
/* Number of CUDA devices, or a negative code with rkv_cuda_last_error() saying why (no driver, ...). */
RKV_API int rkv_cuda_device_count(void);
RKV_API int rkv_cuda_fp8_quantize(const float* src, uint8_t* dst, int64_t n, int32_t fp8_dtype, float scale,
                                  void* stream);
RKV_API int rkv_cuda_fp8_dequantize(const uint8_t* src, float* dst, int64_t n, int32_t fp8_dtype, float scale,
                                    void* stream);
/* Slots >= num_pages * page_size are recorded (RKV_CUDA_DEVERR_BAD_SLOT) and their token skipped. */
RKV_API int rkv_cuda_reshape_and_cache(const void* k, const void* v, int32_t src_dtype,
                                       const int64_t* slot_mapping, int64_t num_tokens,
                                       int32_t num_kv_heads, int32_t head_dim,
                                       void* k_cache, void* v_cache, int32_t cache_dtype,
                                       int64_t num_pages, int32_t page_size,
                                       float k_scale, float v_scale, int64_t* error_record, void* stream);
/* k_caches, v_caches: device arrays of num_layers device pointers; block_mapping: device array
 * of 2 * num_pairs page ids (src, dst), which the caller validated on its host copy
 * (rkv_copy_blocks' rules); a pair with an id outside [0, num_pages) is recorded
 * (RKV_CUDA_DEVERR_BAD_PAGE) and skipped. */
RKV_API int rkv_cuda_copy_blocks(void* const* k_caches, void* const* v_caches, int32_t num_layers,
                                 const int64_t* block_mapping, int64_t num_pairs,
                                 int64_t page_bytes, int64_t num_pages, int64_t* error_record, void* stream);

/* Attention plan/run (FlashInfer's split): a plan is made once per engine step from the HOST
 * copies of the batch's tables and run by every layer with the DEVICE copies.
 * rkv_cuda_attn_plan_batch decides the decode split-KV count (or the append-prefill work items) on
 * the host, grows (never shrinks, never per call) the plan's device partial-output and
 * work-item buffers, and uploads the work items from the plan's own pinned buffer with one
 * cudaMemcpyAsync on `stream` (an event recorded after that copy guards the pinned buffer: the
 * next rkv_cuda_attn_plan_batch waits for it before overwriting). qo_indptr_host NULL = decode.
 * The runs must be enqueued on the plan's stream, after this call and before the next
 * rkv_cuda_attn_plan_batch on the same plan (keep one stream per plan: the next plan reuses the
 * buffers in that stream's order); they do no host work beyond argument checks and require
 * batch_size, page_size and the head counts/dim to equal the plan's. */
typedef struct rkv_cuda_attn_plan rkv_cuda_attn_plan;
RKV_API int rkv_cuda_attn_plan_create(rkv_cuda_attn_plan** out);
/* Waits for the plan's last upload, then frees its buffers (stream-ordered on its last stream). NULL is a no-op. */
RKV_API int rkv_cuda_attn_plan_destroy(rkv_cuda_attn_plan* plan);
RKV_API int rkv_cuda_attn_plan_batch(rkv_cuda_attn_plan* plan, const int32_t* qo_indptr_host,
                               const int32_t* kv_indptr_host, const int32_t* kv_last_page_len_host,
                               int32_t batch_size, int32_t page_size, int32_t num_qo_heads, int32_t num_kv_heads,
                               int32_t head_dim, void* stream);
/* What a planned run bakes into its launches, for callers that capture runs into CUDA graphs:
 * info[0] = 1 for a decode plan (0 prefill), info[1] = batch, info[2] = the decode split count
 * (prefill: the number of work items), info[3] = the address of the partial-output buffer
 * (prefill: of the work items). A graph captured with one plan replays correctly for another
 * plan with the same info (and the same table addresses). */
RKV_API int rkv_cuda_attn_plan_info(const rkv_cuda_attn_plan* plan, int64_t* info);
/* rkv_decode_attention with a decode plan; tables are device arrays. */
RKV_API int rkv_cuda_decode_attention_run(const rkv_cuda_attn_plan* plan, const rkv_decode_params* p,
                                          void* stream);
/* rkv_append_prefill_attention with a prefill plan; p->qo_indptr and the tables are device arrays
 * (qo_indptr equal to the host copy the plan was made from). */
RKV_API int rkv_cuda_append_prefill_attention_run(const rkv_cuda_attn_plan* plan, const rkv_prefill_params* p,
                                                  void* stream);
/* One-shot conveniences (tests, benchmarks): copy kv_indptr / kv_last_page_len (and qo_indptr)
 * back to the host, plan a temporary plan, run it, synchronize `stream` and destroy the plan.
 * An engine step uses rkv_cuda_attn_plan_batch + the _run functions instead. */
RKV_API int rkv_cuda_decode_attention(const rkv_decode_params* p, void* stream);
RKV_API int rkv_cuda_append_prefill_attention(const rkv_prefill_params* p, void* stream);
RKV_API int rkv_cuda_merge_state(const float* v_a, const float* s_a, const float* v_b, const float* s_b,
                                 float* v_out, float* s_out, int64_t num_tokens, int32_t num_heads, int32_t head_dim,
                                 void* stream);

/* ---- CUDA dense ops of the model (device pointers; `stream` is a cudaStream_t, NULL = the
 * legacy default stream; kernels are launched asynchronously on it, nothing synchronizes) ---- */

/* RKV_OK when cuBLAS could be loaded at run time (libcublas of the user's CUDA installation,
 * or $RADIXKV_CUBLAS), else RKV_ERR_UNSUPPORTED with rkv_cuda_last_error() naming the missing
 * library or symbol. Needs no device. */
RKV_API int rkv_cuda_blas_available(void);
/* rkv_linear on the GPU through cublasGemmEx: f32 weights in f32 (no TF32); bf16 weights with
 * the activations rounded to bf16 (RNE) and f32 accumulation. m, n, k must fit in int32.
 * m <= 8 (decode) runs a GEMV kernel instead (no cuBLAS needed): f32 accumulation, x not
 * rounded (as rkv_linear's small-m path), a fixed summation order (run-to-run identical). */
RKV_API int rkv_cuda_linear(const float* x, const void* w, int32_t w_dtype, float* y,
                            int64_t m, int64_t n, int64_t k, int32_t accumulate, void* stream);
/* The CPU dense ops' twins (same shapes and rules as rkv_rmsnorm ... rkv_argmax above, with
 * the arithmetic of rkv_dense_elem.h shared with the CPU). Checks on device-resident values
 * (positions, ids) are not made here: the caller checks its host copies, and ids are also
 * checked on the device (rkv_cuda_embedding's error record). */
RKV_API int rkv_cuda_rmsnorm(const float* x, const float* w, float* y, int64_t rows, int32_t dim, float eps,
                             float w_offset, void* stream);
/* inv_freq: a device array of head_dim / 2 doubles. */
RKV_API int rkv_cuda_rope_table(float* q, float* k, const int32_t* positions, int64_t num_tokens,
                                int32_t num_q_heads, int32_t num_kv_heads, int32_t head_dim,
                                const double* inv_freq, void* stream);
RKV_API int rkv_cuda_silu_mul(const float* gate_up, float* out, int64_t rows, int32_t inter, void* stream);
RKV_API int rkv_cuda_gelu_tanh_mul(const float* gate_up, float* out, int64_t rows, int32_t inter, void* stream);
RKV_API int rkv_cuda_add_bias(float* y, const float* bias, int64_t rows, int32_t n, void* stream);
RKV_API int rkv_cuda_add_inplace(float* y, const float* x, int64_t n, void* stream);
RKV_API int rkv_cuda_soft_cap(float* x, int64_t n, float cap, void* stream);
RKV_API int rkv_cuda_scale(float* x, int64_t n, float s, void* stream);
/* A token whose id is outside [0, vocab) gets a zero row and is recorded in error_record
 * (RKV_CUDA_DEVERR_BAD_TOKEN, see above; may be NULL). */
RKV_API int rkv_cuda_embedding(const int32_t* ids, int64_t n, const void* table, int32_t dtype,
                               int32_t vocab, int32_t dim, float* out, int64_t* error_record, void* stream);
RKV_API int rkv_cuda_argmax(const float* logits, int64_t rows, int32_t vocab, int32_t* out, void* stream);

#ifdef __cplusplus
}
#endif

#endif /* RADIXKV_H */
