package io.radixkv.paging;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.radixkv.kernels.DType;
import io.radixkv.kernels.HostMemory;
import io.radixkv.kernels.KernelBackend;
import io.radixkv.kernels.KvCacheView;
import io.radixkv.kernels.PageTableCsr;
import io.radixkv.kernels.PagedKvLayout;
import io.radixkv.kernels.RecordingMemory;
import io.radixkv.kernels.cpu.CpuBackend;
import io.radixkv.kernels.reference.JavaReferenceBackend;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * CSR and slot-mapping correctness: K/V written through the slot mapping (by a plain loop,
 * the Java reference scatter kernel, or the native CPU one) must read back, through the
 * CSR page lists, at every position of every sequence, including shared prefix pages.
 */
class BatchTablesTest {
    private static final ValueLayout.OfInt I32 = ValueLayout.JAVA_INT;
    private static final ValueLayout.OfLong I64 = ValueLayout.JAVA_LONG;
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT;

    private static int[] ints(MemorySegment s, int n) {
        int[] a = new int[n];
        MemorySegment.copy(s, I32, 0, a, 0, n);
        return a;
    }

    private static long[] longs(MemorySegment s, int n) {
        long[] a = new long[n];
        MemorySegment.copy(s, I64, 0, a, 0, n);
        return a;
    }

    @Test
    void csrSlotMappingAndPositionsForAMixedBatch() {
        // plain LIFO placement (runs of 1 page): ids handed out in order, as listed below
        try (KvSequences s = new KvSequences(new BlockAllocator(32, 1), 4, 4, 8);
             BatchTables bt = new BatchTables(4, 64, 32)) {
            int a = s.open(1);
            int b = s.open(2);
            int c = s.open(3);
            assertTrue(s.reserve(a, 10)); // pages 0,1,2
            assertTrue(s.reserve(b, 4));  // page 3
            assertTrue(s.reserve(c, 9));  // pages 4,5,6
            assertArrayEquals(new int[] {0, 1, 2}, s.pages(a));
            assertArrayEquals(new int[] {3}, s.pages(b));
            assertArrayEquals(new int[] {4, 5, 6}, s.pages(c));

            // a: prefill 0..10; b: decode at 3; c: chunk 5..9
            bt.build(s, new int[] {a, b, c}, new long[] {0, 3, 5}, new long[] {10, 4, 9}, 3);
            assertEquals(3, bt.batchSize());
            assertEquals(10 + 1 + 4, bt.numTokens());
            assertEquals(3 + 1 + 3, bt.numPages());
            assertArrayEquals(new int[] {0, 3, 4, 7}, ints(bt.kvIndptr(), 4));
            assertArrayEquals(new int[] {0, 1, 2, 3, 4, 5, 6}, ints(bt.kvIndices(), 7));
            assertArrayEquals(new int[] {2, 4, 1}, ints(bt.kvLastPageLen(), 3));
            assertArrayEquals(new int[] {10, 4, 9}, ints(bt.kvLens(), 3));
            assertArrayEquals(new int[] {0, 10, 11, 15}, ints(bt.qoIndptr(), 4));
            assertArrayEquals(new int[] {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 3, 5, 6, 7, 8}, ints(bt.positions(), 15));
            assertArrayEquals(new long[] {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 15, 21, 22, 23, 24},
                    longs(bt.slotMapping(), 15));

            PageTableCsr csr = bt.csr();
            assertEquals(3, csr.batchSize());
            assertEquals(7, csr.nnz());
            csr.validate(new PagedKvLayout(DType.F16, 32, 4, 1, 8));
            assertEquals(10, csr.sequenceLength(0, 4));
            assertEquals(4, csr.sequenceLength(1, 4));
            assertEquals(9, csr.sequenceLength(2, 4));
            assertSame(csr, bt.csr(), "CSR views are reused, not re-created per step");
        }
    }

    @Test
    void nonContiguousPagesAfterChurn() {
        try (KvSequences s = new KvSequences(new BlockAllocator(16), 2, 4, 8);
             BatchTables bt = new BatchTables(4, 64, 32)) {
            int x = s.open(1);
            int y = s.open(2);
            assertTrue(s.reserve(x, 6)); // 0,1,2
            assertTrue(s.reserve(y, 2)); // 3
            s.release(x);                // 0,1,2 back (LIFO: 2 on top... order 0,1,2 pushed)
            int z = s.open(3);
            assertTrue(s.reserve(z, 5)); // 3 pages from the freed ones, reversed
            int[] zp = s.pages(z);
            bt.begin(s);
            bt.add(z, 0, 5);
            bt.finish();
            long[] slots = longs(bt.slotMapping(), 5);
            for (int t = 0; t < 5; t++) {
                assertEquals((long) zp[t / 2] * 2 + t % 2, slots[t], "slot of token " + t);
            }
            assertArrayEquals(zp, ints(bt.kvIndices(), 3));
            assertEquals(1, ints(bt.kvLastPageLen(), 1)[0]);
        }
    }

    @Test
    void rejectedAddsLeaveTheBatchUnchanged() {
        try (KvSequences s = new KvSequences(new BlockAllocator(32), 4, 4, 8);
             BatchTables bt = new BatchTables(2, 8, 3)) {
            int a = s.open(1);
            int b = s.open(2);
            int c = s.open(3);
            assertTrue(s.reserve(a, 8));
            assertTrue(s.reserve(b, 16));
            assertTrue(s.reserve(c, 4));
            assertThrows(IllegalStateException.class, () -> bt.add(a, 0, 1), "add before begin");
            bt.begin(s);
            bt.add(a, 4, 8);
            var e = assertThrows(IllegalArgumentException.class, () -> bt.add(b, 0, 17));
            assertTrue(e.getMessage().contains("17"), e.getMessage());
            assertThrows(IllegalArgumentException.class, () -> bt.add(b, 5, 5), "empty range");
            assertThrows(IllegalArgumentException.class, () -> bt.add(b, -1, 2));
            assertThrows(IllegalArgumentException.class, () -> bt.add(b, 0, 16), "too many pages (4 > 3-2)");
            assertThrows(IllegalArgumentException.class, () -> bt.add(b, 0, 5), "too many tokens (4+5 > 8)");
            assertThrows(IllegalArgumentException.class, () -> bt.add(99, 0, 1));
            s.release(c);
            assertThrows(IllegalStateException.class, () -> bt.add(c, 0, 1), "closed sequence");
            assertEquals(1, bt.batchSize());
            assertEquals(4, bt.numTokens());
            assertEquals(2, bt.numPages());
            bt.add(b, 0, 4);
            var full = assertThrows(IllegalArgumentException.class, () -> bt.add(a, 7, 8));
            assertTrue(full.getMessage().contains("maxBatch"), full.getMessage());
            assertThrows(IllegalStateException.class, bt::csr, "not finished");
            bt.finish();
            assertArrayEquals(new int[] {0, 2, 3}, ints(bt.kvIndptr(), 3));
            assertArrayEquals(new int[] {0, 4, 8}, ints(bt.qoIndptr(), 3));
            bt.csr().validate(new PagedKvLayout(DType.F32, 32, 4, 1, 1));
        }
    }

    @Test
    void newTokensNeverLandInCacheOwnedPages() {
        try (KvSequences s = new KvSequences(new BlockAllocator(16), 4, 4, 8);
             BatchTables bt = new BatchTables(4, 64, 16)) {
            int a = s.open(1);
            assertTrue(s.reserve(a, 12));
            s.setLength(a, 8);
            s.markCached(a, 0, 2);
            int cached = s.pageAt(a, 1);
            bt.begin(s);
            // tokens 7..9 would rewrite the cache's page 1 (token 7): rejected, batch unchanged
            var e = assertThrows(IllegalStateException.class, () -> bt.add(a, 7, 10));
            assertTrue(e.getMessage().contains("page " + cached) && e.getMessage().contains("CACHED"), e.getMessage());
            assertEquals(0, bt.batchSize());
            // a shared prefix followed by private pages: only the private part may be written
            int b = s.open(2);
            s.mapShared(b, new int[] {s.pageAt(a, 0), cached}, 0, 2);
            assertTrue(s.reserve(b, 10));
            assertThrows(IllegalStateException.class, () -> bt.add(b, 0, 10));
            bt.add(a, 8, 12);
            bt.add(b, 8, 10);
            bt.finish();
            assertArrayEquals(new int[] {0, 3, 6}, ints(bt.kvIndptr(), 3));
            assertArrayEquals(new int[] {0, 4, 6}, ints(bt.qoIndptr(), 3));
        }
    }

    @Test
    void tablesLiveInTheBackendsHostStagingMemory() {
        try (RecordingMemory dev = new RecordingMemory(true);
             KvSequences s = new KvSequences(new BlockAllocator(32), 4, 4, 8);
             BatchTables staged = new BatchTables(4, 64, 32, dev);
             BatchTables own = new BatchTables(4, 64, 32)) {
            assertEquals(7, dev.count("allocateHost"), "every table from the staging memory, once");
            assertEquals(0, dev.allocations(), "no device memory: the model uploads what its kernels read");
            int a = s.open(1);
            int b = s.open(2);
            assertTrue(s.reserve(a, 10));
            assertTrue(s.reserve(b, 3));
            staged.build(s, new int[] {a, b}, new long[] {0, 2}, new long[] {10, 3}, 2);
            own.build(s, new int[] {a, b}, new long[] {0, 2}, new long[] {10, 3}, 2);
            assertArrayEquals(ints(own.kvIndptr(), 3), ints(staged.kvIndptr(), 3));
            assertArrayEquals(ints(own.kvIndices(), 4), ints(staged.kvIndices(), 4));
            assertArrayEquals(ints(own.kvLastPageLen(), 2), ints(staged.kvLastPageLen(), 2));
            assertArrayEquals(longs(own.slotMapping(), 11), longs(staged.slotMapping(), 11));
            assertArrayEquals(ints(own.positions(), 11), ints(staged.positions(), 11));
            staged.build(s, new int[] {b}, new long[] {2}, new long[] {3}, 1);
            assertEquals(7, dev.count("allocateHost"), "nothing allocated per step");
            assertEquals(0, dev.count("copyFromHost") + dev.count("upload"));
        }
    }

    // ---- scatter + read back through the tables ----

    /** How K/V rows get into the cache through a slot mapping. */
    interface Scatter {
        void write(MemorySegment k, MemorySegment v, MemorySegment slots, int n, KvCacheView cache);
    }

    /** Plain loop: row i goes to slot slots[i] (pool layout [pages, pageSize, heads, dim] = [slots, heads, dim]). */
    private static void loopScatter(MemorySegment k, MemorySegment v, MemorySegment slots, int n, KvCacheView cache) {
        long rowBytes = cache.layout().tokenBytes();
        for (int i = 0; i < n; i++) {
            long slot = slots.getAtIndex(I64, i);
            MemorySegment.copy(k, i * rowBytes, cache.kCache(), slot * rowBytes, rowBytes);
            MemorySegment.copy(v, i * rowBytes, cache.vCache(), slot * rowBytes, rowBytes);
        }
    }

    private static final int HEADS = 2;
    private static final int DIM = 8;

    /** K (or V) value of head h, element d, at position t of a sequence with tokens toks. */
    private static float kv(int[] toks, int t, int h, int d, boolean isV) {
        return toks[t] * 0.5f + t * 0.25f + h * 1000f + d * 10f + (isV ? 100000f : 0f);
    }

    @ParameterizedTest
    @ValueSource(strings = {"loop", "java", "cpu"})
    void scatterAndReadBackThroughTables(String writer) {
        Scatter scatter;
        KernelBackend backend = null;
        switch (writer) {
            case "loop" -> scatter = BatchTablesTest::loopScatter;
            case "java", "cpu" -> {
                backend = writer.equals("java") ? new JavaReferenceBackend() : new CpuBackend();
                KernelBackend be = backend;
                scatter = (k, v, slots, n, cache) -> be.kv().reshapeAndCache(k, v, DType.F32, slots, n, cache);
            }
            default -> throw new IllegalArgumentException(writer);
        }
        try {
            runScenario(scatter);
        } finally {
            if (backend != null) {
                backend.close();
            }
        }
    }

    private static void runScenario(Scatter scatter) {
        int ps = 4;
        PagedKvLayout layout = new PagedKvLayout(DType.F32, 40, ps, HEADS, DIM);
        try (KvPool pool = KvPool.host(2, layout, 1f, 1f);
             KvSequences s = new KvSequences(new BlockAllocator(40), ps, 4, 10);
             BatchTables bt = new BatchTables(4, 64, 40);
             Arena arena = Arena.ofConfined()) {
            MemorySegment k = arena.allocate(64L * HEADS * DIM * 4, 64);
            MemorySegment v = arena.allocate(64L * HEADS * DIM * 4, 64);
            int[][] tokens = new int[4][];
            int a = s.open(1);
            tokens[a] = new int[] {11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30};
            // step 1: prefill a (10 tokens)
            assertTrue(s.reserve(a, 10));
            step(s, bt, pool, scatter, k, v, tokens, new int[] {a}, new long[] {0}, new long[] {10});
            s.setLength(a, 10);
            // the cache takes a's two full pages
            s.markCached(a, 0, 2);
            int[] prefix = {s.pageAt(a, 0), s.pageAt(a, 1)};

            // b shares a's first 8 tokens, then diverges; c is unrelated
            int b = s.open(2);
            tokens[b] = new int[20];
            System.arraycopy(tokens[a], 0, tokens[b], 0, 8);
            for (int i = 8; i < 20; i++) tokens[b][i] = 500 + i;
            s.mapShared(b, prefix, 0, 2);
            assertTrue(s.reserve(b, 13));
            int c = s.open(3);
            tokens[c] = new int[20];
            for (int i = 0; i < 20; i++) tokens[c][i] = 900 + 3 * i;
            assertTrue(s.reserve(c, 3));
            // step 2: a decodes 1, b prefills its suffix 8..13, c prefills 0..3
            assertTrue(s.growForDecode(a));
            step(s, bt, pool, scatter, k, v, tokens, new int[] {a, b, c}, new long[] {10, 8, 0}, new long[] {11, 13, 3});
            s.setLength(a, 11);
            s.setLength(b, 13);
            s.setLength(c, 3);
            // steps 3..9: everyone decodes, crossing page boundaries at different steps
            int[] ids = {a, b, c};
            for (int st = 0; st < 7; st++) {
                long[] starts = new long[3];
                long[] ends = new long[3];
                for (int i = 0; i < 3; i++) {
                    assertTrue(s.growForDecode(ids[i]));
                    starts[i] = s.length(ids[i]);
                    ends[i] = starts[i] + 1;
                }
                step(s, bt, pool, scatter, k, v, tokens, ids, starts, ends);
                for (int i = 0; i < 3; i++) {
                    s.setLength(ids[i], ends[i]);
                }
                s.checkInvariants();
            }
            // the shared prefix pages were never rewritten with b's tokens
            for (int t = 0; t < 8; t++) {
                assertEquals(kv(tokens[a], t, 1, 3, false), read(pool.layer(0), prefix[t / ps], t % ps, 1, 3, false));
            }
        }
    }

    /**
     * One step: build the tables, write every new token's K/V (per layer, distinct per layer)
     * through the slot mapping, then check every position 0..end of every sequence through
     * the CSR and the independently computed page lists.
     */
    private static void step(KvSequences s, BatchTables bt, KvPool pool, Scatter scatter, MemorySegment k,
                             MemorySegment v, int[][] tokens, int[] ids, long[] starts, long[] ends) {
        int ps = s.pageSize();
        bt.build(s, ids, starts, ends, ids.length);
        PageTableCsr csr = bt.csr();
        csr.validate(pool.layout());
        int n = bt.numTokens();
        int[] pos = ints(bt.positions(), n);
        int[] qo = ints(bt.qoIndptr(), ids.length + 1);
        long[] slots = longs(bt.slotMapping(), n);
        // independent expectation of the slot mapping from the sequences' page lists
        List<Long> expectSlots = new ArrayList<>();
        for (int i = 0; i < ids.length; i++) {
            int[] pages = s.pages(ids[i]);
            assertEquals(qo[i + 1] - qo[i], ends[i] - starts[i]);
            for (long t = starts[i]; t < ends[i]; t++) {
                expectSlots.add((long) pages[(int) (t / ps)] * ps + t % ps);
            }
        }
        assertArrayEquals(expectSlots.stream().mapToLong(Long::longValue).toArray(), slots);
        for (int layer = 0; layer < pool.numLayers(); layer++) {
            for (int i = 0; i < ids.length; i++) {
                for (int r = qo[i]; r < qo[i + 1]; r++) {
                    for (int h = 0; h < HEADS; h++) {
                        for (int d = 0; d < DIM; d++) {
                            long idx = ((long) r * HEADS + h) * DIM + d;
                            k.setAtIndex(F32, idx, kv(tokens[ids[i]], pos[r], h, d, false) + layer);
                            v.setAtIndex(F32, idx, kv(tokens[ids[i]], pos[r], h, d, true) + layer);
                        }
                    }
                }
            }
            scatter.write(k, v, bt.slotMapping(), n, pool.layer(layer));
        }
        // read back every position of every sequence through the CSR
        int[] indptr = ints(csr.kvIndptr(), ids.length + 1);
        int[] indices = ints(csr.kvIndices(), csr.nnz());
        for (int i = 0; i < ids.length; i++) {
            assertEquals(ends[i], csr.sequenceLength(i, ps));
            assertEquals((ends[i] + ps - 1) / ps, indptr[i + 1] - indptr[i]);
            for (int layer = 0; layer < pool.numLayers(); layer++) {
                for (int t = 0; t < ends[i]; t++) {
                    int page = indices[indptr[i] + t / ps];
                    for (int h = 0; h < HEADS; h++) {
                        for (int d = 0; d < DIM; d++) {
                            assertEquals(kv(tokens[ids[i]], t, h, d, false) + layer,
                                    read(pool.layer(layer), page, t % ps, h, d, false),
                                    "K seq " + ids[i] + " pos " + t + " layer " + layer);
                            assertEquals(kv(tokens[ids[i]], t, h, d, true) + layer,
                                    read(pool.layer(layer), page, t % ps, h, d, true),
                                    "V seq " + ids[i] + " pos " + t + " layer " + layer);
                        }
                    }
                }
            }
        }
    }

    private static float read(KvCacheView cache, int page, int off, int h, int d, boolean isV) {
        PagedKvLayout l = cache.layout();
        long idx = (((long) page * l.pageSize() + off) * l.numKvHeads() + h) * l.headDim() + d;
        return (isV ? cache.vCache() : cache.kCache()).getAtIndex(F32, idx);
    }
}
