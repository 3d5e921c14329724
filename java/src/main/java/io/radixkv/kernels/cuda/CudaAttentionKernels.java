package io.radixkv.kernels.cuda;

import io.radixkv.bindings.radixkv_h;
import io.radixkv.bindings.rkv_decode_params;
import io.radixkv.bindings.rkv_prefill_params;
import io.radixkv.kernels.AttentionChecks;
import io.radixkv.kernels.AttentionKernels;
import io.radixkv.kernels.AttentionParams;
import io.radixkv.kernels.AttentionPlan;
import io.radixkv.kernels.BackendMemory;
import io.radixkv.kernels.DType;
import io.radixkv.kernels.KvCacheView;
import io.radixkv.kernels.PageTableCsr;
import io.radixkv.kernels.PagedKvLayout;
import io.radixkv.kernels.cpu.NativeAttentionArgs;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * Paged attention through libradixkv_cuda, with FlashInfer's plan/run split. Tensors (q, out,
 * lse, K/V pools, merge inputs) are device memory of the backend; page tables, qo_indptr and
 * bidirectional regions are host segments, validated here on the host ({@link AttentionChecks},
 * {@link PageTableCsr#validate}) so a bad table never reaches the GPU.
 *
 * <p>{@link #plan} (once per engine step) validates the tables, copies them into pinned staging
 * and enqueues ONE asynchronous upload on the backend's stream, then lets the native planner
 * decide the split-KV count / prefill work items from the host copies; {@link #run} (every
 * layer) only checks shapes and launches. Everything is ordered on the backend's one stream, so
 * the upload precedes the runs and a later plan's upload follows them. A plan is valid until the
 * next {@link #plan}; a stale plan is refused.
 *
 * <p>{@link #decode} / {@link #appendPrefill} (host tables per call) plan and run in one go on a
 * second, private plan, so they never invalidate the step's plan; each waits for the previous
 * call's upload before reusing its pinned staging (a convenience form, not the engine's path).
 *
 * <p>{@link #plan} copies the caller's host tables into pinned staging before it returns, so the
 * caller may rewrite them at once; the staging itself is reused by the next {@link #plan} only
 * after the fence recorded behind this plan's upload has passed.
 */
final class CudaAttentionKernels implements AttentionKernels {
    /**
     * The native side (libradixkv_cuda's plan, run and merge entry points): an interface so
     * tests can stand in for the device and observe what reaches it.
     */
    interface Device {
        MemorySegment createPlan();

        void destroyPlan(MemorySegment plan);

        /** rkv_cuda_attn_plan_info: {decode, batch, split count or items, buffer address}. */
        long[] info(MemorySegment plan);

        /** rkv_cuda_attn_plan_batch from host tables (qoIndptr NULL: decode). */
        void plan(MemorySegment plan, MemorySegment qoIndptr, MemorySegment kvIndptr, MemorySegment kvLastPageLen,
                  int batch, PagedKvLayout layout, int numQoHeads, MemorySegment stream);

        void decode(CudaAttentionPlan plan, Launch launch, MemorySegment stream);

        void prefill(CudaAttentionPlan plan, Launch launch, MemorySegment stream);

        void merge(MemorySegment va, MemorySegment sa, MemorySegment vb, MemorySegment sb, MemorySegment vOut,
                   MemorySegment sOut, long numTokens, int numHeads, int headDim, MemorySegment stream);
    }

    /** One layer's tensors and parameters. */
    record Launch(MemorySegment q, DType qDtype, MemorySegment out, DType outDtype, MemorySegment lse,
                  KvCacheView cache, AttentionParams params) {}

    /** A native plan with its staging: one for the step's plans, one for the per-call forms. */
    private final class Slot {
        private final CudaStaging staging;
        private MemorySegment nativePlan;
        private long latest = -1;

        Slot(CudaStaging staging) {
            this.staging = staging;
        }
    }

    private final MemorySegment stream;
    private final Device device;
    private final Slot step;
    private final Slot call;
    private long generations;

    /**
     * @param memory the backend's device memory (allocations of the staging buffers)
     * @param stream the backend's cudaStream_t every upload and launch is ordered on
     * @param stepStaging staging of {@link #plan}
     * @param callStaging staging of {@link #decode} / {@link #appendPrefill}
     */
    CudaAttentionKernels(BackendMemory memory, MemorySegment stream, Device device, CudaStaging stepStaging,
                         CudaStaging callStaging) {
        if (memory == null || !memory.isDevice()) {
            throw new IllegalArgumentException("CudaAttentionKernels needs device memory");
        }
        this.stream = stream;
        this.device = device;
        this.step = new Slot(stepStaging);
        this.call = new Slot(callStaging);
    }

    /** The kernels of a CUDA backend: libradixkv_cuda on {@code memory}'s stream. */
    static CudaAttentionKernels of(CudaMemory memory) {
        CudaAttentionKernels k = new CudaAttentionKernels(memory, memory.stream(), new NativeDevice(),
                CudaStaging.of(memory), CudaStaging.of(memory));
        memory.onClose(k::close);
        return k;
    }

    @Override
    public synchronized AttentionPlan plan(PagedKvLayout layout, PageTableCsr table, MemorySegment qoIndptr,
                                           int numQoHeads) {
        MemorySegment qo = qoIndptr == null ? MemorySegment.NULL : qoIndptr;
        AttentionChecks.Shape shape = AttentionChecks.tables(layout, table, qo, MemorySegment.NULL, MemorySegment.NULL,
                numQoHeads);
        return stage(step, layout, table, qo, numQoHeads, shape, MemorySegment.NULL, MemorySegment.NULL);
    }

    @Override
    public synchronized void run(AttentionPlan plan, MemorySegment q, DType qDtype, MemorySegment out, DType outDtype,
                                 MemorySegment lse, KvCacheView cache, AttentionParams params) {
        if (!(plan instanceof CudaAttentionPlan p) || p.owner() != this) {
            throw new IllegalArgumentException("plan " + plan + " was not made by these kernels");
        }
        AttentionChecks.plannedRun(p, p.generation(), step.latest, q, qDtype, out, outDtype, lse, cache, params,
                p.totalQ());
        launch(p, new Launch(q, qDtype, out, outDtype, nullable(lse), cache, params));
    }

    @Override
    public synchronized void decode(MemorySegment q, DType qDtype, MemorySegment out, DType outDtype,
                                    MemorySegment lse, KvCacheView cache, PageTableCsr table, AttentionParams params) {
        AttentionChecks.Shape shape = AttentionChecks.decode(q, qDtype, out, outDtype, lse, cache, table, params);
        CudaAttentionPlan p = stage(call, cache.layout(), table, MemorySegment.NULL, params.numQoHeads(), shape,
                MemorySegment.NULL, MemorySegment.NULL);
        launch(p, new Launch(q, qDtype, out, outDtype, nullable(lse), cache, params));
    }

    @Override
    public synchronized void appendPrefill(MemorySegment q, DType qDtype, MemorySegment out, DType outDtype,
                                           MemorySegment lse, MemorySegment qoIndptr, KvCacheView cache,
                                           PageTableCsr table, MemorySegment bidirIndptr, MemorySegment bidirRegions,
                                           AttentionParams params) {
        AttentionChecks.Shape shape = AttentionChecks.prefill(q, qDtype, out, outDtype, lse, qoIndptr, cache, table,
                bidirIndptr, bidirRegions, params);
        CudaAttentionPlan p = stage(call, cache.layout(), table, qoIndptr, params.numQoHeads(), shape,
                shape.bidirIndptr() == null ? MemorySegment.NULL : bidirIndptr,
                shape.bidirRegions() == null ? MemorySegment.NULL : bidirRegions);
        launch(p, new Launch(q, qDtype, out, outDtype, nullable(lse), cache, params));
    }

    @Override
    public void mergeState(MemorySegment va, MemorySegment sa, MemorySegment vb, MemorySegment sb,
                           MemorySegment vOut, MemorySegment sOut, long numTokens, int numHeads, int headDim) {
        AttentionChecks.merge(va, sa, vb, sb, vOut, sOut, numTokens, numHeads, headDim);
        device.merge(va, sa, vb, sb, vOut, sOut, numTokens, numHeads, headDim, stream);
    }

    /** What a native plan of these kernels bakes into its launches ({@link CudaAttentionPlan#graphKey}). */
    synchronized long[] planInfo(MemorySegment nativePlan) {
        return device.info(nativePlan);
    }

    /** Destroys the native plans (the backend's memory calls this at close, after its stream finished). */
    synchronized void close() {
        for (Slot s : new Slot[] {step, call}) {
            if (s.nativePlan != null) {
                device.destroyPlan(s.nativePlan);
                s.nativePlan = null;
            }
            s.latest = -1;
        }
    }

    private void launch(CudaAttentionPlan p, Launch l) {
        if (p.decode()) {
            device.decode(p, l, stream);
        } else {
            device.prefill(p, l, stream);
        }
    }

    /**
     * Copies the validated tables into the slot's pinned staging (after the previous upload read
     * it), enqueues one upload and plans natively. The slot's previous plan is stale from here on,
     * even if this fails.
     */
    private CudaAttentionPlan stage(Slot slot, PagedKvLayout layout, PageTableCsr table, MemorySegment qoIndptr,
                                    int numQoHeads, AttentionChecks.Shape shape, MemorySegment bidirIndptr,
                                    MemorySegment bidirRegions) {
        slot.latest = -1;
        int batch = table.batchSize();
        boolean prefill = !AttentionChecks.isNull(qoIndptr);
        long[] bytes = {
            4L * (batch + 1), 4L * table.nnz(), 4L * batch,
            prefill ? 4L * (batch + 1) : 0,
            AttentionChecks.isNull(bidirIndptr) ? 0 : 4L * (batch + 1),
            AttentionChecks.isNull(bidirRegions) ? 0 : 4L * shape.bidirRegions().length,
        };
        MemorySegment[] src = {table.kvIndptr(), table.kvIndices(), table.kvLastPageLen(), qoIndptr, bidirIndptr,
            bidirRegions};
        // kv_indices (the only array whose length changes within a decode batch) goes last, so the
        // other tables keep their device addresses from step to step (CUDA graphs bake them in)
        long[] offsets = new long[bytes.length];
        long total = 0;
        for (int i : new int[] {0, 2, 3, 4, 5, 1}) {
            offsets[i] = total;
            total += align(bytes[i]);
        }
        MemorySegment host = slot.staging.host(total);
        for (int i = 0; i < bytes.length; i++) {
            if (bytes[i] > 0) {
                MemorySegment.copy(src[i], 0, host, offsets[i], bytes[i]);
            }
        }
        MemorySegment dev = slot.staging.upload(total);
        MemorySegment[] d = new MemorySegment[bytes.length];
        for (int i = 0; i < bytes.length; i++) {
            boolean absent = i >= 3 && AttentionChecks.isNull(src[i]);
            d[i] = absent ? MemorySegment.NULL : dev.asSlice(offsets[i], bytes[i]);
        }
        if (slot.nativePlan == null) {
            slot.nativePlan = device.createPlan();
        }
        device.plan(slot.nativePlan, prefill ? host.asSlice(offsets[3], bytes[3]) : MemorySegment.NULL,
                host.asSlice(offsets[0], bytes[0]), host.asSlice(offsets[2], bytes[2]), batch, layout, numQoHeads,
                stream);
        long generation = ++generations;
        slot.latest = generation;
        return new CudaAttentionPlan(this, generation, layout, table, prefill ? qoIndptr : MemorySegment.NULL,
                numQoHeads, shape.totalQ(), new CudaAttentionPlan.DeviceTables(d[0], d[1], d[2], d[3], d[4], d[5]),
                slot.nativePlan);
    }

    private static long align(long bytes) {
        return (bytes + 63) & ~63L;
    }

    private static MemorySegment nullable(MemorySegment s) {
        return AttentionChecks.isNull(s) ? MemorySegment.NULL : s;
    }

    /** libradixkv_cuda. */
    static final class NativeDevice implements Device {
        @Override
        public MemorySegment createPlan() {
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment cell = arena.allocate(ValueLayout.ADDRESS);
                CudaKvCacheKernels.check("rkv_cuda_attn_plan_create", radixkv_h.rkv_cuda_attn_plan_create(cell));
                return cell.get(ValueLayout.ADDRESS, 0);
            }
        }

        @Override
        public void destroyPlan(MemorySegment plan) {
            CudaKvCacheKernels.check("rkv_cuda_attn_plan_destroy", radixkv_h.rkv_cuda_attn_plan_destroy(plan));
        }

        @Override
        public long[] info(MemorySegment plan) {
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment out = arena.allocate(ValueLayout.JAVA_LONG, 4);
                CudaKvCacheKernels.check("rkv_cuda_attn_plan_info", radixkv_h.rkv_cuda_attn_plan_info(plan, out));
                return out.toArray(ValueLayout.JAVA_LONG);
            }
        }

        @Override
        public void plan(MemorySegment plan, MemorySegment qoIndptr, MemorySegment kvIndptr,
                         MemorySegment kvLastPageLen, int batch, PagedKvLayout l, int numQoHeads,
                         MemorySegment stream) {
            CudaKvCacheKernels.check("rkv_cuda_attn_plan_batch", radixkv_h.rkv_cuda_attn_plan_batch(plan, qoIndptr,
                    kvIndptr, kvLastPageLen, batch, l.pageSize(), numQoHeads, l.numKvHeads(), l.headDim(), stream));
        }

        @Override
        public void decode(CudaAttentionPlan p, Launch x, MemorySegment stream) {
            CudaAttentionPlan.DeviceTables t = p.device();
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment params = rkv_decode_params.allocate(arena);
                NativeAttentionArgs.query(rkv_decode_params.attn(params), x.q(), x.qDtype(), x.out(), x.outDtype(),
                        x.lse(), x.params());
                NativeAttentionArgs.pagedKv(rkv_decode_params.kv(params), x.cache(), t.kvIndptr(), t.kvIndices(),
                        t.kvLastPageLen(), p.table().batchSize());
                CudaKvCacheKernels.check("rkv_cuda_decode_attention_run",
                        radixkv_h.rkv_cuda_decode_attention_run(p.nativePlan(), params, stream));
            }
        }

        @Override
        public void prefill(CudaAttentionPlan p, Launch x, MemorySegment stream) {
            CudaAttentionPlan.DeviceTables t = p.device();
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment params = rkv_prefill_params.allocate(arena);
                NativeAttentionArgs.query(rkv_prefill_params.attn(params), x.q(), x.qDtype(), x.out(), x.outDtype(),
                        x.lse(), x.params());
                NativeAttentionArgs.pagedKv(rkv_prefill_params.kv(params), x.cache(), t.kvIndptr(), t.kvIndices(),
                        t.kvLastPageLen(), p.table().batchSize());
                rkv_prefill_params.qo_indptr(params, t.qoIndptr());
                rkv_prefill_params.bidir_indptr(params, t.bidirIndptr());
                rkv_prefill_params.bidir_regions(params, t.bidirRegions());
                CudaKvCacheKernels.check("rkv_cuda_append_prefill_attention_run",
                        radixkv_h.rkv_cuda_append_prefill_attention_run(p.nativePlan(), params, stream));
            }
        }

        @Override
        public void merge(MemorySegment va, MemorySegment sa, MemorySegment vb, MemorySegment sb, MemorySegment vOut,
                          MemorySegment sOut, long numTokens, int numHeads, int headDim, MemorySegment stream) {
            CudaKvCacheKernels.check("rkv_cuda_merge_state",
                    radixkv_h.rkv_cuda_merge_state(va, sa, vb, sb, vOut, sOut, numTokens, numHeads, headDim, stream));
        }
    }
}
