package io.radixkv.kernels;

import io.radixkv.bindings.radixkv_h;
import java.lang.foreign.MemorySegment;

/**
 * Paged attention through libradixkv (vectorized C++, OpenMP). Every argument is validated in
 * Java first ({@link AttentionChecks}), so bad shapes or page tables fail with an
 * IllegalArgumentException before any native call; the native side re-checks the CSR and
 * reports with a {@link NativeException} should anything still slip through.
 */
final class CpuAttentionKernels implements AttentionKernels {
    CpuAttentionKernels() {
        NativeLibrary.loadCpu();
    }

    @Override
    public void decode(MemorySegment q, DType qDtype, MemorySegment out, DType outDtype, MemorySegment lse,
                       KvCacheView cache, PageTableCsr table, AttentionParams params) {
        AttentionChecks.decode(q, qDtype, out, outDtype, lse, cache, table, params);
        PagedKvLayout l = cache.layout();
        NativeLibrary.check("rkv_decode_attention", radixkv_h.rkv_decode_attention(
                q, qDtype.code(), out, outDtype.code(), nullable(lse),
                cache.kCache(), cache.vCache(), l.cacheDtype().code(), l.numPages(), l.pageSize(),
                params.numQoHeads(), l.numKvHeads(), l.headDim(),
                table.kvIndptr(), table.kvIndices(), table.kvLastPageLen(), table.batchSize(),
                params.smScale(), params.logitsSoftCap(), cache.kScale(), cache.vScale(), params.windowLeft()));
    }

    @Override
    public void appendPrefill(MemorySegment q, DType qDtype, MemorySegment out, DType outDtype, MemorySegment lse,
                              MemorySegment qoIndptr, KvCacheView cache, PageTableCsr table,
                              MemorySegment bidirIndptr, MemorySegment bidirRegions, AttentionParams params) {
        AttentionChecks.prefill(q, qDtype, out, outDtype, lse, qoIndptr, cache, table, bidirIndptr, bidirRegions,
                params);
        PagedKvLayout l = cache.layout();
        NativeLibrary.check("rkv_append_prefill_attention", radixkv_h.rkv_append_prefill_attention(
                q, qDtype.code(), out, outDtype.code(), nullable(lse), qoIndptr,
                cache.kCache(), cache.vCache(), l.cacheDtype().code(), l.numPages(), l.pageSize(),
                params.numQoHeads(), l.numKvHeads(), l.headDim(),
                table.kvIndptr(), table.kvIndices(), table.kvLastPageLen(), table.batchSize(),
                nullable(bidirIndptr), nullable(bidirRegions),
                params.smScale(), params.logitsSoftCap(), cache.kScale(), cache.vScale(), params.windowLeft()));
    }

    @Override
    public void mergeState(MemorySegment va, MemorySegment sa, MemorySegment vb, MemorySegment sb,
                           MemorySegment vOut, MemorySegment sOut, long numTokens, int numHeads, int headDim) {
        AttentionChecks.merge(va, sa, vb, sb, vOut, sOut, numTokens, numHeads, headDim);
        NativeLibrary.check("rkv_merge_state",
                radixkv_h.rkv_merge_state(va, sa, vb, sb, vOut, sOut, numTokens, numHeads, headDim));
    }

    private static MemorySegment nullable(MemorySegment s) {
        return AttentionChecks.isNull(s) ? MemorySegment.NULL : s;
    }
}
