package io.radixkv.engine;

import io.radixkv.kernels.AttentionKernels;
import io.radixkv.kernels.AttentionParams;
import io.radixkv.kernels.BackendMemory;
import io.radixkv.kernels.DType;
import io.radixkv.kernels.HostMemory;
import io.radixkv.kernels.KernelBackend;
import io.radixkv.kernels.KvCacheKernels;
import io.radixkv.kernels.KvCacheView;
import io.radixkv.kernels.PageTableCsr;
import io.radixkv.kernels.PagedKvLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;

/**
 * Test-local backend: plain-Java KV scatter (f32 / bf16 caches) and paged attention
 * (decode and append prefill, GQA, double accumulation), written from the kernel contracts.
 * Used by the engine tests only where the project's kernels are not available yet.
 */
final class PlainJavaKernels implements KernelBackend, KvCacheKernels, AttentionKernels {
    private static final ValueLayout.OfFloat F = ValueLayout.JAVA_FLOAT;
    private static final ValueLayout.OfShort S = ValueLayout.JAVA_SHORT;
    private static final ValueLayout.OfInt I = ValueLayout.JAVA_INT;
    private static final ValueLayout.OfLong L = ValueLayout.JAVA_LONG;

    private final HostMemory memory = new HostMemory();

    @Override
    public String name() {
        return "plain-java-test";
    }

    @Override
    public KvCacheKernels kv() {
        return this;
    }

    @Override
    public AttentionKernels attention() {
        return this;
    }

    @Override
    public BackendMemory memory() {
        return memory;
    }

    @Override
    public void close() {
        memory.close();
    }

    // ---- KV cache ----

    private static float load(MemorySegment pool, DType dt, long i) {
        return switch (dt) {
            case F32 -> pool.getAtIndex(F, i);
            case BF16 -> Float.intBitsToFloat((pool.getAtIndex(S, i) & 0xffff) << 16);
            default -> throw new IllegalArgumentException("test kernels support f32/bf16 caches, not " + dt);
        };
    }

    private static void store(MemorySegment pool, DType dt, long i, float v) {
        switch (dt) {
            case F32 -> pool.setAtIndex(F, i, v);
            case BF16 -> {
                int bits = Float.floatToRawIntBits(v);
                int rounded = (bits + 0x7fff + ((bits >>> 16) & 1)) >>> 16; // round to nearest even
                pool.setAtIndex(S, i, (short) rounded);
            }
            default -> throw new IllegalArgumentException("test kernels support f32/bf16 caches, not " + dt);
        }
    }

    @Override
    public void reshapeAndCache(MemorySegment k, MemorySegment v, DType srcDtype, MemorySegment slotMapping,
                                long numTokens, KvCacheView cache) {
        if (srcDtype != DType.F32) {
            throw new IllegalArgumentException("src dtype " + srcDtype);
        }
        PagedKvLayout lay = cache.layout();
        long te = lay.tokenElements();
        for (long t = 0; t < numTokens; t++) {
            long slot = slotMapping.getAtIndex(L, t);
            if (slot < 0) {
                continue;
            }
            if (slot >= lay.slots()) {
                throw new IllegalArgumentException("slot " + slot + " out of range");
            }
            for (long e = 0; e < te; e++) {
                store(cache.kCache(), lay.cacheDtype(), slot * te + e, k.getAtIndex(F, t * te + e));
                store(cache.vCache(), lay.cacheDtype(), slot * te + e, v.getAtIndex(F, t * te + e));
            }
        }
    }

    @Override
    public void fp8Quantize(MemorySegment src, MemorySegment dst, long n, DType fp8Dtype, float scale) {
        throw new UnsupportedOperationException();
    }

    @Override
    public void fp8Dequantize(MemorySegment src, MemorySegment dst, long n, DType fp8Dtype, float scale) {
        throw new UnsupportedOperationException();
    }

    @Override
    public void convert(MemorySegment src, DType srcDtype, MemorySegment dst, DType dstDtype, long n, float scale) {
        throw new UnsupportedOperationException();
    }

    @Override
    public void copyBlocks(List<KvCacheView> layers, MemorySegment blockMapping, long numPairs) {
        throw new UnsupportedOperationException();
    }

    // ---- attention ----

    @Override
    public void decode(MemorySegment q, DType qDtype, MemorySegment out, DType outDtype, MemorySegment lse,
                       KvCacheView cache, PageTableCsr table, AttentionParams params) {
        int batch = table.batchSize();
        for (int b = 0; b < batch; b++) {
            long kvLen = table.sequenceLength(b, cache.layout().pageSize());
            attendRow(q, out, b, cache, table, b, kvLen, params);
        }
    }

    @Override
    public void appendPrefill(MemorySegment q, DType qDtype, MemorySegment out, DType outDtype, MemorySegment lse,
                              MemorySegment qoIndptr, KvCacheView cache, PageTableCsr table, MemorySegment bidirIndptr,
                              MemorySegment bidirRegions, AttentionParams params) {
        int batch = table.batchSize();
        for (int b = 0; b < batch; b++) {
            int lo = qoIndptr.getAtIndex(I, b);
            int hi = qoIndptr.getAtIndex(I, b + 1);
            long kvLen = table.sequenceLength(b, cache.layout().pageSize());
            int qLen = hi - lo;
            for (int i = 0; i < qLen; i++) {
                attendRow(q, out, lo + i, cache, table, b, kvLen - qLen + i + 1, params);
            }
        }
    }

    /** Output row {@code row} attends to KV positions [0, visible) of sequence {@code b}. */
    private static void attendRow(MemorySegment q, MemorySegment out, long row, KvCacheView cache, PageTableCsr table,
                                  int b, long visible, AttentionParams params) {
        PagedKvLayout lay = cache.layout();
        int ps = lay.pageSize();
        int hq = params.numQoHeads();
        int hkv = lay.numKvHeads();
        int d = lay.headDim();
        int group = hq / hkv;
        int base = table.kvIndptr().getAtIndex(I, b);
        double[] scores = new double[(int) visible];
        double[] acc = new double[d];
        for (int h = 0; h < hq; h++) {
            int kh = h / group;
            long qOff = (row * hq + h) * d;
            double max = Double.NEGATIVE_INFINITY;
            for (int p = 0; p < visible; p++) {
                long page = table.kvIndices().getAtIndex(I, base + p / ps);
                long slot = page * ps + p % ps;
                long kOff = (slot * hkv + kh) * d;
                double dot = 0;
                for (int e = 0; e < d; e++) {
                    dot += (double) q.getAtIndex(F, qOff + e) * load(cache.kCache(), lay.cacheDtype(), kOff + e);
                }
                scores[p] = dot * params.smScale();
                max = Math.max(max, scores[p]);
            }
            java.util.Arrays.fill(acc, 0);
            double sum = 0;
            for (int p = 0; p < visible; p++) {
                double w = Math.exp(scores[p] - max);
                sum += w;
                long page = table.kvIndices().getAtIndex(I, base + p / ps);
                long slot = page * ps + p % ps;
                long vOff = (slot * hkv + kh) * d;
                for (int e = 0; e < d; e++) {
                    acc[e] += w * load(cache.vCache(), lay.cacheDtype(), vOff + e);
                }
            }
            for (int e = 0; e < d; e++) {
                out.setAtIndex(F, qOff + e, (float) (visible == 0 ? 0 : acc[e] / sum));
            }
        }
    }

    @Override
    public void mergeState(MemorySegment va, MemorySegment sa, MemorySegment vb, MemorySegment sb, MemorySegment vOut,
                           MemorySegment sOut, long numTokens, int numHeads, int headDim) {
        throw new UnsupportedOperationException();
    }
}
