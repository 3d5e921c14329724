package io.radixkv.server;

import java.time.Duration;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;

/**
 * The bounded queue in front of the engine: at most {@code maxRunning + maxWaiting} prompts
 * are in the engine at once (running or waiting for admission); more are refused with 429
 * rather than queued without bound. During shutdown everything new is refused with 503.
 * A request of more prompts than that capacity could never be admitted: it is a 400 (the
 * parser refuses it before tokenizing, {@link #acquire} again as the last word).
 */
final class Admission {
    private final int capacity;
    private final int maxRunning;
    private final int maxWaiting;
    private final Semaphore permits;
    private volatile boolean draining;

    Admission(int maxRunning, int maxWaiting) {
        this.capacity = maxRunning + maxWaiting;
        this.maxRunning = maxRunning;
        this.maxWaiting = maxWaiting;
        this.permits = new Semaphore(capacity);
    }

    /** Prompts the server can hold at once: more in one request can never be admitted. */
    int capacity() {
        return capacity;
    }

    /** The 400 for a request of {@code n} prompts, more than {@link #capacity()}; {@code param} names the field. */
    ApiException neverFits(String param, int n) {
        return ApiException.badRequest(param, "the request has " + n + " prompts; this server holds at most "
                + capacity + " at once (" + maxRunning + " running + " + maxWaiting + " waiting: --max-running, "
                + "--max-waiting), so it could never be admitted");
    }

    /** Takes {@code n} slots (one per prompt) or throws 400 (never fits) / 429 (queue full) / 503 (shutting down). */
    void acquire(int n) {
        if (draining) {
            throw ApiException.unavailable("the server is shutting down");
        }
        if (n > capacity) {
            throw neverFits("prompt", n);
        }
        if (!permits.tryAcquire(n)) {
            throw ApiException.overloaded("the waiting queue is full (" + capacity + " requests in the engine, "
                    + maxWaiting + " of them may wait); retry later");
        }
    }

    void release(int n) {
        permits.release(n);
    }

    void drain() {
        draining = true;
    }

    boolean draining() {
        return draining;
    }

    /** Waits until no request holds a slot; false on timeout. */
    boolean awaitIdle(Duration timeout) throws InterruptedException {
        if (permits.tryAcquire(capacity, timeout.toNanos(), TimeUnit.NANOSECONDS)) {
            permits.release(capacity);
            return true;
        }
        return false;
    }
}
