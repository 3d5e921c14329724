package io.radixkv.model;

import io.radixkv.kernels.AttentionKernels;
import io.radixkv.kernels.AttentionParams;
import io.radixkv.kernels.BackendMemory;
import io.radixkv.kernels.Bf16;
import io.radixkv.kernels.DType;
import io.radixkv.kernels.DenseKernels;
import io.radixkv.kernels.HostMemory;
import io.radixkv.kernels.KernelBackend;
import io.radixkv.kernels.KvCacheKernels;
import io.radixkv.kernels.KvCacheView;
import io.radixkv.kernels.PageTableCsr;
import io.radixkv.kernels.PagedKvLayout;
import io.radixkv.kernels.reference.JavaDenseKernels;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;

/**
 * Test-only KV scatter and paged attention in plain loops: every sequence's K/V is gathered
 * from its pages into contiguous double arrays, then attention is computed directly. Written
 * independently of the project's attention kernels, so the model's forward can be checked
 * before (and beside) them. Cache dtypes f32, bf16, f16.
 */
final class ContiguousTestBackend implements KernelBackend {
    private final HostMemory memory = new HostMemory();
    private final Kv kv = new Kv();
    private final Attention attention = new Attention();

    @Override
    public String name() {
        return "test-contiguous";
    }

    @Override
    public KvCacheKernels kv() {
        return kv;
    }

    @Override
    public AttentionKernels attention() {
        return attention;
    }

    @Override
    public DenseKernels dense() {
        return new JavaDenseKernels();
    }

    @Override
    public BackendMemory memory() {
        return memory;
    }

    @Override
    public void close() {
        memory.close();
    }

    static float load(MemorySegment pool, DType d, long index) {
        return switch (d) {
            case F32 -> pool.getAtIndex(ValueLayout.JAVA_FLOAT, index);
            case BF16 -> Bf16.toFloat(pool.getAtIndex(ValueLayout.JAVA_SHORT, index));
            case F16 -> Float.float16ToFloat(pool.getAtIndex(ValueLayout.JAVA_SHORT, index));
            default -> throw new UnsupportedOperationException("test backend: cache dtype " + d);
        };
    }

    static void store(MemorySegment pool, DType d, long index, float value) {
        switch (d) {
            case F32 -> pool.setAtIndex(ValueLayout.JAVA_FLOAT, index, value);
            case BF16 -> pool.setAtIndex(ValueLayout.JAVA_SHORT, index, Bf16.fromFloat(value));
            case F16 -> pool.setAtIndex(ValueLayout.JAVA_SHORT, index, Float.floatToFloat16(value));
            default -> throw new UnsupportedOperationException("test backend: cache dtype " + d);
        }
    }

    static final class Kv implements KvCacheKernels {
        @Override
        public void reshapeAndCache(MemorySegment k, MemorySegment v, DType srcDtype, MemorySegment slotMapping,
                                    long numTokens, KvCacheView cache) {
            if (srcDtype != DType.F32) {
                throw new UnsupportedOperationException("test backend: src dtype " + srcDtype);
            }
            PagedKvLayout lay = cache.layout();
            long row = lay.tokenElements();
            for (long t = 0; t < numTokens; t++) {
                long slot = slotMapping.getAtIndex(ValueLayout.JAVA_LONG, t);
                if (slot < 0) {
                    continue;
                }
                if (slot >= lay.slots()) {
                    throw new IllegalArgumentException("slot " + slot + " out of range");
                }
                for (long e = 0; e < row; e++) {
                    store(cache.kCache(), lay.cacheDtype(), slot * row + e, k.getAtIndex(ValueLayout.JAVA_FLOAT, t * row + e));
                    store(cache.vCache(), lay.cacheDtype(), slot * row + e, v.getAtIndex(ValueLayout.JAVA_FLOAT, t * row + e));
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
    }

    static final class Attention implements AttentionKernels {
        @Override
        public void decode(MemorySegment q, DType qDtype, MemorySegment out, DType outDtype, MemorySegment lse,
                           KvCacheView cache, PageTableCsr table, AttentionParams params) {
            int b = table.batchSize();
            try (var arena = java.lang.foreign.Arena.ofConfined()) {
                MemorySegment qo = arena.allocate(4L * (b + 1));
                for (int i = 0; i <= b; i++) {
                    qo.setAtIndex(ValueLayout.JAVA_INT, i, i);
                }
                appendPrefill(q, qDtype, out, outDtype, lse, qo, cache, table, MemorySegment.NULL, MemorySegment.NULL,
                        params);
            }
        }

        @Override
        public void appendPrefill(MemorySegment q, DType qDtype, MemorySegment out, DType outDtype, MemorySegment lse,
                                  MemorySegment qoIndptr, KvCacheView cache, PageTableCsr table,
                                  MemorySegment bidirIndptr, MemorySegment bidirRegions, AttentionParams params) {
            PagedKvLayout lay = cache.layout();
            int ps = lay.pageSize();
            int hkv = lay.numKvHeads();
            int d = lay.headDim();
            int hq = params.numQoHeads();
            int group = hq / hkv;
            for (int s = 0; s < table.batchSize(); s++) {
                int kvLen = (int) table.sequenceLength(s, ps);
                double[][][] kk = new double[kvLen][hkv][d];
                double[][][] vv = new double[kvLen][hkv][d];
                int base = table.kvIndptr().getAtIndex(ValueLayout.JAVA_INT, s);
                for (int p = 0; p < kvLen; p++) {
                    long page = table.kvIndices().getAtIndex(ValueLayout.JAVA_INT, base + p / ps);
                    long slot = page * ps + p % ps;
                    for (int h = 0; h < hkv; h++) {
                        for (int e = 0; e < d; e++) {
                            long idx = (slot * hkv + h) * d + e;
                            kk[p][h][e] = load(cache.kCache(), lay.cacheDtype(), idx) * cache.kScale();
                            vv[p][h][e] = load(cache.vCache(), lay.cacheDtype(), idx) * cache.vScale();
                        }
                    }
                }
                int lo = qoIndptr.getAtIndex(ValueLayout.JAVA_INT, s);
                int hi = qoIndptr.getAtIndex(ValueLayout.JAVA_INT, s + 1);
                int qLen = hi - lo;
                for (int i = 0; i < qLen; i++) {
                    int visible = kvLen - qLen + i + 1;
                    // Sliding window: keys pos - windowLeft .. pos (all when windowLeft is -1).
                    int first = params.windowLeft() < 0 ? 0 : Math.max(0, visible - 1 - params.windowLeft());
                    long row = lo + i;
                    for (int h = 0; h < hq; h++) {
                        int g = h / group;
                        double[] sc = new double[visible];
                        double max = Double.NEGATIVE_INFINITY;
                        for (int p = first; p < visible; p++) {
                            double dot = 0;
                            for (int e = 0; e < d; e++) {
                                dot += q.getAtIndex(ValueLayout.JAVA_FLOAT, (row * hq + h) * d + e) * kk[p][g][e];
                            }
                            sc[p] = dot * params.smScale();
                            max = Math.max(max, sc[p]);
                        }
                        double sum = 0;
                        for (int p = first; p < visible; p++) {
                            sc[p] = Math.exp(sc[p] - max);
                            sum += sc[p];
                        }
                        for (int e = 0; e < d; e++) {
                            double o = 0;
                            for (int p = first; p < visible; p++) {
                                o += sc[p] * vv[p][g][e];
                            }
                            out.setAtIndex(ValueLayout.JAVA_FLOAT, (row * hq + h) * d + e, (float) (o / sum));
                        }
                    }
                }
            }
        }

        @Override
        public void mergeState(MemorySegment va, MemorySegment sa, MemorySegment vb, MemorySegment sb,
                               MemorySegment vOut, MemorySegment sOut, long numTokens, int numHeads, int headDim) {
            throw new UnsupportedOperationException();
        }
    }
}
