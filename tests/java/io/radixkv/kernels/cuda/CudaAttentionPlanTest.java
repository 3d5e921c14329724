package io.radixkv.kernels.cuda;

import io.radixkv.kernels.AttentionParams;
import io.radixkv.kernels.AttentionPlan;
import io.radixkv.kernels.DType;
import io.radixkv.kernels.HostAttentionPlan;
import io.radixkv.kernels.KvCacheView;
import io.radixkv.kernels.PageTableCsr;
import io.radixkv.kernels.PagedKvLayout;
import io.radixkv.kernels.RecordingMemory;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * CudaAttentionKernels' plan/run protocol without a GPU: a stub device memory (host segments
 * flagged as device, copies counted) and a recording stand-in for libradixkv_cuda show what
 * would reach the device: one upload and one native plan per plan(), none per run(); every
 * launch on the backend's stream; bad tables refused before any upload; stale plans and
 * mismatched caches refused before any launch; pinned staging never overwritten before the
 * previous upload's fence.
 */
class CudaAttentionPlanTest {
    private final Arena arena = Arena.ofShared();
    private final List<String> events = new ArrayList<>();
    private final MemorySegment stream = MemorySegment.ofAddress(0x5eed);

    private final RecordingMemory stubDevice = new RecordingMemory(true, events);

    private final CudaStaging.Fence fence = new CudaStaging.Fence() {
        @Override
        public void record() {
            events.add("fence record");
        }

        @Override
        public void await() {
            events.add("fence await");
        }
    };

    /** Records every native call; checks that launches get the backend's stream. */
    private final class RecordingDevice implements CudaAttentionKernels.Device {
        int plans;
        int decodes;
        int prefills;
        final List<CudaAttentionPlan> launched = new ArrayList<>();
        MemorySegment lastQoHost;
        MemorySegment lastIndptrHost;

        @Override
        public MemorySegment createPlan() {
            events.add("createPlan");
            return MemorySegment.ofAddress(0x91a);
        }

        @Override
        public long[] info(MemorySegment plan) {
            return new long[] {1, 0, 1, 0};
        }

        @Override
        public void destroyPlan(MemorySegment plan) {
            events.add("destroyPlan");
        }

        @Override
        public void plan(MemorySegment plan, MemorySegment qoIndptr, MemorySegment kvIndptr,
                         MemorySegment kvLastPageLen, int batch, PagedKvLayout layout, int numQoHeads,
                         MemorySegment s) {
            assertEquals(stream, s, "plan on the backend's stream");
            events.add("plan " + (qoIndptr.equals(MemorySegment.NULL) ? "decode" : "prefill") + " batch " + batch);
            plans++;
            lastQoHost = qoIndptr;
            lastIndptrHost = kvIndptr;
        }

        @Override
        public void decode(CudaAttentionPlan plan, CudaAttentionKernels.Launch launch, MemorySegment s) {
            assertEquals(stream, s, "decode on the backend's stream");
            events.add("decode");
            decodes++;
            launched.add(plan);
        }

        @Override
        public void prefill(CudaAttentionPlan plan, CudaAttentionKernels.Launch launch, MemorySegment s) {
            assertEquals(stream, s, "prefill on the backend's stream");
            events.add("prefill");
            prefills++;
            launched.add(plan);
        }

        @Override
        public void merge(MemorySegment va, MemorySegment sa, MemorySegment vb, MemorySegment sb, MemorySegment vOut,
                          MemorySegment sOut, long numTokens, int numHeads, int headDim, MemorySegment s) {
            assertEquals(stream, s, "merge on the backend's stream");
            events.add("merge");
        }
    }

    private final RecordingDevice device = new RecordingDevice();
    private final CudaAttentionKernels kernels = new CudaAttentionKernels(stubDevice, stream, device,
            new CudaStaging(stubDevice, fence), new CudaStaging(stubDevice, fence));

    // 2 sequences over 6 pages of 4 tokens: 7 tokens (pages 5, 2) and 4 tokens (page 0)
    private final PagedKvLayout layout = new PagedKvLayout(DType.BF16, 6, 4, 2, 16);
    private final int numQoHeads = 4;
    private final AttentionParams params = AttentionParams.of(numQoHeads, 16);

    @AfterEach
    void close() {
        stubDevice.close();
        arena.close();
    }

    private MemorySegment ints(int... v) {
        return arena.allocateFrom(ValueLayout.JAVA_INT, v);
    }

    private PageTableCsr table(int... indices) {
        return new PageTableCsr(ints(0, 2, 3), ints(indices), ints(3, 4), 2);
    }

    private KvCacheView cache(PagedKvLayout l) {
        return KvCacheView.of(stubDevice.allocate(l.poolBytes()), stubDevice.allocate(l.poolBytes()), l);
    }

    /** bf16 [rows, numQoHeads, 16]. */
    private MemorySegment rows(long rows) {
        return stubDevice.allocate(2 * rows * numQoHeads * 16);
    }

    private long count(String prefix) {
        return events.stream().filter(e -> e.startsWith(prefix)).count();
    }

    @Test
    void onePlanOneUploadThenEveryLayerOnlyLaunches() {
        PageTableCsr t = table(5, 2, 0);
        AttentionPlan plan = kernels.plan(layout, t, MemorySegment.NULL, numQoHeads);
        assertTrue(plan.decode());
        assertSame(t, plan.table());
        assertEquals(1, count("upload"), events.toString());
        assertEquals(0, count("copyFromHost"), "no synchronous copy: " + events);
        assertEquals(List.of("createPlan", "plan decode batch 2"),
                events.stream().filter(e -> e.startsWith("createPlan") || e.startsWith("plan")).toList());
        // the upload is enqueued (and fenced) before the native plan reads the pinned host copies
        int upload = events.indexOf(events.stream().filter(e -> e.startsWith("upload")).findFirst().orElseThrow());
        assertTrue(upload < events.indexOf("fence record"), events.toString());
        assertTrue(events.indexOf("fence record") < events.indexOf("plan decode batch 2"), events.toString());
        // the device copies hold the host tables
        CudaAttentionPlan p = (CudaAttentionPlan) plan;
        assertArrayEquals(new int[] {0, 2, 3}, p.device().kvIndptr().toArray(ValueLayout.JAVA_INT));
        assertArrayEquals(new int[] {5, 2, 0}, p.device().kvIndices().toArray(ValueLayout.JAVA_INT));
        assertArrayEquals(new int[] {3, 4}, p.device().kvLastPageLen().toArray(ValueLayout.JAVA_INT));
        assertEquals(MemorySegment.NULL, p.device().qoIndptr());
        // the native planner reads pinned host copies, not the caller's segments
        assertArrayEquals(new int[] {0, 2, 3}, device.lastIndptrHost.toArray(ValueLayout.JAVA_INT));
        assertTrue(device.lastIndptrHost.address() != t.kvIndptr().address());

        KvCacheView c = cache(layout);
        MemorySegment q = rows(2), out = rows(2);
        for (int layer = 0; layer < 5; layer++) {
            kernels.run(plan, q, DType.BF16, out, DType.BF16, MemorySegment.NULL, c, params);
        }
        assertEquals(5, device.decodes);
        assertEquals(1, count("upload"), "runs upload nothing: " + events);
        assertEquals(1, device.plans, "runs plan nothing");
        device.launched.forEach(x -> assertSame(plan, x));
    }

    @Test
    void aStalePlanIsRefusedBeforeAnyLaunch() {
        AttentionPlan first = kernels.plan(layout, table(5, 2, 0), MemorySegment.NULL, numQoHeads);
        AttentionPlan second = kernels.plan(layout, table(1, 2, 3), MemorySegment.NULL, numQoHeads);
        KvCacheView c = cache(layout);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> kernels.run(first, rows(2), DType.BF16, rows(2), DType.BF16, MemorySegment.NULL, c, params));
        assertTrue(e.getMessage().contains("stale plan"), e.getMessage());
        assertEquals(0, device.decodes);
        kernels.run(second, rows(2), DType.BF16, rows(2), DType.BF16, MemorySegment.NULL, c, params);
        assertEquals(1, device.decodes);
        assertEquals(1, count("createPlan"), "the native plan object is reused");
    }

    @Test
    void pinnedStagingWaitsForThePreviousUploadBeforeItIsOverwritten() {
        kernels.plan(layout, table(5, 2, 0), MemorySegment.NULL, numQoHeads);
        assertEquals(0, count("fence await"), "nothing to wait for on the first plan");
        events.clear();
        kernels.plan(layout, table(1, 2, 3), MemorySegment.NULL, numQoHeads);
        assertEquals(List.of("fence await", "upload", "fence record", "plan"),
                events.stream().map(x -> x.startsWith("fence") ? x : x.split(" ")[0]).toList(),
                "the fence of the previous upload is awaited before the pinned buffer is refilled");
        assertEquals(0, count("allocateHost"), "the pinned staging is reused, not reallocated");
    }

    @Test
    void aBadTableIsRefusedAtPlanTimeBeforeAnyUpload() {
        AttentionPlan good = kernels.plan(layout, table(5, 2, 0), MemorySegment.NULL, numQoHeads);
        events.clear();
        IllegalArgumentException page = assertThrows(IllegalArgumentException.class,
                () -> kernels.plan(layout, table(5, 6, 0), MemorySegment.NULL, numQoHeads));
        assertTrue(page.getMessage().contains("kv_indices[1] = page 6"), page.getMessage());
        IllegalArgumentException last = assertThrows(IllegalArgumentException.class, () -> kernels.plan(layout,
                new PageTableCsr(ints(0, 2, 3), ints(5, 2, 0), ints(3, 5), 2), MemorySegment.NULL, numQoHeads));
        assertTrue(last.getMessage().contains("kv_last_page_len[1] = 5"), last.getMessage());
        // sequence 1 holds 4 tokens: 5 new query tokens cannot be in its pages
        IllegalArgumentException qo = assertThrows(IllegalArgumentException.class,
                () -> kernels.plan(layout, table(5, 2, 0), ints(0, 3, 8), numQoHeads));
        assertTrue(qo.getMessage().contains("q_len 5 > kv_len 4"), qo.getMessage());
        IllegalArgumentException heads = assertThrows(IllegalArgumentException.class,
                () -> kernels.plan(layout, table(5, 2, 0), MemorySegment.NULL, 3));
        assertTrue(heads.getMessage().contains("numQoHeads 3"), heads.getMessage());
        assertEquals(List.of(), events, "nothing reached the device or the staging");
        // the refused tables left the previous plan usable
        kernels.run(good, rows(2), DType.BF16, rows(2), DType.BF16, MemorySegment.NULL, cache(layout), params);
        assertEquals(1, device.decodes);
    }

    @Test
    void aCacheOfAnotherLayoutOrWrongShapesAreRefusedBeforeAnyLaunch() {
        AttentionPlan plan = kernels.plan(layout, table(5, 2, 0), ints(0, 3, 5), numQoHeads);
        assertTrue(!plan.decode());
        CudaAttentionPlan p = (CudaAttentionPlan) plan;
        assertArrayEquals(new int[] {0, 3, 5}, p.device().qoIndptr().toArray(ValueLayout.JAVA_INT));
        assertArrayEquals(new int[] {0, 3, 5}, device.lastQoHost.toArray(ValueLayout.JAVA_INT));
        PagedKvLayout other = new PagedKvLayout(DType.BF16, 8, 4, 2, 16);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> kernels.run(plan, rows(5), DType.BF16, rows(5), DType.BF16, MemorySegment.NULL, cache(other),
                        params));
        assertTrue(e.getMessage().contains("differs from the plan's"), e.getMessage());
        // prefill q rows = qo_indptr[batch] = 5
        IllegalArgumentException q = assertThrows(IllegalArgumentException.class,
                () -> kernels.run(plan, rows(4), DType.BF16, rows(5), DType.BF16, MemorySegment.NULL, cache(layout),
                        params));
        assertTrue(q.getMessage().contains("q"), q.getMessage());
        IllegalArgumentException heads = assertThrows(IllegalArgumentException.class,
                () -> kernels.run(plan, rows(5), DType.BF16, rows(5), DType.BF16, MemorySegment.NULL, cache(layout),
                        AttentionParams.of(2, 16)));
        assertTrue(heads.getMessage().contains("numQoHeads 2"), heads.getMessage());
        IllegalArgumentException foreign = assertThrows(IllegalArgumentException.class,
                () -> kernels.run(HostAttentionPlan.of(layout, table(5, 2, 0), MemorySegment.NULL, numQoHeads),
                        rows(2), DType.BF16, rows(2), DType.BF16, MemorySegment.NULL, cache(layout), params));
        assertTrue(foreign.getMessage().contains("not made by these kernels"), foreign.getMessage());
        assertEquals(0, device.prefills + device.decodes);
        kernels.run(plan, rows(5), DType.BF16, rows(5), DType.BF16, MemorySegment.NULL, cache(layout), params);
        assertEquals(1, device.prefills);
    }

    @Test
    void perCallFormsPlanPrivatelyAndLeaveTheStepPlanValid() {
        AttentionPlan step = kernels.plan(layout, table(5, 2, 0), MemorySegment.NULL, numQoHeads);
        KvCacheView c = cache(layout);
        kernels.decode(rows(2), DType.BF16, rows(2), DType.BF16, MemorySegment.NULL, c, table(1, 2, 3), params);
        kernels.appendPrefill(rows(5), DType.BF16, rows(5), DType.BF16, MemorySegment.NULL, ints(0, 3, 5), c,
                table(1, 2, 3), ints(0, 1, 1), ints(0, 4), params);
        kernels.run(step, rows(2), DType.BF16, rows(2), DType.BF16, MemorySegment.NULL, c, params);
        assertEquals(2, device.decodes);
        assertEquals(1, device.prefills);
        CudaAttentionPlan withRegions = (CudaAttentionPlan) device.launched.get(1);
        assertArrayEquals(new int[] {0, 4}, withRegions.device().bidirRegions().toArray(ValueLayout.JAVA_INT));
        assertSame(step, device.launched.get(2));
        assertEquals(2, count("createPlan"), "one native plan per slot");
        kernels.close();
        assertEquals(2, count("destroyPlan"));
    }
}
