package io.radixkv.engine;

import static io.radixkv.engine.EngineTestSupport.randomTokens;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.radixkv.kernels.DType;
import io.radixkv.model.SamplingParams;
import io.radixkv.sched.FinishReason;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A request for n samples: its prompt is prefilled once, the samples share its pages, and
 * sample i is token for token the same request alone with seed + i; each ends on its own, and
 * pages are conserved after finishing and after a cancellation.
 */
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class EngineSamplesTest {
    private static final int PAGE = 16;

    private static EngineConfig config(boolean prefixCache) {
        return EngineTestSupport.tiny(PAGE, DType.F32, prefixCache, 256).build();
    }

    private static List<RequestResult> results(MultiSampleHandle h) throws Exception {
        return h.results().get(120, TimeUnit.SECONDS);
    }

    private static SamplingParams sampled(int maxTokens, long seed, List<Integer> stops) {
        return new SamplingParams(maxTokens, 1.0f, 0.95f, seed, stops);
    }

    /**
     * Each sample equals its own request with seed + i, with a stop token that ends one sample
     * early while the others run to their length; the prompt (2 full pages and a partial one) is
     * prefilled once.
     */
    @ParameterizedTest(name = "prefix cache {0}")
    @ValueSource(booleans = {false, true})
    void eachSampleIsTheRequestAloneWithItsSeed(boolean prefixCache) throws Exception {
        int[] prompt = randomTokens(new SplittableRandom(41), 2 * PAGE + 5);
        int n = 4;
        long seed = 1234;
        List<int[]> alone = new ArrayList<>();
        try (Engine e = EngineTestSupport.start(config(prefixCache))) {
            int stop = e.runToCompletion(List.of(new GenerateRequest("probe", prompt, sampled(12, seed + 1, null))))
                    .get(0).outputTokens()[3];
            for (int i = 0; i < n; i++) {
                e.evictAll();
                RequestResult r = e.runToCompletion(List.of(new GenerateRequest("alone" + i, prompt,
                        sampled(12, seed + i, List.of(stop))))).get(0);
                assertTrue(r.ok(), r.toString());
                alone.add(r.outputTokens());
            }
            e.evictAll();
            long prefilled = e.snapshot().prefillTokens();
            List<RequestResult> rs = results(e.submit(new GenerateRequest("g", prompt, sampled(12, seed, List.of(stop))),
                    n, null));
            assertEquals(prompt.length, e.snapshot().prefillTokens() - prefilled, "the prompt is prefilled once");
            Set<FinishReason> reasons = new HashSet<>();
            for (int i = 0; i < n; i++) {
                assertArrayEquals(alone.get(i), rs.get(i).outputTokens(), "sample " + i);
                assertEquals(i == 0 ? "g" : "g/" + i, rs.get(i).id());
                assertEquals(prompt.length, rs.get(i).stats().promptTokens());
                reasons.add(rs.get(i).reason());
            }
            assertEquals(FinishReason.STOP, rs.get(1).reason(), "sample 1 meets its stop token");
            assertTrue(reasons.contains(FinishReason.LENGTH), "another runs to its length: " + reasons);
            assertTrue(new HashSet<>(rs.stream().map(r -> Arrays.toString(r.outputTokens())).toList()).size() > 1,
                    "the samples draw from different seeds");
            e.checkInvariants(true);
        }
    }

    /**
     * The samples share the prompt's full pages: with 8 full pages and a partial one, 4 samples
     * hold 8 + 4 pages at once, not 4 x 9, and their tokens stream to the listener by sample.
     */
    @Test
    void samplesShareThePromptsFullPages() throws Exception {
        int[] prompt = randomTokens(new SplittableRandom(42), 8 * PAGE + 5);
        int n = 4;
        try (Engine e = EngineTestSupport.start(config(false))) {
            List<List<Integer>> streamed = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                streamed.add(new ArrayList<>());
            }
            MultiSampleHandle h = e.submit(new GenerateRequest("g", prompt, sampled(8, 5, null)), n,
                    (sample, token) -> streamed.get(sample).add(token));
            List<RequestResult> rs = results(h);
            for (int i = 0; i < n; i++) {
                assertEquals(FinishReason.LENGTH, rs.get(i).reason());
                assertEquals(Arrays.stream(rs.get(i).outputTokens()).boxed().toList(), streamed.get(i));
            }
            int promptPages = 9;
            assertEquals(8 + n, e.snapshot().peakPagesAllocated(),
                    "shared full pages, one partial page each (without sharing: " + n * promptPages + ")");
            e.checkInvariants(true);
        }
    }

    /** Cancelling the request mid-generation ends every sample and frees every page (shared ones too). */
    @ParameterizedTest(name = "prefix cache {0}")
    @ValueSource(booleans = {false, true})
    void cancelMidGenerationEndsAllSamplesAndFreesTheirPages(boolean prefixCache) throws Exception {
        int[] prompt = randomTokens(new SplittableRandom(43), 3 * PAGE + 7);
        int n = 3;
        try (Engine e = EngineTestSupport.start(config(prefixCache))) {
            // the listener may run before submit() returns: it waits for the handle
            CompletableFuture<MultiSampleHandle> h = new CompletableFuture<>();
            int[] seen = new int[n];
            h.complete(e.submit(new GenerateRequest("g", prompt, sampled(64, 9, null)), n, (sample, token) -> {
                if (++seen[sample] == 3 && sample == 2) {
                    h.join().cancel(); // on the engine thread, mid-step
                }
            }));
            List<RequestResult> rs = results(h.join());
            for (RequestResult r : rs) {
                assertEquals(FinishReason.CANCELLED, r.reason(), r.toString());
                assertTrue(r.outputTokens().length >= 2 && r.outputTokens().length < 64, r.toString());
            }
            e.checkInvariants(true);
        }
    }

    /** Cancelling before the prompt is prefilled ends the samples not yet forked as well. */
    @Test
    void cancelBeforeTheForkEndsEverySample() throws Exception {
        int[] prompt = randomTokens(new SplittableRandom(44), 5 * PAGE);
        try (Engine e = EngineTestSupport.start(config(true))) {
            MultiSampleHandle h = e.submit(new GenerateRequest("g", prompt, sampled(16, 9, null)), 3, null);
            h.cancel();
            for (RequestResult r : results(h)) {
                assertEquals(FinishReason.CANCELLED, r.reason(), r.toString());
            }
            e.checkInvariants(true);
        }
    }

    /** One sample's own cancel stops only that sample. */
    @Test
    void cancellingOneSampleLeavesTheOthers() throws Exception {
        int[] prompt = randomTokens(new SplittableRandom(45), PAGE + 3);
        try (Engine e = EngineTestSupport.start(config(false))) {
            CompletableFuture<MultiSampleHandle> h = new CompletableFuture<>();
            h.complete(e.submit(new GenerateRequest("g", prompt, sampled(10, 3, null)), 3, (sample, token) -> {
                if (sample == 1) {
                    h.join().sample(1).cancel(); // waits if submit() has not returned yet
                }
            }));
            List<RequestResult> rs = results(h.join());
            assertEquals(FinishReason.LENGTH, rs.get(0).reason());
            assertEquals(FinishReason.CANCELLED, rs.get(1).reason());
            assertEquals(FinishReason.LENGTH, rs.get(2).reason());
            assertEquals(10, rs.get(2).outputTokens().length);
            e.checkInvariants(true);
        }
    }

    /**
     * Admission counts every sample against maxRunning (8): a request for 4 samples waits while
     * one for 6 runs, so its first token comes after the other's last.
     */
    @Test
    void admissionCountsEverySampleAgainstMaxRunning() throws Exception {
        SplittableRandom rnd = new SplittableRandom(46);
        try (Engine e = EngineTestSupport.start(config(false))) {
            List<String> events = new ArrayList<>();
            MultiSampleHandle a = e.submit(new GenerateRequest("a", randomTokens(rnd, 20), SamplingParams.greedy(6)), 6,
                    (sample, token) -> events.add("a"));
            MultiSampleHandle b = e.submit(new GenerateRequest("b", randomTokens(rnd, 20), SamplingParams.greedy(6)), 4,
                    (sample, token) -> events.add("b"));
            results(a);
            results(b);
            assertEquals(60, events.size());
            assertTrue(events.indexOf("b") > events.lastIndexOf("a"), "b ran beside a: " + events);
            e.checkInvariants(true);
        }
    }

    /** n beyond maxSamples is refused at submission; beyond maxRunning every sample is REJECTED. */
    @Test
    void outOfRangeNIsRefused() throws Exception {
        int[] prompt = randomTokens(new SplittableRandom(47), 8);
        EngineConfig cfg = EngineTestSupport.tiny(PAGE, DType.F32, true, 256).maxSamples(12).build();
        try (Engine e = EngineTestSupport.start(cfg)) {
            GenerateRequest r = new GenerateRequest("g", prompt, SamplingParams.greedy(4));
            IllegalArgumentException x = assertThrows(IllegalArgumentException.class, () -> e.submit(r, 13, null));
            assertTrue(x.getMessage().contains("n (samples)") && x.getMessage().contains("1..12"), x.getMessage());
            assertThrows(IllegalArgumentException.class, () -> e.submit(r, 0, null));
            List<RequestResult> rs = results(e.submit(r, 9, null));
            assertEquals(9, rs.size());
            for (RequestResult x9 : rs) {
                assertEquals(FinishReason.REJECTED, x9.reason());
                assertTrue(x9.error().contains("maxRunning"), x9.error());
            }
            e.checkInvariants(true);
        }
    }

    /** A sample whose listener throws ends as ERROR alone; the others run on and every page comes back. */
    @Test
    void aFailingSampleEndsAlone() throws Exception {
        int[] prompt = randomTokens(new SplittableRandom(48), 2 * PAGE + 1);
        try (Engine e = EngineTestSupport.start(config(false))) {
            List<RequestResult> rs = results(e.submit(new GenerateRequest("g", prompt, sampled(8, 2, null)), 3,
                    (sample, token) -> {
                        if (sample == 1) {
                            throw new IllegalStateException("listener bug in sample 1");
                        }
                    }));
            assertEquals(FinishReason.LENGTH, rs.get(0).reason());
            assertEquals(FinishReason.ERROR, rs.get(1).reason());
            assertTrue(rs.get(1).error().contains("listener bug in sample 1"), rs.get(1).error());
            assertEquals(FinishReason.LENGTH, rs.get(2).reason());
            e.checkInvariants(true);
        }
    }

    /** A prompt whose prefill fails fails every sample, none of them forked, and holds no page. */
    @Test
    void aFailedPrefillFailsEverySample() throws Exception {
        int[] prompt = randomTokens(new SplittableRandom(49), 2 * PAGE + 3);
        java.util.concurrent.atomic.AtomicBoolean fail = new java.util.concurrent.atomic.AtomicBoolean(true);
        try (Engine e = EngineTestSupport.start(config(true), fwd -> (batch, kv, out) -> {
            if (fail.getAndSet(false)) {
                throw new IllegalStateException("injected forward failure");
            }
            fwd.forward(batch, kv, out);
        })) {
            List<RequestResult> rs = results(e.submit(new GenerateRequest("g", prompt, sampled(8, 2, null)), 3, null));
            for (RequestResult r : rs) {
                assertEquals(FinishReason.ERROR, r.reason(), r.toString());
                assertTrue(r.error().contains("injected forward failure"), r.error());
                assertEquals(0, r.outputTokens().length);
            }
            assertEquals(List.of("g", "g/1", "g/2"), rs.stream().map(RequestResult::id).toList());
            e.checkInvariants(true);
        }
    }

    /**
     * Forked samples that are preempted for lack of pages resume as requests of their own and
     * still draw exactly the tokens of the request alone with seed + i.
     */
    @ParameterizedTest(name = "prefix cache {0}")
    @ValueSource(booleans = {false, true})
    void preemptedSamplesResumeWithTheirOwnTokens(boolean prefixCache) throws Exception {
        SplittableRandom rnd = new SplittableRandom(50);
        int[] other = randomTokens(rnd, 40);
        int[] prompt = randomTokens(rnd, 2 * PAGE + 5);
        int n = 3;
        List<int[]> alone = new ArrayList<>();
        try (Engine e = EngineTestSupport.start(config(false))) {
            for (int i = 0; i < n; i++) {
                alone.add(e.runToCompletion(List.of(new GenerateRequest("alone" + i, prompt, sampled(60, 8 + i, null))))
                        .get(0).outputTokens());
            }
        }
        // 20 pages: the other request (7 pages at its end) and the 3 samples (2 shared + 3 x 4) do not fit together
        EngineConfig small = EngineTestSupport.tiny(PAGE, DType.F32, prefixCache, 20).build();
        try (Engine e = EngineTestSupport.start(small)) {
            RequestHandle first = e.submit(new GenerateRequest("other", other, sampled(60, 1, null)));
            MultiSampleHandle h = e.submit(new GenerateRequest("g", prompt, sampled(60, 8, null)), n, null);
            List<RequestResult> rs = results(h);
            assertTrue(first.result().get(120, TimeUnit.SECONDS).ok());
            assertTrue(e.snapshot().preemptions() > 0, "the pool is too small for both: something was preempted");
            assertTrue(rs.stream().anyMatch(r -> r.stats().preemptions() > 0), "a sample was preempted");
            for (int i = 0; i < n; i++) {
                assertArrayEquals(alone.get(i), rs.get(i).outputTokens(), "sample " + i);
            }
            e.checkInvariants(true);
        }
    }
}
