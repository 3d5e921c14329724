package io.radixkv.kernels;

import java.lang.foreign.MemorySegment;

/** PLACEHOLDER: replaced by the attention kernels work (wrappers over rkv_cuda_* attention). */
final class CudaAttentionKernels implements AttentionKernels {
    @Override public void decode(MemorySegment q, DType qDtype, MemorySegment out, DType outDtype, MemorySegment lse, KvCacheView cache, PageTableCsr table, AttentionParams params) { throw new UnsupportedOperationException(); }
    @Override public void appendPrefill(MemorySegment q, DType qDtype, MemorySegment out, DType outDtype, MemorySegment lse, MemorySegment qoIndptr, KvCacheView cache, PageTableCsr table, MemorySegment bidirIndptr, MemorySegment bidirRegions, AttentionParams params) { throw new UnsupportedOperationException(); }
    @Override public void mergeState(MemorySegment va, MemorySegment sa, MemorySegment vb, MemorySegment sb, MemorySegment vOut, MemorySegment sOut, long numTokens, int numHeads, int headDim) { throw new UnsupportedOperationException(); }
}
