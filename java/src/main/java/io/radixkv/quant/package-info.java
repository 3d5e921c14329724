/**
 * llama.cpp's block-quantized weight formats (Q8_0, Q4_0, Q5_0, Q4_K, Q6_K), bit-compatible with
 * ggml's block structs, so a block read from a GGUF file is used as it is: dequantization, and
 * the reference quantizers that produce the same bytes as ggml's {@code quantize_row_*_ref} for
 * the same finite input (nearest-int rounding, ggml's scale searches, f16 scales rounded to
 * nearest even). Pure Java, on heap arrays; docs/models.md ("Weight formats") gives each layout
 * and its formula.
 */
package io.radixkv.quant;
