package io.radixkv.kernels.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** The CUDA availability check: computed once, never throws, never retried. */
class CachedProbeTest {
    private static final List<Thread> THREADS = new CopyOnWriteArrayList<>();

    /**
     * Holds the first check until every other asking thread has arrived and is parked at the
     * probe (blocked on its lock), or until a second check started: a cache that lets a second
     * thread in runs the check again, which the test then sees in {@code runs}.
     */
    private static void awaitOthersBlockedOrRunning(CountDownLatch arrived, AtomicInteger runs) {
        try {
            arrived.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return;
        }
        while (runs.get() == 1) {
            long parked = THREADS.stream().filter(t -> t != Thread.currentThread())
                    .map(Thread::getState)
                    .filter(st -> st == Thread.State.BLOCKED || st == Thread.State.WAITING)
                    .count();
            if (parked == THREADS.size() - 1) {
                return;
            }
            Thread.onSpinWait();
        }
    }

    /** The check runs once, even when many threads ask first at the same time. */
    @Test
    void probeRunsItsCheckOnceUnderConcurrentFirstCalls() throws Exception {
        AtomicInteger runs = new AtomicInteger();
        CountDownLatch go = new CountDownLatch(1);
        CountDownLatch arrived = new CountDownLatch(8);
        CachedProbe probe = new CachedProbe(() -> {
            runs.incrementAndGet();
            awaitOthersBlockedOrRunning(arrived, runs);
            return "no device (run " + runs.get() + ")";
        });
        THREADS.clear();
        List<String> answers = new CopyOnWriteArrayList<>();
        for (int i = 0; i < 8; i++) {
            THREADS.add(Thread.ofPlatform().start(() -> {
                try {
                    go.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                arrived.countDown();
                answers.add(probe.reason());
            }));
        }
        go.countDown();
        for (Thread t : THREADS) {
            t.join();
        }
        assertEquals(1, runs.get());
        assertEquals(8, answers.size());
        assertTrue(answers.stream().allMatch("no device (run 1)"::equals), answers.toString());
        assertEquals("no device (run 1)", probe.reason());
        assertEquals(1, runs.get());
    }

    /** A check that throws (a library that fails to link) is an answer, not an exception, and is not retried. */
    @Test
    void probeTurnsAFailingCheckIntoItsReason() {
        AtomicInteger runs = new AtomicInteger();
        CachedProbe probe = new CachedProbe(() -> {
            runs.incrementAndGet();
            throw new UnsatisfiedLinkError("libcudart.so.12: cannot open shared object file");
        });
        assertEquals("libcudart.so.12: cannot open shared object file", probe.reason());
        assertEquals("libcudart.so.12: cannot open shared object file", probe.reason());
        assertEquals(1, runs.get());
        CachedProbe available = new CachedProbe(() -> "");
        assertEquals("", available.reason());
    }
}
