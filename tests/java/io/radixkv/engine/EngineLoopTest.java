package io.radixkv.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The engine thread's inbox contract, driven with fake work (issue 12, defects 4 and 5):
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

    /** Posts until refused; returns the refusal, failing if none comes within 10 s. */
    private static IllegalStateException refusalWithin10s(EngineLoop loop) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        AtomicInteger ran = new AtomicInteger();
        int posted = 0;
        while (System.nanoTime() < deadline) {
            try {
                loop.post(ran::incrementAndGet);
                posted++;
            } catch (IllegalStateException refused) {
                Thread.sleep(100);
                assertEquals(posted, ran.get(), "every task accepted before the refusal ran");
                return refused;
            }
            Thread.sleep(5);
        }
        fail("the stopped loop still accepts tasks (" + posted + " posted, " + ran.get() + " ran)");
        return null;
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
            for (int t = 0; t < 4; t++) {
                posters.add(Thread.ofPlatform().start(() -> {
                    while (!giveUp.get()) {
                        try {
                            loop.post(ran::incrementAndGet);
                            accepted.incrementAndGet();
                        } catch (IllegalStateException refused) {
                            return;
                        }
                    }
                }));
            }
            Thread.sleep(2);
            assertTrue(loop.stop(10_000));
            Thread.sleep(50); // posters that were not refused keep posting into the stopped loop
            giveUp.set(true);
            for (Thread t : posters) {
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
        IllegalStateException e = refusalWithin10s(loop);
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
        IllegalStateException e = refusalWithin10s(loop);
        assertTrue(e.getMessage().contains("internal error") && e.getMessage().contains("scheduler bug"),
                e.getMessage());
        assertTrue(w.aborts.get(0).contains("scheduler bug"), w.aborts.toString());
        assertTrue(loop.stop(10_000));
    }
}
