package io.radixkv.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The engine thread's inbox contract, driven with fake work:
 * whatever stops the loop (close, an engine error, an interrupt), every task it accepted
 * runs, and every later one is refused with the reason. A request is such a task, so none
 * can be accepted and never run.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class EngineLoopTest {
    /** No requests of its own; records the abort reasons. A step throws when asked to. */
    private static final class FakeWork implements EngineLoop.Work {
        final List<String> aborts = new CopyOnWriteArrayList<>();
        volatile boolean work;
        volatile Error failStep;

        @Override
        public boolean hasWork() {
            return work;
        }

        @Override
        public void step() {
            if (failStep != null) {
                throw failStep;
            }
        }

        @Override
        public void abortAll(String why) {
            aborts.add(why);
        }
    }

    /**
     * Posts while the loop ends by itself (each post runs in its final drain or is refused), waits
     * for the thread to end, and returns the refusal of a post after it.
     */
    private static IllegalStateException refusalAfterTheLoopEnds(EngineLoop loop) throws InterruptedException {
        AtomicInteger ran = new AtomicInteger();
        int posted = 0;
        for (int i = 0; i < 1000; i++) {
            try {
                loop.post(ran::incrementAndGet);
                posted++;
            } catch (IllegalStateException refused) {
                break;
            }
        }
        assertTrue(loop.awaitEnd(10_000), "the loop did not end by itself");
        IllegalStateException refused = assertThrows(IllegalStateException.class,
                () -> loop.post(ran::incrementAndGet));
        assertEquals(posted, ran.get(), "every task accepted before the refusal ran");
        return refused;
    }

    @Test
    void postAfterStopIsRefusedNotLost() {
        FakeWork w = new FakeWork();
        EngineLoop loop = new EngineLoop(w);
        loop.start();
        assertTrue(loop.stop(10_000));
        AtomicBoolean ran = new AtomicBoolean();
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> loop.post(() -> ran.set(true)));
        assertTrue(e.getMessage().contains("closed"), e.getMessage());
        assertEquals(List.of("the engine was closed"), w.aborts);
    }

    /** Posters racing stop: the number of tasks run equals the number of posts accepted. */
    @Test
    void postsRacingStopAllRunOrAreRefused() throws Exception {
        for (int round = 0; round < 20; round++) {
            FakeWork w = new FakeWork();
            EngineLoop loop = new EngineLoop(w);
            loop.start();
            AtomicLong accepted = new AtomicLong();
            AtomicLong ran = new AtomicLong();
            AtomicBoolean giveUp = new AtomicBoolean();
            List<Thread> posters = new ArrayList<>();
            CountDownLatch posting = new CountDownLatch(4);
            for (int t = 0; t < 4; t++) {
                posters.add(Thread.ofPlatform().start(() -> {
                    boolean first = true;
                    while (!giveUp.get()) {
                        try {
                            loop.post(ran::incrementAndGet);
                            accepted.incrementAndGet();
                        } catch (IllegalStateException refused) {
                            return;
                        } finally {
                            if (first) {
                                posting.countDown();
                                first = false;
                            }
                        }
                    }
                }));
            }
            posting.await(); // every poster is in its loop: stop races them
            assertTrue(loop.stop(10_000));
            // after stop every post is refused, so each poster ends on its next post
            for (Thread t : posters) {
                t.join(10_000);
            }
            giveUp.set(true);
            for (Thread t : posters) {
                assertFalse(t.isAlive(), "a poster was still accepted after stop");
                t.join();
            }
            assertEquals(accepted.get(), ran.get(), "round " + round + ": tasks accepted but never run");
        }
    }

    @Test
    void interruptStopsTheLoopAbortsAndRefuses() throws Exception {
        FakeWork w = new FakeWork();
        EngineLoop loop = new EngineLoop(w);
        loop.start();
        loop.call(() -> {
            Thread.currentThread().interrupt();
            return null;
        });
        IllegalStateException e = refusalAfterTheLoopEnds(loop);
        assertNotNull(e);
        assertTrue(e.getMessage().contains("interrupted"), e.getMessage());
        assertEquals(1, w.aborts.size(), w.aborts.toString());
        assertTrue(w.aborts.get(0).contains("interrupted"), w.aborts.toString());
        assertTrue(loop.stop(10_000));
    }

    @Test
    void anEngineErrorStopsTheLoopAbortsAndRefuses() throws Exception {
        FakeWork w = new FakeWork();
        EngineLoop loop = new EngineLoop(w);
        loop.start();
        w.failStep = new AssertionError("scheduler bug");
        w.work = true;
        IllegalStateException e = refusalAfterTheLoopEnds(loop);
        assertTrue(e.getMessage().contains("internal error") && e.getMessage().contains("scheduler bug"),
                e.getMessage());
        assertTrue(w.aborts.get(0).contains("scheduler bug"), w.aborts.toString());
        assertTrue(loop.stop(10_000));
    }
}
