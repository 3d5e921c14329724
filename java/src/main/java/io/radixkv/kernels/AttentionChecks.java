package io.radixkv.kernels;

import java.lang.foreign.MemorySegment;

/**
 * Argument validation shared by every {@link AttentionKernels} implementation (native CPU,
 * CUDA and the Java reference), run before any native call: sizes of q/out/lse, dtypes, GQA
 * head counts, the CSR page table, qo_indptr and bidirectional regions. Throws
 * IllegalArgumentException naming the bad value; the page-table segments are host memory.
 */
public final class AttentionChecks {
    /** Largest head_dim the kernels accept (the CUDA kernels keep a row of q in registers). */
    public static final int MAX_HEAD_DIM = 256;

    private AttentionChecks() {}

    /**
     * Validated shapes of one call.
     *
     * @param kvLens tokens of each sequence
     * @param qoIndptr query row offsets per sequence ({@code batch+1} entries; decode: 0..batch)
     * @param bidirIndptr region offsets per sequence or null
     * @param bidirRegions flattened [start, end) pairs or null
     */
    public record Shape(long[] kvLens, int[] qoIndptr, int[] bidirIndptr, int[] bidirRegions, int group) {
        public int batch() {
            return kvLens.length;
        }

        public int totalQ() {
            return qoIndptr[qoIndptr.length - 1];
        }
    }

    public static Shape decode(MemorySegment q, DType qDtype, MemorySegment out, DType outDtype, MemorySegment lse,
                        KvCacheView cache, PageTableCsr table, AttentionParams params) {
        requireArguments(qDtype, outDtype, cache, table, params);
        Shape shape = tables(cache.layout(), table, MemorySegment.NULL, MemorySegment.NULL, MemorySegment.NULL,
                params.numQoHeads());
        rows(q, qDtype, out, outDtype, lse, shape.batch(), params.numQoHeads(), cache.layout().headDim());
        return shape;
    }

    public static Shape prefill(MemorySegment q, DType qDtype, MemorySegment out, DType outDtype, MemorySegment lse,
                         MemorySegment qoIndptr, KvCacheView cache, PageTableCsr table,
                         MemorySegment bidirIndptr, MemorySegment bidirRegions, AttentionParams params) {
        requireArguments(qDtype, outDtype, cache, table, params);
        if (isNull(qoIndptr)) {
            throw new IllegalArgumentException("qoIndptr must not be NULL for append prefill");
        }
        Shape shape = tables(cache.layout(), table, qoIndptr, bidirIndptr, bidirRegions, params.numQoHeads());
        rows(q, qDtype, out, outDtype, lse, shape.totalQ(), params.numQoHeads(), cache.layout().headDim());
        return shape;
    }

    /**
     * The host tables of one batch against a pool layout: heads, head_dim, the CSR page table,
     * qo_indptr (NULL: a decode batch, one row per sequence) and the bidirectional regions (both
     * NULL: none). Reads every table entry once.
     */
    public static Shape tables(PagedKvLayout layout, PageTableCsr table, MemorySegment qoIndptr, MemorySegment bidirIndptr,
                        MemorySegment bidirRegions, int numQoHeads) {
        if (layout == null || table == null) {
            throw new IllegalArgumentException("layout and table must not be null");
        }
        Checks.requirePositive("numQoHeads", numQoHeads);
        if (numQoHeads % layout.numKvHeads() != 0) {
            throw new IllegalArgumentException("numQoHeads " + numQoHeads
                    + " is not a multiple of numKvHeads " + layout.numKvHeads());
        }
        if (layout.headDim() > MAX_HEAD_DIM) {
            throw new IllegalArgumentException("headDim " + layout.headDim() + " exceeds " + MAX_HEAD_DIM);
        }
        table.validate(layout);
        int group = numQoHeads / layout.numKvHeads();
        long[] lens = lengths(table, layout);
        int batch = table.batchSize();
        int[] qo = new int[batch + 1];
        if (isNull(qoIndptr)) {
            for (int b = 0; b <= batch; b++) {
                qo[b] = b;
            }
        } else {
            Checks.requireBytes("qoIndptr", qoIndptr, 4L * (batch + 1));
            qo[0] = Checks.intAt(qoIndptr, 0);
            if (qo[0] != 0) {
                throw new IllegalArgumentException("qo_indptr[0] must be 0, got " + qo[0]);
            }
            for (int b = 0; b < batch; b++) {
                qo[b + 1] = Checks.intAt(qoIndptr, b + 1);
                int qLen = qo[b + 1] - qo[b];
                if (qLen < 0) {
                    throw new IllegalArgumentException("qo_indptr is not monotone at " + (b + 1) + ": " + qo[b + 1]
                            + " < " + qo[b]);
                }
                if (qLen > lens[b]) {
                    throw new IllegalArgumentException("sequence " + b + " has q_len " + qLen + " > kv_len " + lens[b]
                            + " (the new tokens must already be in the cache)");
                }
            }
        }
        boolean noIndptr = isNull(bidirIndptr);
        boolean noRegions = isNull(bidirRegions);
        if (noIndptr != noRegions) {
            throw new IllegalArgumentException("bidirIndptr and bidirRegions must both be NULL or both be set");
        }
        if (noIndptr) {
            return new Shape(lens, qo, null, null, group);
        }
        if (isNull(qoIndptr)) {
            throw new IllegalArgumentException("bidirectional regions need an append-prefill batch (qoIndptr)");
        }
        Checks.requireBytes("bidirIndptr", bidirIndptr, 4L * (batch + 1));
        int[] bi = new int[batch + 1];
        bi[0] = Checks.intAt(bidirIndptr, 0);
        if (bi[0] != 0) {
            throw new IllegalArgumentException("bidir_indptr[0] must be 0, got " + bi[0]);
        }
        for (int b = 0; b < batch; b++) {
            bi[b + 1] = Checks.intAt(bidirIndptr, b + 1);
            if (bi[b + 1] < bi[b]) {
                throw new IllegalArgumentException("bidir_indptr is not monotone at " + (b + 1) + ": " + bi[b + 1]
                        + " < " + bi[b]);
            }
        }
        Checks.requireBytes("bidirRegions", bidirRegions, 8L * bi[batch]);
        int[] regions = new int[2 * bi[batch]];
        for (int i = 0; i < regions.length; i++) {
            regions[i] = Checks.intAt(bidirRegions, i);
        }
        for (int b = 0; b < batch; b++) {
            for (int r = bi[b]; r < bi[b + 1]; r++) {
                int s = regions[2 * r];
                int e = regions[2 * r + 1];
                if (s < 0 || s >= e || e > lens[b]) {
                    throw new IllegalArgumentException("bidirectional region " + r + " of sequence " + b + " is ["
                            + s + ", " + e + "), not a non-empty range inside [0, " + lens[b] + ")");
                }
            }
        }
        return new Shape(lens, qo, bi, regions, group);
    }

    public static void merge(MemorySegment va, MemorySegment sa, MemorySegment vb, MemorySegment sb,
                      MemorySegment vOut, MemorySegment sOut, long numTokens, int numHeads, int headDim) {
        Checks.requireNonNegative("numTokens", numTokens);
        Checks.requirePositive("numHeads", numHeads);
        Checks.requirePositive("headDim", headDim);
        long rows = Math.multiplyExact(numTokens, (long) numHeads);
        long vBytes = Math.multiplyExact(rows, 4L * headDim);
        Checks.requireBytes("va", va, vBytes);
        Checks.requireBytes("vb", vb, vBytes);
        Checks.requireBytes("vOut", vOut, vBytes);
        Checks.requireBytes("sa", sa, 4 * rows);
        Checks.requireBytes("sb", sb, 4 * rows);
        Checks.requireBytes("sOut", sOut, 4 * rows);
    }

    public static boolean isNull(MemorySegment s) {
        return s == null || s.equals(MemorySegment.NULL);
    }

    /** Non-null arguments and the q/out dtypes. */
    public static void requireArguments(DType qDtype, DType outDtype, KvCacheView cache, PageTableCsr table,
                                 AttentionParams params) {
        if (cache == null || table == null || params == null) {
            throw new IllegalArgumentException("cache, table and params must not be null");
        }
        Checks.requireDtype("qDtype", qDtype, DType.F32, DType.F16, DType.BF16);
        Checks.requireDtype("outDtype", outDtype, DType.F32, DType.F16, DType.BF16);
    }

    private static long[] lengths(PageTableCsr table, PagedKvLayout layout) {
        long[] lens = new long[table.batchSize()];
        for (int b = 0; b < lens.length; b++) {
            lens[b] = table.sequenceLength(b, layout.pageSize());
        }
        return lens;
    }

    /** Sizes of q, out ({@code rows x numQoHeads x headDim}) and the optional lse. */
    public static void rows(MemorySegment q, DType qDtype, MemorySegment out, DType outDtype, MemorySegment lse,
                             long rows, int numQoHeads, int headDim) {
        long elems = Math.multiplyExact(Math.multiplyExact(rows, (long) numQoHeads), (long) headDim);
        Checks.requireElements("q", q, elems, qDtype);
        Checks.requireElements("out", out, elems, outDtype);
        Checks.optionalBytes("lse", lse, Math.multiplyExact(rows * numQoHeads, 4L));
    }

    /**
     * The checks of a planned run ({@link AttentionKernels#run}) once the plan is known to be the
     * kernels' own: not stale ({@code generation} is the kernels' latest), the cache's layout and
     * the params' heads are the plan's, q/out dtypes and sizes fit {@code rows} query rows.
     */
    public static void plannedRun(AttentionPlan p, long generation, long latest, MemorySegment q, DType qDtype,
                           MemorySegment out, DType outDtype, MemorySegment lse, KvCacheView cache,
                           AttentionParams params, long rows) {
        if (generation != latest) {
            throw new IllegalArgumentException("stale plan: " + p + " was superseded by a later plan() (generation "
                    + latest + "); plan once per step, then run every layer");
        }
        if (cache == null || params == null) {
            throw new IllegalArgumentException("cache and params must not be null");
        }
        if (!cache.layout().equals(p.layout())) {
            throw new IllegalArgumentException("cache layout " + cache.layout() + " differs from the plan's "
                    + p.layout());
        }
        if (params.numQoHeads() != p.numQoHeads()) {
            throw new IllegalArgumentException("params.numQoHeads " + params.numQoHeads() + " differs from the plan's "
                    + p.numQoHeads());
        }
        Checks.requireDtype("qDtype", qDtype, DType.F32, DType.F16, DType.BF16);
        Checks.requireDtype("outDtype", outDtype, DType.F32, DType.F16, DType.BF16);
        rows(q, qDtype, out, outDtype, lse, rows, p.numQoHeads(), p.layout().headDim());
    }
}
