package io.radixkv.kernels;

import java.lang.foreign.MemorySegment;
import java.util.List;

/** PLACEHOLDER: replaced by the foundation kernels work. */
final class JavaKvCacheKernels implements KvCacheKernels {
    @Override public void reshapeAndCache(MemorySegment k, MemorySegment v, DType srcDtype, MemorySegment slotMapping, long numTokens, KvCacheView cache) { throw new UnsupportedOperationException(); }
    @Override public void fp8Quantize(MemorySegment src, MemorySegment dst, long n, DType fp8Dtype, float scale) { throw new UnsupportedOperationException(); }
    @Override public void fp8Dequantize(MemorySegment src, MemorySegment dst, long n, DType fp8Dtype, float scale) { throw new UnsupportedOperationException(); }
    @Override public void convert(MemorySegment src, DType srcDtype, MemorySegment dst, DType dstDtype, long n, float scale) { throw new UnsupportedOperationException(); }
    @Override public void copyBlocks(List<KvCacheView> layers, MemorySegment blockMapping, long numPairs) { throw new UnsupportedOperationException(); }
}
