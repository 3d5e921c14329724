package io.radixkv.kernels;

import java.lang.foreign.MemorySegment;
import java.util.List;

/**
 * KV-cache maintenance kernels: scatter of new K/V into pages, FP8 conversion, page copy.
 * Every implementation validates all arguments before touching memory; a rejected call
 * leaves the pools unchanged.
 */
public interface KvCacheKernels {
    /**
     * Writes K/V rows {@code [numTokens, numKvHeads, headDim]} of {@code srcDtype} (f32, f16,
     * bf16) into the cache through an int64 {@code slotMapping[numTokens]}; a negative slot
     * skips the token. Values are converted to the cache dtype (FP8: divided by the scale).
     *
     * @throws IllegalArgumentException for a slot ≥ numPages*pageSize (naming it), wrong
     *     segment sizes, an unsupported dtype
     */
    void reshapeAndCache(MemorySegment k, MemorySegment v, DType srcDtype, MemorySegment slotMapping,
                         long numTokens, KvCacheView cache);

    /** dst[i] = fp8(src[i] / scale), saturating, round to nearest even, NaN kept. */
    void fp8Quantize(MemorySegment src, MemorySegment dst, long n, DType fp8Dtype, float scale);

    /** dst[i] = float(src[i]) * scale. */
    void fp8Dequantize(MemorySegment src, MemorySegment dst, long n, DType fp8Dtype, float scale);

    /** Element-wise conversion between any two dtypes (scale as in {@code rkv_convert}). */
    void convert(MemorySegment src, DType srcDtype, MemorySegment dst, DType dstDtype, long n, float scale);

    /**
     * For every layer, copies page {@code blockMapping[2p]} to page {@code blockMapping[2p+1]}
     * (int64 pairs) in both K and V pools. All layers must share one layout; destinations
     * must be distinct and never a source.
     */
    void copyBlocks(List<KvCacheView> layers, MemorySegment blockMapping, long numPairs);
}
