package io.radixkv.engine;

import static io.radixkv.engine.EngineTestSupport.concat;
import static io.radixkv.engine.EngineTestSupport.randomTokens;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.radixkv.kernels.DType;
import io.radixkv.model.SamplingParams;
import io.radixkv.sched.FinishReason;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Engine behaviour on the tiny model: cache hit kinds, online prefix sharing during chunked
 * prefill, eviction, preemption, cancellation, rejection and failure isolation. Every test
 * ends with the page conservation check (no leaked page, nothing locked, cache == CACHED).
 */
@Timeout(value = 180, unit = java.util.concurrent.TimeUnit.SECONDS)
class EngineScenariosTest {
    private static RequestResult get(RequestHandle h) throws Exception {
        return h.result().get(60, TimeUnit.SECONDS);
    }

    private static int expectedCached(int common, int len, int ps) {
        return common >= len ? (len - 1) / ps * ps : common / ps * ps;
    }

    @ParameterizedTest(name = "page size {0}")
    @ValueSource(ints = {1, 4})
    void fullPartialTinyHitAndMiss(int ps) {
        SplittableRandom rnd = new SplittableRandom(3);
        int[] base = randomTokens(rnd, 24);
        int[] full = base.clone();
        int[] partial = concat(Arrays.copyOf(base, 13), randomTokens(rnd, 10));
        int[] tiny = concat(Arrays.copyOf(base, 5), randomTokens(rnd, 20));
        int[] miss = randomTokens(rnd, 24);
        List<int[]> prompts = List.of(base, full, partial, tiny, miss);
        List<int[]> ref = EngineTestSupport.reference(prompts, 5, ps, DType.F32);
        try (Engine e = EngineTestSupport.start(EngineTestSupport.tiny(ps, DType.F32, true, 512).build())) {
            List<RequestResult> r = e.runToCompletion(EngineTestSupport.greedyRequests(prompts, 5));
            int[] common = {0, 24, 13, 5, 0};
            for (int i = 0; i < prompts.size(); i++) {
                RequestResult x = r.get(i);
                assertTrue(x.ok(), x.toString());
                assertArrayEquals(ref.get(i), x.outputTokens(), "output of prompt " + i);
                int cached = expectedCached(common[i], prompts.get(i).length, ps);
                assertEquals(cached, x.stats().cachedPromptTokens(), "cached tokens of prompt " + i);
                assertEquals(prompts.get(i).length - cached, x.stats().computedPromptTokens());
            }
            assertTrue(r.get(1).stats().computedPromptTokens() >= 1, "a full hit still computes the last position");
            e.checkInvariants(true);
        }
    }

    /** A follow-up turn (prompt + answer + new question) reuses the first turn's answer too. */
    @Test
    void followUpTurnReusesTheGeneratedAnswer() {
        int ps = 4;
        SplittableRandom rnd = new SplittableRandom(31);
        int[] turn1 = randomTokens(rnd, 18);
        try (Engine e = EngineTestSupport.start(EngineTestSupport.tiny(ps, DType.F32, true, 256).build())) {
            RequestResult r1 = e.runToCompletion(EngineTestSupport.greedyRequests(List.of(turn1), 10)).get(0);
            int[] turn2 = concat(concat(turn1, r1.outputTokens()), randomTokens(rnd, 6));
            List<int[]> ref = EngineTestSupport.reference(List.of(turn2), 5, ps, DType.F32);
            RequestResult r2 = e.runToCompletion(EngineTestSupport.greedyRequests(List.of(turn2), 5)).get(0);
            assertArrayEquals(ref.get(0), r2.outputTokens());
            // KV exists for the prompt and all answer tokens but the last (never fed back): 27 positions
            assertEquals((18 + 10 - 1) / ps * ps, r2.stats().cachedPromptTokens(), r2.stats().toString());
            e.checkInvariants(true);
        }
    }

    /**
     * Request B shares an 80-token prefix with A and arrives while A's prompt is still being
     * prefilled in 16-token chunks: B must reuse A's pages (80 cached tokens) and nothing is
     * prefilled twice.
     */
    @Test
    void secondRequestArrivingMidPrefillReusesTheFirstsPages() throws Exception {
        int ps = 4;
        SplittableRandom rnd = new SplittableRandom(5);
        int[] a = randomTokens(rnd, 96);
        int[] b = concat(Arrays.copyOf(a, 80), randomTokens(rnd, 12));
        List<int[]> ref = EngineTestSupport.reference(List.of(a, b), 4, ps, DType.F32);
        AtomicReference<Engine> engine = new AtomicReference<>();
        AtomicReference<RequestHandle> hb = new AtomicReference<>();
        AtomicInteger calls = new AtomicInteger();
        EngineConfig cfg = EngineTestSupport.tiny(ps, DType.F32, true, 256).maxBatchTokens(16).maxRunning(4).build();
        try (Engine e = EngineTestSupport.start(cfg, f -> (batch, kv, logits) -> {
            f.forward(batch, kv, logits);
            if (calls.incrementAndGet() == 1) {
                // A's first chunk is done: B arrives now, mid-prefill
                hb.set(engine.get().submit(new GenerateRequest("b", b, SamplingParams.greedy(4))));
            }
        })) {
            engine.set(e);
            RequestResult ra = get(e.submit(new GenerateRequest("a", a, SamplingParams.greedy(4))));
            while (hb.get() == null) {
                Thread.onSpinWait();
            }
            RequestResult rb = get(hb.get());
            assertTrue(ra.ok() && rb.ok(), ra + " / " + rb);
            assertArrayEquals(ref.get(0), ra.outputTokens());
            assertArrayEquals(ref.get(1), rb.outputTokens());
            assertEquals(0, ra.stats().cachedPromptTokens());
            assertEquals(80, rb.stats().cachedPromptTokens(), "B reuses A's pages for the shared 80 tokens");
            assertEquals(12, rb.stats().computedPromptTokens());
            EngineStats s = e.snapshot();
            assertEquals(96 + 12, s.prefillTokens(), "no prompt position was prefilled twice: " + s);
            assertEquals(0, s.duplicatePagesDropped(), "no duplicate page was computed: " + s);
            e.checkInvariants(true);
        }
    }

    /**
     * A's last prompt chunk and B's first chunk land in the same step and both cover B's
     * shared tokens 32..36: B must wait a step and adopt A's page instead of computing it too.
     */
    @Test
    void sameStepPrefillOfASharedPageIsNotDuplicated() throws Exception {
        int ps = 4;
        SplittableRandom rnd = new SplittableRandom(6);
        int[] a = randomTokens(rnd, 40);
        int[] b = concat(Arrays.copyOf(a, 36), randomTokens(rnd, 20));
        List<int[]> ref = EngineTestSupport.reference(List.of(a, b), 3, ps, DType.F32);
        AtomicReference<Engine> engine = new AtomicReference<>();
        AtomicReference<RequestHandle> hb = new AtomicReference<>();
        AtomicInteger calls = new AtomicInteger();
        EngineConfig cfg = EngineTestSupport.tiny(ps, DType.F32, true, 256).maxBatchTokens(32).maxRunning(4).build();
        try (Engine e = EngineTestSupport.start(cfg, f -> (batch, kv, logits) -> {
            f.forward(batch, kv, logits);
            if (calls.incrementAndGet() == 1) {
                hb.set(engine.get().submit(new GenerateRequest("b", b, SamplingParams.greedy(3))));
            }
        })) {
            engine.set(e);
            RequestResult ra = get(e.submit(new GenerateRequest("a", a, SamplingParams.greedy(3))));
            while (hb.get() == null) {
                Thread.onSpinWait();
            }
            RequestResult rb = get(hb.get());
            assertArrayEquals(ref.get(0), ra.outputTokens());
            assertArrayEquals(ref.get(1), rb.outputTokens());
            assertEquals(36, rb.stats().cachedPromptTokens());
            assertEquals(20, rb.stats().computedPromptTokens());
            EngineStats s = e.snapshot();
            assertEquals(40 + 20, s.prefillTokens(), s.toString());
            assertEquals(0, s.duplicatePagesDropped(), s.toString());
            assertTrue(s.deferredChunks() > 0, "B waited for A instead of recomputing page 8: " + s);
            e.checkInvariants(true);
        }
    }

    /** A pool far smaller than the working set: the cache evicts, outputs stay correct. */
    @Test
    void evictionUnderMemoryPressureKeepsOutputsCorrect() {
        int ps = 4;
        List<int[]> prompts = EngineTestSupport.promptFamily(21, 14);
        List<int[]> ref = EngineTestSupport.reference(prompts, 4, ps, DType.F32);
        try (Engine e = EngineTestSupport.start(EngineTestSupport.tiny(ps, DType.F32, true, 24).build())) {
            List<RequestResult> r = e.runToCompletion(EngineTestSupport.greedyRequests(prompts, 4));
            for (int i = 0; i < prompts.size(); i++) {
                assertTrue(r.get(i).ok(), r.get(i).toString());
                assertArrayEquals(ref.get(i), r.get(i).outputTokens(), "output of prompt " + i);
            }
            EngineStats s = e.snapshot();
            assertTrue(s.evictedPages() > 0, "the cache must have evicted: " + s);
            assertTrue(s.reusedTokens() > 0, "and still served hits: " + s);
            assertTrue(s.peakPagesAllocated() <= 24);
            e.checkInvariants(true);
        }
    }

    /**
     * Four concurrent requests whose outputs outgrow the pool: the newest are preempted
     * (released, requeued, recomputed mostly from the cache) and every output is identical to
     * a run without memory pressure, with the cache on and off.
     */
    @ParameterizedTest(name = "prefix cache {0}")
    @ValueSource(booleans = {true, false})
    void preemptionAndResumeGiveIdenticalOutput(boolean prefix) {
        int ps = 4;
        SplittableRandom rnd = new SplittableRandom(9);
        List<int[]> prompts = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            prompts.add(randomTokens(rnd, 12));
        }
        List<int[]> ref = EngineTestSupport.reference(prompts, 24, ps, DType.F32);
        EngineConfig cfg = EngineTestSupport.tiny(ps, DType.F32, prefix, 20).maxRunning(4).decodeReserveFraction(0)
                .build();
        try (Engine e = EngineTestSupport.start(cfg)) {
            List<RequestResult> r = e.runConcurrently(EngineTestSupport.greedyRequests(prompts, 24));
            int preempted = 0;
            for (int i = 0; i < prompts.size(); i++) {
                assertTrue(r.get(i).ok(), r.get(i).toString());
                assertArrayEquals(ref.get(i), r.get(i).outputTokens(), "output of request " + i);
                preempted += r.get(i).stats().preemptions();
            }
            EngineStats s = e.snapshot();
            assertTrue(s.preemptions() > 0 && preempted == s.preemptions(), "preemption must have happened: " + s);
            e.checkInvariants(true);
        }
    }

    @Test
    void cancellationMidDecodeStopsOnlyThatRequest() throws Exception {
        int ps = 4;
        SplittableRandom rnd = new SplittableRandom(13);
        int[] px = randomTokens(rnd, 10);
        int[] py = randomTokens(rnd, 14);
        List<int[]> ref = EngineTestSupport.reference(List.of(py), 12, ps, DType.F32);
        try (Engine e = EngineTestSupport.start(EngineTestSupport.tiny(ps, DType.F32, true, 256).build())) {
            // the listener may run before submit() returns: it waits for the handle
            CompletableFuture<RequestHandle> hx = new CompletableFuture<>();
            List<Integer> streamed = new CopyOnWriteArrayList<>();
            hx.complete(e.submit(new GenerateRequest("x", px, SamplingParams.greedy(500)), t -> {
                streamed.add(t);
                if (streamed.size() == 3) {
                    hx.join().cancel();
                }
            }));
            RequestHandle hy = e.submit(new GenerateRequest("y", py, SamplingParams.greedy(12)));
            RequestResult rx = get(hx.join());
            RequestResult ry = get(hy);
            assertEquals(FinishReason.CANCELLED, rx.reason());
            assertTrue(rx.outputTokens().length >= 3 && rx.outputTokens().length < 500, rx.toString());
            assertEquals(streamed, Arrays.stream(rx.outputTokens()).boxed().toList(), "streamed == result tokens");
            assertTrue(ry.ok(), ry.toString());
            assertArrayEquals(ref.get(0), ry.outputTokens());
            e.checkInvariants(true);
        }
    }

    @Test
    void cancellingAWaitingRequestNeverRunsIt() throws Exception {
        EngineConfig cfg = EngineTestSupport.tiny(4, DType.F32, true, 256).maxRunning(1).build();
        try (Engine e = EngineTestSupport.start(cfg)) {
            RequestHandle first = e.submit(new GenerateRequest("first", new int[] {5, 6, 7}, SamplingParams.greedy(40)));
            RequestHandle second = e.submit(new GenerateRequest("second", new int[] {8, 9}, SamplingParams.greedy(40)));
            second.cancel();
            RequestResult r2 = get(second);
            assertEquals(FinishReason.CANCELLED, r2.reason());
            assertEquals(0, r2.outputTokens().length);
            assertEquals(-1, r2.stats().ttftNanos());
            assertTrue(get(first).ok());
            e.checkInvariants(true);
        }
    }

    @Test
    void requestLargerThanThePoolIsRejectedAndOthersRun() throws Exception {
        int ps = 4;
        SplittableRandom rnd = new SplittableRandom(17);
        int[] ok1 = randomTokens(rnd, 9);
        int[] ok2 = randomTokens(rnd, 11);
        List<int[]> ref = EngineTestSupport.reference(List.of(ok1, ok2), 6, ps, DType.F32);
        try (Engine e = EngineTestSupport.start(EngineTestSupport.tiny(ps, DType.F32, true, 16).build())) {
            RequestHandle h1 = e.submit(new GenerateRequest("ok1", ok1, SamplingParams.greedy(6)));
            RequestHandle big = e.submit(new GenerateRequest("big", randomTokens(rnd, 80), SamplingParams.greedy(4)));
            RequestHandle longOut = e.submit(new GenerateRequest("long", randomTokens(rnd, 30), SamplingParams.greedy(40)));
            RequestHandle h2 = e.submit(new GenerateRequest("ok2", ok2, SamplingParams.greedy(6)));
            for (RequestHandle h : List.of(big, longOut)) {
                RequestResult r = get(h);
                assertEquals(FinishReason.REJECTED, r.reason());
                assertTrue(r.error().contains("pool holds only 16 pages"), r.error());
                assertEquals(0, r.outputTokens().length);
            }
            assertArrayEquals(ref.get(0), get(h1).outputTokens());
            assertArrayEquals(ref.get(1), get(h2).outputTokens());
            e.checkInvariants(true);
        }
    }

    @Test
    void malformedRequestsAreRefusedBeforeAnythingRuns() {
        try (Engine e = EngineTestSupport.start(EngineTestSupport.tiny(4, DType.F32, true, 64).build())) {
            IllegalArgumentException ex = assertThrows(IllegalArgumentException.class,
                    () -> e.submit(new GenerateRequest("bad", new int[] {1, 32000}, SamplingParams.greedy(2))));
            assertTrue(ex.getMessage().contains("32000") && ex.getMessage().contains("vocabulary"), ex.getMessage());
            assertThrows(IllegalArgumentException.class,
                    () -> e.submit(new GenerateRequest("neg", new int[] {-1}, SamplingParams.greedy(2))));
            assertThrows(IllegalArgumentException.class,
                    () -> new GenerateRequest("empty", new int[0], SamplingParams.greedy(2)));
            assertEquals(0, e.snapshot().submitted());
            assertTrue(e.runToCompletion(EngineTestSupport.greedyRequests(List.of(new int[] {3, 4, 5}), 2)).get(0).ok());
            e.checkInvariants(true);
        }
    }

    /** A forward pass that fails because of one request fails that request only. */
    @Test
    void oneFailingRequestNeverFailsTheOthers() throws Exception {
        int ps = 4;
        int poison = 31337;
        SplittableRandom rnd = new SplittableRandom(23);
        List<int[]> good = List.of(randomTokens(rnd, 10), randomTokens(rnd, 7), randomTokens(rnd, 13));
        List<int[]> ref = EngineTestSupport.reference(good, 5, ps, DType.F32);
        try (Engine e = EngineTestSupport.start(EngineTestSupport.tiny(ps, DType.F32, true, 256).build(),
                f -> (batch, kv, logits) -> {
                    for (int i = 0; i < batch.numTokens(); i++) {
                        if (batch.tokenIds().getAtIndex(ValueLayout.JAVA_INT, i) == poison) {
                            throw new IllegalStateException("injected failure on token " + poison);
                        }
                    }
                    f.forward(batch, kv, logits);
                })) {
            List<RequestHandle> hs = new ArrayList<>();
            hs.add(e.submit(new GenerateRequest("g0", good.get(0), SamplingParams.greedy(5))));
            RequestHandle bad = e.submit(new GenerateRequest("bad", new int[] {4, 5, poison, 6}, SamplingParams.greedy(5)));
            hs.add(e.submit(new GenerateRequest("g1", good.get(1), SamplingParams.greedy(5))));
            hs.add(e.submit(new GenerateRequest("g2", good.get(2), SamplingParams.greedy(5))));
            RequestResult rb = get(bad);
            assertEquals(FinishReason.ERROR, rb.reason());
            assertTrue(rb.error().contains("injected failure"), rb.error());
            for (int i = 0; i < 3; i++) {
                RequestResult r = get(hs.get(i));
                assertTrue(r.ok(), r.toString());
                assertArrayEquals(ref.get(i), r.outputTokens());
            }
            e.checkInvariants(true);
        }
    }

    @Test
    void closeAbortsWhatIsStillRunning() throws Exception {
        Engine e = EngineTestSupport.start(EngineTestSupport.tiny(4, DType.F32, true, 256).build());
        AtomicInteger seen = new AtomicInteger();
        RequestHandle h = e.submit(new GenerateRequest("long", new int[] {1, 2, 3}, SamplingParams.greedy(900)),
                t -> seen.incrementAndGet());
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (seen.get() < 2 && !h.isDone() && System.nanoTime() < deadline) {
            Thread.onSpinWait();
        }
        assertTrue(seen.get() >= 2 && !h.isDone(), "the request should be running");
        e.close();
        RequestResult r = get(h);
        assertEquals(FinishReason.ABORTED, r.reason());
        assertTrue(r.outputTokens().length >= 2 && r.error().contains("closed"), r.toString());
        assertThrows(IllegalStateException.class,
                () -> e.submit(new GenerateRequest("late", new int[] {1}, SamplingParams.greedy(1))));
    }

    @Test
    void streamingAndStats() throws Exception {
        try (Engine e = EngineTestSupport.start(EngineTestSupport.tiny(4, DType.F32, true, 256).build())) {
            List<Integer> streamed = new CopyOnWriteArrayList<>();
            int[] prompt = randomTokens(new SplittableRandom(29), 20);
            RequestResult r = get(e.submit(new GenerateRequest("s", prompt, SamplingParams.greedy(7)), streamed::add));
            assertTrue(r.ok());
            assertEquals(7, r.outputTokens().length);
            assertEquals(streamed, Arrays.stream(r.outputTokens()).boxed().toList());
            RequestStats s = r.stats();
            assertTrue(s.queueNanos() >= 0 && s.ttftNanos() >= s.queueNanos() && s.e2eNanos() >= s.ttftNanos(), s.toString());
            assertEquals(6, s.interTokenNanos().length);
            assertEquals(20, s.promptTokens());
            assertEquals(0, s.preemptions());
            assertNull(r.error());
            // a stop token ends generation and is the last output token
            int stop = r.outputTokens()[2];
            RequestResult rs = get(e.submit(new GenerateRequest("stop", prompt,
                    new SamplingParams(50, 0f, 1f, 0, List.of(stop)))));
            assertEquals(FinishReason.STOP, rs.reason());
            assertArrayEquals(Arrays.copyOf(r.outputTokens(), 3), rs.outputTokens());
            EngineStats es = e.snapshot();
            assertEquals(2, es.finished());
            assertTrue(es.cacheHitRate() > 0 && es.steps() > 0, es.toString());
            e.checkInvariants(true);
        }
    }
}
