package io.radixkv.cli.workload;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

class WorkloadsTest {

    static List<String> names() {
        return Workloads.NAMES;
    }

    @ParameterizedTest
    @MethodSource("names")
    void deterministicFromTheSeedAndWellFormed(String name) {
        Workload a = Workloads.generate(name, Workloads.Options.defaults(7));
        Workload b = Workloads.generate(name, Workloads.Options.defaults(7));
        Workload c = Workloads.generate(name, Workloads.Options.defaults(8));
        assertEquals(a, b);
        assertNotEquals(a.requests(), c.requests());
        double prevIndependentArrival = 0;
        for (WorkloadRequest r : a.requests()) {
            for (int t : r.prompt()) {
                assertTrue(t >= 1 && t < 32000, name + ": token " + t);
            }
            if (r.after() < 0 && !name.equals("multi_turn")) {
                assertTrue(r.arrivalSeconds() >= prevIndependentArrival, name + ": arrivals must not go back in time");
                prevIndependentArrival = r.arrivalSeconds();
            }
        }
    }

    @Test
    void prefixCachingMatchesSeed001() {
        Workload w = Workloads.generate("prefix_caching", Workloads.Options.defaults(1));
        assertEquals(48, w.size());
        int[] first = w.requests().get(0).prompt();
        for (WorkloadRequest r : w.requests()) {
            int[] p = r.prompt();
            assertArrayEquals(Arrays.copyOf(first, 1024), Arrays.copyOf(p, 1024), "shared 1024-token system prompt");
            assertTrue(p.length >= 1024 + 32 && p.length <= 1024 + 128, "suffix 32-128, got " + (p.length - 1024));
            assertEquals(r.id() / 8.0, r.arrivalSeconds(), 1e-12, "uniform 8 req/s");
        }
        // The first request computes everything; every later one at least its 1024-token prefix is cached.
        long ideal = w.idealCachedTokens(1);
        assertTrue(ideal >= 47L * 1024, "ideal cached tokens " + ideal);
        assertEquals(47L * 1024, w.idealCachedTokens(16), "1024 is page aligned; suffixes are random");
    }

    @Test
    void pagedAttentionIsOneBurst() {
        Workload w = Workloads.generate("paged_attention", Workloads.Options.defaults(3));
        assertEquals(48, w.size());
        for (WorkloadRequest r : w.requests()) {
            assertEquals(0, r.arrivalSeconds());
            assertTrue(r.promptLength() >= 128 && r.promptLength() <= 384);
            assertTrue(r.maxTokens() >= 128 && r.maxTokens() <= 256);
        }
    }

    @Test
    void multiTurnLaterTurnsExtendEarlierOnes() {
        Workload w = Workloads.generate("multi_turn", Workloads.Options.defaults(5));
        assertEquals(32, w.size());
        int dependent = 0;
        for (WorkloadRequest r : w.requests()) {
            if (r.after() >= 0) {
                dependent++;
                int[] prev = w.requests().get(r.after()).prompt();
                int[] cur = r.prompt();
                assertTrue(cur.length > prev.length);
                assertArrayEquals(prev, Arrays.copyOf(cur, prev.length), "turn extends the previous prompt");
                assertEquals(32, r.replyTokens());
                assertTrue(cur.length - prev.length - 32 >= 32 && cur.length - prev.length - 32 <= 64, "user message");
            }
        }
        assertEquals(24, dependent, "8 conversations x 3 follow-up turns");
    }

    @Test
    void generatedSharedPrefixGroups() {
        Workload w = Workloads.generate("generated_shared_prefix", Workloads.Options.defaults(2));
        assertEquals(32, w.size());
        long distinctPrefixes = w.requests().stream().map(r -> Arrays.toString(Arrays.copyOf(r.prompt(), 512)))
                .distinct().count();
        assertEquals(4, distinctPrefixes);
    }

    @Test
    void optionsOverrideDefaults() {
        Workload w = Workloads.generate("continuous_batching",
                new Workloads.Options(10, Double.POSITIVE_INFINITY, 1, 100, 5));
        assertEquals(10, w.size());
        for (WorkloadRequest r : w.requests()) {
            assertEquals(0, r.arrivalSeconds());
            assertEquals(5, r.maxTokens());
            assertTrue(Arrays.stream(r.prompt()).allMatch(t -> t >= 1 && t < 100));
        }
        assertEquals(5, Workloads.generate("multi_turn", new Workloads.Options(5, 0, 1, 100, 0)).size());
    }

    @Test
    void idealCachedTokensByHand() {
        Workload w = new Workload("t", "t", List.of(
                WorkloadRequest.independent(0, 0, new int[] {1, 2, 3, 4, 5}, 1),
                WorkloadRequest.independent(1, 0, new int[] {1, 2, 3, 4, 6}, 1),
                WorkloadRequest.independent(2, 0, new int[] {1, 2, 3, 4}, 1)));
        // page 1: r1 reuses 4, r2 full match -> 3.
        assertEquals(7, w.idealCachedTokens(1));
        // page 2: r0 caches [1,2][3,4]; r1 reuses 4; r2 full match of 4 -> backs off to 2.
        assertEquals(6, w.idealCachedTokens(2));
        // page 4: r0 caches [1-4]; r1 reuses 4; r2 full -> 0.
        assertEquals(4, w.idealCachedTokens(4));
    }

    @Test
    void idealCachedTokensWithReplies() {
        // r1 is r0's next turn: r0's prompt [1,2,3], reply stand-in [7,8], new message [9].
        Workload w = new Workload("t", "t", List.of(
                WorkloadRequest.independent(0, 0, new int[] {1, 2, 3}, 2),
                new WorkloadRequest(1, 0, new int[] {1, 2, 3, 7, 8, 9}, 1, 0, 0, 2)));
        assertEquals(3, w.idealCachedTokens(1, false));
        assertEquals(5, w.idealCachedTokens(1, true));
        // page 2: prompts only: r0 caches [1,2]; r1 reuses 2. With replies r0 caches [1,2][3,7]: r1 reuses 4.
        assertEquals(2, w.idealCachedTokens(2, false));
        assertEquals(4, w.idealCachedTokens(2, true));
    }

    @Test
    void badInput() {
        assertThrows(IllegalArgumentException.class, () -> Workloads.generate("nope", Workloads.Options.defaults(1)));
        assertThrows(IllegalArgumentException.class, () -> new Workloads.Options(-1, 0, 0, 100, 0));
        assertThrows(IllegalArgumentException.class, () -> WorkloadRequest.independent(0, 0, new int[0], 1));
        assertThrows(IllegalArgumentException.class, () -> new WorkloadRequest(1, 0, new int[] {1}, 1, 1, 0, 0));
        assertThrows(IllegalArgumentException.class, () -> new WorkloadRequest(1, 0, new int[] {1, 2}, 1, -1, 0, 1));
    }

    /** The bound the CLI refuses huge request counts with holds for every generated request. */
    @Test
    void tokensPerRequestBoundHolds() {
        for (String name : Workloads.NAMES) {
            for (int maxTokens : new int[] {0, 7}) {
                int bound = Workloads.tokensPerRequestBound(name, maxTokens);
                for (long seed = 0; seed < 5; seed++) {
                    Workload w = Workloads.generate(name, new Workloads.Options(40, 0, seed, 1000, maxTokens));
                    for (WorkloadRequest r : w.requests()) {
                        assertTrue(r.promptLength() + r.maxTokens() <= bound, () -> name + ": " + r + " > " + bound);
                    }
                }
            }
        }
        assertThrows(IllegalArgumentException.class, () -> Workloads.tokensPerRequestBound("nope", 0));
    }

    /** Earliest send time of the last request: arrivals, and think times along a conversation. */
    @Test
    void scheduleSeconds() {
        Workload w = new Workload("t", "t", List.of(
                WorkloadRequest.independent(0, 0.5, new int[] {1, 2}, 1),
                WorkloadRequest.independent(1, 2.0, new int[] {3}, 1),
                new WorkloadRequest(2, 0.5, new int[] {1, 2, 9, 4}, 1, 0, 1.0, 1),
                new WorkloadRequest(3, 0.5, new int[] {1, 2, 9, 4, 9, 5}, 1, 2, 1.25, 1)));
        assertEquals(2.75, w.scheduleSeconds(), 1e-12);
        assertEquals(47 / 8.0, Workloads.generate("prefix_caching", Workloads.Options.defaults(0)).scheduleSeconds(),
                1e-12);
    }
}
