package io.radixkv.kernels.cpu;

import io.radixkv.bindings.radixkv_h;
import io.radixkv.bindings.rkv_decode_params;
import io.radixkv.bindings.rkv_prefill_params;
import io.radixkv.kernels.AttentionChecks;
import io.radixkv.kernels.AttentionKernels;
import io.radixkv.kernels.AttentionParams;
import io.radixkv.kernels.AttentionPlan;
import io.radixkv.kernels.DType;
import io.radixkv.kernels.HostAttentionPlan;
import io.radixkv.kernels.KvCacheView;
import io.radixkv.kernels.NativeException;
import io.radixkv.kernels.PageTableCsr;
import io.radixkv.kernels.PagedKvLayout;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * Paged attention through libradixkv (vectorized C++, OpenMP). Every argument is validated in
 * Java first ({@link AttentionChecks}), so bad shapes or page tables fail with an
 * IllegalArgumentException before any native call; the native side re-checks the CSR and
 * reports with a {@link NativeException} should anything still slip through.
 *
 * <p>A decode {@link #plan} (once per engine step) validates the page table in Java and natively
 * once, keeping the sequence lengths in a native rkv_decode_plan; every layer's {@link #run} then
 * reuses them, and the split-KV work is decided once per distinct sliding window (not per
 * layer). Append-prefill plans are the validated host tables ({@link HostAttentionPlan}).
 */
public final class CpuAttentionKernels implements AttentionKernels {
    private MemorySegment nativePlan;
    private long generation;

    public CpuAttentionKernels() {
        NativeLibrary.loadCpu();
    }

    @Override
    public synchronized AttentionPlan plan(PagedKvLayout layout, PageTableCsr table, MemorySegment qoIndptr,
                                           int numQoHeads) {
        if (qoIndptr != null && !qoIndptr.equals(MemorySegment.NULL)) {
            return HostAttentionPlan.of(layout, table, qoIndptr, numQoHeads);
        }
        AttentionChecks.tables(layout, table, MemorySegment.NULL, MemorySegment.NULL, MemorySegment.NULL, numQoHeads);
        generation++; // the previous plan is stale from here on, even if this one fails
        MemorySegment p = nativePlan();
        NativeLibrary.check("rkv_decode_plan_tables", radixkv_h.rkv_decode_plan_tables(p, table.kvIndptr(),
                table.kvIndices(), table.kvLastPageLen(), table.batchSize(), layout.numPages(), layout.pageSize()));
        return new CpuDecodePlan(this, generation, layout, table, numQoHeads);
    }

    @Override
    public synchronized void run(AttentionPlan plan, MemorySegment q, DType qDtype, MemorySegment out, DType outDtype,
                                 MemorySegment lse, KvCacheView cache, AttentionParams params) {
        if (!(plan instanceof CpuDecodePlan p)) {
            AttentionKernels.super.run(plan, q, qDtype, out, outDtype, lse, cache, params);
            return;
        }
        if (p.owner() != this) {
            throw new IllegalArgumentException("plan " + plan + " was not made by these kernels");
        }
        AttentionChecks.plannedRun(p, p.generation(), generation, q, qDtype, out, outDtype, lse, cache, params,
                p.table().batchSize());
        try (Arena a = Arena.ofConfined()) {
            NativeLibrary.check("rkv_decode_attention_run", radixkv_h.rkv_decode_attention_run(nativePlan,
                    decodeParams(a, q, qDtype, out, outDtype, lse, cache, p.table(), params)));
        }
    }

    /** Split-KV plans the current decode plan has made so far (one per distinct window run): tests. */
    synchronized long splitPlans() {
        return nativePlan == null ? 0 : radixkv_h.rkv_decode_plan_splits(nativePlan);
    }

    /** The native plan, created on first use and destroyed when these kernels become unreachable. */
    private MemorySegment nativePlan() {
        if (nativePlan == null) {
            try (Arena a = Arena.ofConfined()) {
                MemorySegment cell = a.allocate(ValueLayout.ADDRESS);
                NativeLibrary.check("rkv_decode_plan_create", radixkv_h.rkv_decode_plan_create(cell));
                nativePlan = cell.get(ValueLayout.ADDRESS, 0).reinterpret(0, Arena.ofAuto(),
                        radixkv_h::rkv_decode_plan_destroy);
            }
        }
        return nativePlan;
    }

    @Override
    public void decode(MemorySegment q, DType qDtype, MemorySegment out, DType outDtype, MemorySegment lse,
                       KvCacheView cache, PageTableCsr table, AttentionParams params) {
        AttentionChecks.decode(q, qDtype, out, outDtype, lse, cache, table, params);
        try (Arena a = Arena.ofConfined()) {
            NativeLibrary.check("rkv_decode_attention", radixkv_h.rkv_decode_attention(
                    decodeParams(a, q, qDtype, out, outDtype, lse, cache, table, params)));
        }
    }

    @Override
    public void appendPrefill(MemorySegment q, DType qDtype, MemorySegment out, DType outDtype, MemorySegment lse,
                              MemorySegment qoIndptr, KvCacheView cache, PageTableCsr table,
                              MemorySegment bidirIndptr, MemorySegment bidirRegions, AttentionParams params) {
        AttentionChecks.prefill(q, qDtype, out, outDtype, lse, qoIndptr, cache, table, bidirIndptr, bidirRegions,
                params);
        try (Arena a = Arena.ofConfined()) {
            MemorySegment p = rkv_prefill_params.allocate(a);
            NativeAttentionArgs.query(rkv_prefill_params.attn(p), q, qDtype, out, outDtype, lse, params);
            NativeAttentionArgs.pagedKv(rkv_prefill_params.kv(p), cache, table.kvIndptr(), table.kvIndices(),
                    table.kvLastPageLen(), table.batchSize());
            rkv_prefill_params.qo_indptr(p, qoIndptr);
            rkv_prefill_params.bidir_indptr(p, NativeAttentionArgs.orNull(bidirIndptr));
            rkv_prefill_params.bidir_regions(p, NativeAttentionArgs.orNull(bidirRegions));
            NativeLibrary.check("rkv_append_prefill_attention", radixkv_h.rkv_append_prefill_attention(p));
        }
    }

    /** An rkv_decode_params in {@code a} for one call over the host page table. */
    private static MemorySegment decodeParams(Arena a, MemorySegment q, DType qDtype, MemorySegment out,
                                              DType outDtype, MemorySegment lse, KvCacheView cache,
                                              PageTableCsr table, AttentionParams params) {
        MemorySegment p = rkv_decode_params.allocate(a);
        NativeAttentionArgs.query(rkv_decode_params.attn(p), q, qDtype, out, outDtype, lse, params);
        NativeAttentionArgs.pagedKv(rkv_decode_params.kv(p), cache, table.kvIndptr(), table.kvIndices(),
                table.kvLastPageLen(), table.batchSize());
        return p;
    }

    @Override
    public void mergeState(MemorySegment va, MemorySegment sa, MemorySegment vb, MemorySegment sb,
                           MemorySegment vOut, MemorySegment sOut, long numTokens, int numHeads, int headDim) {
        AttentionChecks.merge(va, sa, vb, sb, vOut, sOut, numTokens, numHeads, headDim);
        NativeLibrary.check("rkv_merge_state",
                radixkv_h.rkv_merge_state(va, sa, vb, sb, vOut, sOut, numTokens, numHeads, headDim));
    }
}
