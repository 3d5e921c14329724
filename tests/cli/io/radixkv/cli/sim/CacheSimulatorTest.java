package io.radixkv.cli.sim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.radixkv.cache.EvictionPolicy;
import java.util.List;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

/**
 * Hand-worked expectations: every number below was derived on paper, step by step, from the
 * simulator's rules (see the comments), not by running the code.
 */
class CacheSimulatorTest {

    private static CacheSimulator.Result run(int pageSize, int pages, EvictionPolicy policy, boolean cacheOutput,
                                             List<TraceRequest> trace) {
        return CacheSimulator.run(new CacheSimulator.Config(pageSize, pages, policy, cacheOutput), trace, i -> { });
    }

    private static TraceRequest req(int... tokens) {
        return new TraceRequest(tokens);
    }

    private static int[] range(int fromInclusive, int toInclusive) {
        return IntStream.rangeClosed(fromInclusive, toInclusive).toArray();
    }

    private static void assertResult(CacheSimulator.Result r, int requests, long prompt, long hits, long evicted,
                                     int rejected) {
        assertEquals(requests, r.requests(), "requests");
        assertEquals(prompt, r.promptTokens(), "prompt_tokens");
        assertEquals(hits, r.hitTokens(), "hit_tokens");
        assertEquals(evicted, r.evictedPages(), "evicted_pages");
        assertEquals(rejected, r.rejected(), "rejected");
        assertEquals(prompt == 0 ? 0 : (double) hits / prompt, r.hitRate(), 1e-12, "hit_rate");
    }

    // Trace A, page size 1:
    //  r1 [1,2,3,4]  nothing cached                           hits 0, cache {1234}
    //  r2 [1,2,3,5]  matches 1,2,3 (3 < 4 tokens)             hits 3, cache 123->{4,5}
    //  r3 [1,2,3,4]  full match (4 = 4): reuse all but last   hits 3
    //  r4 [6,7]      nothing                                  hits 0
    private static final List<TraceRequest> TRACE_A = List.of(
            req(1, 2, 3, 4), req(1, 2, 3, 5), req(1, 2, 3, 4), req(6, 7));

    @Test
    void pageSize1UnboundedLru() {
        assertResult(run(1, 100, EvictionPolicy.LRU, false, TRACE_A), 4, 14, 6, 0, 0);
    }

    @Test
    void pageSize1FivePagesLru() {
        // 5 pages. r1: 4 pages cached, 1 free. r2: reuse 3, takes the free page for "5" -> 0 free.
        // r3: full match locks 1,2,3,4 and needs 1 page for the recomputed "4": evicts leaf "5"
        //     (evicted 1); the recomputed page duplicates the cached one and is freed (1 free).
        // r4: needs 2, 1 free: evicts 1 page; unlocked leaves: "4" only -> evicted 2.
        assertResult(run(1, 5, EvictionPolicy.LRU, false, TRACE_A), 4, 14, 6, 2, 0);
    }

    // Trace C, page size 1, 7 pages: distinguishes LRU from FIFO.
    //  r1 [1,2,3]    A cached (3 pages), 4 free
    //  r2 [4,5,6]    B cached, 1 free
    //  r3 [1,2,3]    full match: reuse 2 (hits 2); recompute "3" in the free page, a duplicate -> freed.
    //                A was used at r3, B at r2; A was created first.
    //  r4 [7,8]      needs 2, 1 free -> evict 1 page: LRU evicts B (3 pages), FIFO evicts A (3 pages).
    //                4 free -> 2 taken -> 2 free.
    //  r5 [1,2,3,4]  LRU: A cached -> reuse 3 (hits 3), 1 page taken.
    //                FIFO: A gone -> no hit; needs 4, 2 free -> evict 2: B (older than [7,8]), 3 pages.
    private static final List<TraceRequest> TRACE_C = List.of(
            req(1, 2, 3), req(4, 5, 6), req(1, 2, 3), req(7, 8), req(1, 2, 3, 4));

    @Test
    void pageSize1Lru() {
        assertResult(run(1, 7, EvictionPolicy.LRU, false, TRACE_C), 5, 15, 5, 3, 0);
    }

    @Test
    void pageSize1Fifo() {
        assertResult(run(1, 7, EvictionPolicy.FIFO, false, TRACE_C), 5, 15, 2, 6, 0);
    }

    // Trace D, page size 4 (pages of tokens):
    //  r1 1..10          3 pages; the cache keeps 2 full pages [1-4][5-8], the partial page is freed
    //  r2 1..8,20,21     matches 8 < 10 -> reuse 8                          hits 8
    //  r3 1..8           full match (8 = 8) -> reuse 4, recompute [5-8]     hits 4
    //  r4 1..7,99,100    matches page [1-4] only -> reuse 4; caches [5,6,7,99]   hits 4
    //  r5 50..61         no match, 3 pages
    //  r6 1..4,30..38    matches [1-4] -> reuse 4; 4 pages, 3 new           hits 4
    //  r7 200..219       no match, 5 pages
    private static final List<TraceRequest> TRACE_D = List.of(
            req(range(1, 10)),
            req(1, 2, 3, 4, 5, 6, 7, 8, 20, 21),
            req(range(1, 8)),
            req(1, 2, 3, 4, 5, 6, 7, 99, 100),
            req(range(50, 61)),
            req(1, 2, 3, 4, 30, 31, 32, 33, 34, 35, 36, 37, 38),
            req(range(200, 219)));

    @Test
    void pageSize4Unbounded() {
        // prompt = 10+10+8+9+12+13+20 = 82; hits = 8+4+4+4 = 20
        assertResult(run(4, 1000, EvictionPolicy.LRU, false, TRACE_D), 7, 82, 20, 0, 0);
    }

    @Test
    void pageSize4FourPagesLru() {
        // 4 pages:
        //  r1: 3 taken, 2 kept, partial freed -> 2 free.   r2: 1 taken, freed -> 2 free.
        //  r3: 1 taken (duplicate of [5-8]) freed -> 2 free.
        //  r4: splits [1-8] into [1-4] -> {[5-8], [5,6,7,99]}; 2 taken, [5,6,7,99] kept -> 1 free.
        //  r5: needs 3, 1 free -> evict 2: leaves [5-8] (used r3) then [5,6,7,99] (r4) -> evicted 2;
        //      3 pages kept -> 0 free. Cache: [1-4], [50-61].
        //  r6: reuse [1-4] (locked); needs 3 -> evicts [50-61] (3 pages) -> evicted 5; keeps 2, 1 free.
        //  r7: needs 5 pages > 4 in the pool: rejected, nothing changes.
        assertResult(run(4, 4, EvictionPolicy.LRU, false, TRACE_D), 7, 82, 20, 5, 1);
    }

    @Test
    void outputsAreReusedOnlyWithCacheOutput() {
        // r1 prompt [1,2] output [3,4]; r2 prompt [1,2,3,4,5]. Page size 1.
        List<TraceRequest> t = List.of(new TraceRequest(new int[] {1, 2}, new int[] {3, 4}, null), req(1, 2, 3, 4, 5));
        assertResult(run(1, 100, EvictionPolicy.LRU, false, t), 2, 7, 2, 0, 0);
        assertResult(run(1, 100, EvictionPolicy.LRU, true, t), 2, 7, 4, 0, 0);
    }

    @Test
    void namespacesAreIsolated() {
        List<TraceRequest> t = List.of(
                new TraceRequest(new int[] {1, 2, 3}, null, "tenant-a"),
                new TraceRequest(new int[] {1, 2, 3, 4}, null, "tenant-b"),
                new TraceRequest(new int[] {1, 2, 3, 4}, null, "tenant-a"),
                new TraceRequest(new int[] {1, 2, 3, 5}, null, null));
        // only r3 hits (3 tokens of tenant-a's r1)
        assertResult(run(1, 100, EvictionPolicy.LRU, false, t), 4, 15, 3, 0, 0);
    }

    // Trace E, page size 1, 6 pages: r1 [1,2,3] priority 5, r2 [4,5,6] priority 0, r3 [7,8,9], r4 [1,2,3,4].
    //  PRIORITY: r3 evicts B (priority 0, though A is older) -> evicted 3; r4 reuses A (hits 3) and
    //            needs 1 page: evicts C (A is locked) -> evicted 6.
    //  LRU:      r3 evicts A (older) -> evicted 3; r4 hits nothing and needs 4 pages with 0 free:
    //            evicts B (3) then C (3) -> evicted 9.
    private static final List<TraceRequest> TRACE_E = List.of(
            new TraceRequest(new int[] {1, 2, 3}, null, null, 5), new TraceRequest(4, 5, 6),
            new TraceRequest(7, 8, 9), new TraceRequest(1, 2, 3, 4));

    @Test
    void pageSize1Priority() {
        assertResult(run(1, 6, EvictionPolicy.PRIORITY, false, TRACE_E), 4, 13, 3, 6, 0);
        assertResult(run(1, 6, EvictionPolicy.LRU, false, TRACE_E), 4, 13, 0, 9, 0);
    }

    @Test
    void resultsAreDeterministic() {
        CacheSimulator.Result a = run(4, 4, EvictionPolicy.LFU, false, TRACE_D);
        CacheSimulator.Result b = run(4, 4, EvictionPolicy.LFU, false, TRACE_D);
        assertEquals(a, b);
    }

    @Test
    void badConfigIsRejected() {
        assertThrows(IllegalArgumentException.class, () -> new CacheSimulator.Config(0, 4, EvictionPolicy.LRU, false));
        assertThrows(IllegalArgumentException.class, () -> new CacheSimulator.Config(4, 0, EvictionPolicy.LRU, false));
        assertThrows(IllegalArgumentException.class, () -> new TraceRequest(new int[0]));
    }
}
