package io.radixkv.engine;

import io.radixkv.sched.FinishReason;
import static io.radixkv.engine.EngineTestSupport.randomTokens;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.radixkv.kernels.DType;
import io.radixkv.model.SamplingParams;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A failure or interruption anywhere never leaves a request without a result: an Error in a
 * listener or while sampling fails only its request, and submissions racing close or an
 * interrupted engine thread either complete or are refused.
 */
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class EngineFailureIsolationTest {
    private static RequestResult get(RequestHandle h) throws Exception {
        return h.result().get(60, TimeUnit.SECONDS);
    }

    private static EngineConfig.Builder small() {
        return EngineTestSupport.tiny(4, DType.F32, true, 256);
    }

    /** An Error from a token listener ends only that request; the engine keeps serving. */
    @Test
    void listenerThrowingAnErrorFailsOnlyItsRequest() throws Exception {
        SplittableRandom rnd = new SplittableRandom(12);
        int[] pa = randomTokens(rnd, 10);
        int[] pb = randomTokens(rnd, 10);
        try (Engine e = EngineTestSupport.start(small().build())) {
            RequestHandle a = e.submit(new GenerateRequest("a", pa, SamplingParams.greedy(6)), t -> {
                throw new AssertionError("listener bug in a");
            });
            RequestHandle b = e.submit(new GenerateRequest("b", pb, SamplingParams.greedy(6)));
            RequestResult ra = get(a);
            RequestResult rb = get(b);
            assertEquals(FinishReason.ERROR, ra.reason(), ra.toString());
            assertNotNull(ra.error());
            assertTrue(ra.error().contains("listener") && ra.error().contains("listener bug in a"), ra.error());
            assertTrue(rb.ok(), "the other request is unaffected: " + rb);
            assertEquals(6, rb.outputTokens().length);
            RequestResult rc = get(e.submit(new GenerateRequest("c", pb, SamplingParams.greedy(3))));
            assertTrue(rc.ok(), "the engine still serves: " + rc);
            e.checkInvariants(true);
        }
    }

    /** An Error from the logits path (here the probe) fails only that request. */
    @Test
    void errorWhileSamplingFailsOnlyItsRequest() throws Exception {
        SplittableRandom rnd = new SplittableRandom(13);
        try (Engine e = EngineTestSupport.start(small().build())) {
            e.setLogitsProbe((id, index, logits) -> {
                if (id.equals("bad")) {
                    throw new StackOverflowError("sampling bug");
                }
            });
            RequestHandle bad = e.submit(new GenerateRequest("bad", randomTokens(rnd, 9), SamplingParams.greedy(4)));
            RequestHandle good = e.submit(new GenerateRequest("good", randomTokens(rnd, 9), SamplingParams.greedy(4)));
            RequestResult rbad = get(bad);
            RequestResult rgood = get(good);
            assertEquals(FinishReason.ERROR, rbad.reason(), rbad.toString());
            assertTrue(rbad.error().contains("sampling bug"), rbad.error());
            assertTrue(rgood.ok(), rgood.toString());
            e.checkInvariants(true);
        }
    }

    /**
     * Submissions racing close: every submit either throws (the engine is closing) or returns a
     * handle that completes. End to end, so which submits win the race varies from run to run;
     * {@link EngineLoopTest} checks the same guarantee deterministically at the inbox.
     */
    @Test
    void everyRequestAcceptedWhileClosingCompletes() throws Exception {
        SplittableRandom rnd = new SplittableRandom(14);
        int[] prompt = randomTokens(rnd, 6);
        for (int round = 0; round < 25; round++) {
            List<RequestHandle> accepted = new CopyOnWriteArrayList<>();
            List<Throwable> unexpected = new CopyOnWriteArrayList<>();
            Engine e = EngineTestSupport.start(small().build());
            CountDownLatch started = new CountDownLatch(6);
            List<Thread> submitters = new ArrayList<>();
            for (int t = 0; t < 6; t++) {
                int id = t;
                submitters.add(Thread.ofPlatform().start(() -> {
                    started.countDown();
                    for (int i = 0; ; i++) {
                        try {
                            accepted.add(e.submit(new GenerateRequest("s" + id + "-" + i, prompt,
                                    SamplingParams.greedy(2))));
                        } catch (IllegalStateException closed) {
                            return;
                        } catch (Throwable other) {
                            unexpected.add(other);
                            return;
                        }
                    }
                }));
            }
            started.await();
            Thread.sleep(5);
            e.close();
            for (Thread t : submitters) {
                t.join(TimeUnit.SECONDS.toMillis(30));
            }
            assertTrue(unexpected.isEmpty(), unexpected.toString());
            for (RequestHandle h : accepted) {
                try {
                    RequestResult r = h.result().get(10, TimeUnit.SECONDS);
                    assertTrue(r.ok() || r.reason() == FinishReason.ABORTED, r.toString());
                } catch (TimeoutException lost) {
                    fail("round " + round + ": request " + h.id() + " was accepted during close and never completed ("
                            + accepted.size() + " accepted)");
                }
            }
        }
    }

    /**
     * After the engine thread is interrupted, no request is accepted that never
     * runs: each submit either completes or is refused, naming the interruption.
     */
    @Test
    void interruptedEngineThreadRefusesInsteadOfLosingRequests() throws Exception {
        SplittableRandom rnd = new SplittableRandom(15);
        int[] prompt = randomTokens(rnd, 6);
        try (Engine e = EngineTestSupport.start(small().build())) {
            assertTrue(get(e.submit(new GenerateRequest("before", prompt, SamplingParams.greedy(2)))).ok());
            e.onEngineThread(() -> {
                Thread.currentThread().interrupt();
                return null;
            });
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
            for (int i = 0; ; i++) {
                RequestHandle h;
                try {
                    h = e.submit(new GenerateRequest("after" + i, prompt, SamplingParams.greedy(2)));
                } catch (IllegalStateException refused) {
                    assertTrue(refused.getMessage().contains("interrupted"), refused.getMessage());
                    break;
                }
                try {
                    RequestResult r = h.result().get(10, TimeUnit.SECONDS);
                    assertTrue(r.ok() || r.reason() == FinishReason.ABORTED, r.toString());
                } catch (TimeoutException lost) {
                    fail("request " + h.id() + " was accepted by an engine whose thread was interrupted and never ran");
                }
                if (System.nanoTime() > deadline) {
                    break; // an engine that keeps serving after the interrupt is also correct
                }
                Thread.sleep(20);
            }
        }
    }
}
