package io.radixkv.kernels;

import io.radixkv.bindings.radixkv_h;
import java.lang.foreign.MemorySegment;

/**
 * Paged attention through libradixkv_cuda. Tensors (q, out, lse, K/V pools, merge inputs) are
 * device memory of the backend; the page table, qo_indptr and bidirectional regions are host
 * segments (as for every backend): they are validated here on the host with
 * {@link AttentionChecks} and then uploaded to a reusable device scratch buffer, so a bad
 * table never reaches the GPU. Kernels run on the library's stream (the legacy default
 * stream); the upload of the next call is ordered after the previous kernels on that stream.
 */
final class CudaAttentionKernels implements AttentionKernels {
    private BackendMemory device;
    private MemorySegment scratch;

    /**
     * Kernels whose table uploads go to their own device memory, created on first use (so that
     * constructing this object never touches CUDA: {@code CudaBackend} builds it before probing).
     */
    CudaAttentionKernels() {}

    /** @param device device memory (e.g. the CUDA backend's) used for the uploaded page tables */
    CudaAttentionKernels(BackendMemory device) {
        if (device == null || !device.isDevice()) {
            throw new IllegalArgumentException("CudaAttentionKernels needs device memory");
        }
        this.device = device;
    }

    private BackendMemory device() {
        if (device == null) {
            if (NativeLibrary.loadCuda().isEmpty()) {
                throw new UnsupportedOperationException("libradixkv_cuda is not available: "
                        + NativeLibrary.cudaUnavailableReason());
            }
            device = new CudaMemory();
        }
        return device;
    }

    @Override
    public synchronized void decode(MemorySegment q, DType qDtype, MemorySegment out, DType outDtype,
                                    MemorySegment lse, KvCacheView cache, PageTableCsr table, AttentionParams params) {
        AttentionChecks.decode(q, qDtype, out, outDtype, lse, cache, table, params);
        Uploaded t = upload(table, null, null, null, 0);
        PagedKvLayout l = cache.layout();
        check("rkv_cuda_decode_attention", radixkv_h.rkv_cuda_decode_attention(
                q, qDtype.code(), out, outDtype.code(), nullable(lse),
                cache.kCache(), cache.vCache(), l.cacheDtype().code(), l.numPages(), l.pageSize(),
                params.numQoHeads(), l.numKvHeads(), l.headDim(),
                t.indptr, t.indices, t.last, table.batchSize(),
                params.smScale(), params.logitsSoftCap(), cache.kScale(), cache.vScale(), params.windowLeft()));
    }

    @Override
    public synchronized void appendPrefill(MemorySegment q, DType qDtype, MemorySegment out, DType outDtype,
                                           MemorySegment lse, MemorySegment qoIndptr, KvCacheView cache,
                                           PageTableCsr table, MemorySegment bidirIndptr, MemorySegment bidirRegions,
                                           AttentionParams params) {
        AttentionChecks.Shape shape = AttentionChecks.prefill(q, qDtype, out, outDtype, lse, qoIndptr, cache, table,
                bidirIndptr, bidirRegions, params);
        int regions = shape.bidirRegions() == null ? 0 : shape.bidirRegions().length;
        Uploaded t = upload(table, qoIndptr, shape.bidirIndptr() == null ? null : bidirIndptr,
                shape.bidirRegions() == null ? null : bidirRegions, regions);
        PagedKvLayout l = cache.layout();
        check("rkv_cuda_append_prefill_attention", radixkv_h.rkv_cuda_append_prefill_attention(
                q, qDtype.code(), out, outDtype.code(), nullable(lse), t.qoIndptr,
                cache.kCache(), cache.vCache(), l.cacheDtype().code(), l.numPages(), l.pageSize(),
                params.numQoHeads(), l.numKvHeads(), l.headDim(),
                t.indptr, t.indices, t.last, table.batchSize(), t.bidirIndptr, t.bidirRegions,
                params.smScale(), params.logitsSoftCap(), cache.kScale(), cache.vScale(), params.windowLeft()));
    }

    @Override
    public void mergeState(MemorySegment va, MemorySegment sa, MemorySegment vb, MemorySegment sb,
                           MemorySegment vOut, MemorySegment sOut, long numTokens, int numHeads, int headDim) {
        AttentionChecks.merge(va, sa, vb, sb, vOut, sOut, numTokens, numHeads, headDim);
        check("rkv_cuda_merge_state",
                radixkv_h.rkv_cuda_merge_state(va, sa, vb, sb, vOut, sOut, numTokens, numHeads, headDim));
    }

    /** Device addresses of the uploaded host arrays (NULL where absent). */
    private record Uploaded(MemorySegment indptr, MemorySegment indices, MemorySegment last, MemorySegment qoIndptr,
                            MemorySegment bidirIndptr, MemorySegment bidirRegions) {}

    private Uploaded upload(PageTableCsr table, MemorySegment qoIndptr, MemorySegment bidirIndptr,
                            MemorySegment bidirRegions, int regionInts) {
        int batch = table.batchSize();
        long indptrBytes = 4L * (batch + 1);
        long indicesBytes = 4L * table.nnz();
        long lastBytes = 4L * batch;
        long qoBytes = qoIndptr == null ? 0 : indptrBytes;
        long biBytes = bidirIndptr == null ? 0 : indptrBytes;
        long brBytes = bidirRegions == null ? 0 : 4L * regionInts;
        long[] sizes = {indptrBytes, indicesBytes, lastBytes, qoBytes, biBytes, brBytes};
        MemorySegment[] src = {table.kvIndptr(), table.kvIndices(), table.kvLastPageLen(), qoIndptr, bidirIndptr,
                bidirRegions};
        long total = 0;
        for (long s : sizes) {
            total += align(s);
        }
        if (scratch == null || scratch.byteSize() < total) {
            // grows geometrically; earlier buffers are released with the backend's memory
            scratch = device().allocate(Math.max(total, scratch == null ? 4096 : 2 * scratch.byteSize()));
        }
        MemorySegment[] dst = new MemorySegment[sizes.length];
        long offset = 0;
        for (int i = 0; i < sizes.length; i++) {
            if (src[i] == null || sizes[i] == 0) {
                dst[i] = src[i] == null ? MemorySegment.NULL : scratch.asSlice(offset, 0);
                continue;
            }
            dst[i] = scratch.asSlice(offset, sizes[i]);
            device().copyFromHost(src[i], dst[i], sizes[i]);
            offset += align(sizes[i]);
        }
        return new Uploaded(dst[0], dst[1], dst[2], dst[3], dst[4], dst[5]);
    }

    private static long align(long bytes) {
        return (bytes + 255) & ~255L;
    }

    private static MemorySegment nullable(MemorySegment s) {
        return AttentionChecks.isNull(s) ? MemorySegment.NULL : s;
    }

    private static void check(String function, int status) {
        if (status < 0) {
            String msg = radixkv_h.rkv_cuda_last_error().reinterpret(Long.MAX_VALUE).getString(0);
            throw new NativeException(function, status, msg);
        }
    }
}
