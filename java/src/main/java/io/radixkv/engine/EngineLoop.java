package io.radixkv.engine;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

/**
 * The engine thread and its inbox: other threads post tasks (enqueue a request, wake up for
 * a cancellation, run a test check); the thread runs them between steps and steps while
 * there is work. An error escaping a step is a bug of the engine itself: it stops serving
 * and aborts every request.
 *
 * <p>Once the loop stops for any reason (close, engine error, interrupt) it refuses new
 * work before its final drain, under the same lock that queues a submission: every task
 * queued is run by the final drain, every later one is refused (no request is lost).
 */
final class EngineLoop {
    private static final Logger LOG = LogManager.getLogger(EngineLoop.class);

    /** What the loop drives: {@link StepExecutor} (a seam: tests drive the loop with fake work). */
    interface Work {
        boolean hasWork();

        void step();

        /** Ends every queued and running request with {@code why}. */
        void abortAll(String why);
    }

    private final Work executor;
    private final Thread thread;
    private final LinkedBlockingQueue<Runnable> inbox = new LinkedBlockingQueue<>();
    private final Object gate = new Object();
    private volatile boolean closing;
    /** Why submissions are refused; null while they are accepted. Written under {@link #gate}. */
    private volatile String refusal;

    EngineLoop(Work executor) {
        this.executor = executor;
        this.thread = Thread.ofPlatform().name("radixkv-engine").daemon(true).unstarted(this::run);
    }

    void start() {
        thread.start();
    }

    boolean closing() {
        return closing;
    }

    boolean isEngineThread() {
        return Thread.currentThread() == thread;
    }

    /** Why new work is refused (closing, stopped after an error, interrupted), or null while it is accepted. */
    String refusal() {
        return refusal;
    }

    /**
     * Queues {@code task} to run on the engine thread before the next step, unless the engine
     * no longer accepts work. Any thread.
     *
     * @throws IllegalStateException naming why the engine refuses work; nothing was queued
     */
    void post(Runnable task) {
        synchronized (gate) {
            String why = refusal;
            if (why != null) {
                throw new IllegalStateException(why);
            }
            inbox.add(task);
        }
    }

    private void refuseFromNowOn(String why) {
        synchronized (gate) {
            if (refusal == null) {
                refusal = why;
            }
        }
    }

    /** Wakes the engine thread (a request was cancelled). */
    void wake() {
        inbox.add(() -> { });
    }

    /** Runs {@code task} on the engine thread between steps and waits for its result. */
    <T> T call(Supplier<T> task) {
        CompletableFuture<T> f = new CompletableFuture<>();
        post(() -> {
            try {
                f.complete(task.get());
            } catch (Throwable t) {
                f.completeExceptionally(t);
            }
        });
        try {
            return f.get(60, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            if (e.getCause() instanceof RuntimeException re) {
                throw re;
            }
            throw new IllegalStateException(e.getCause());
        } catch (Exception e) {
            throw new IllegalStateException("engine thread did not run the task: " + e, e);
        }
    }

    /**
     * Asks the thread to stop (queued and running requests end as ABORTED) and waits for it.
     *
     * @return true when the thread has stopped; false if it is still running after the wait
     */
    boolean stop(long timeoutMillis) {
        refuseFromNowOn("the engine is closed");
        closing = true;
        inbox.add(() -> { });
        try {
            thread.join(timeoutMillis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        return !thread.isAlive();
    }

    /**
     * Waits for the engine thread to end without asking it to (it ends by itself after an engine
     * error or an interrupt): a test seam.
     *
     * @return true when the thread has ended
     */
    boolean awaitEnd(long timeoutMillis) throws InterruptedException {
        thread.join(timeoutMillis);
        return !thread.isAlive();
    }

    private void run() {
        String ended = "the engine was closed";
        List<Runnable> batch = new ArrayList<>();
        while (!closing) {
            try {
                if (!executor.hasWork()) {
                    Runnable r = inbox.poll(50, TimeUnit.MILLISECONDS);
                    if (r != null) {
                        r.run();
                    }
                }
                inbox.drainTo(batch);
                for (Runnable r : batch) {
                    r.run();
                }
                batch.clear();
                if (executor.hasWork()) {
                    executor.step();
                }
            } catch (InterruptedException e) {
                // an interrupt asks the thread to stop: stop serving rather than leave requests unrun
                Thread.currentThread().interrupt();
                LOG.warn("the engine thread was interrupted; aborting all requests and refusing new ones");
                ended = "the engine thread was interrupted";
                refuseFromNowOn(ended + ": the engine no longer serves");
                break;
            } catch (Throwable t) {
                // a bug in the engine itself (not one request's failure): stop serving cleanly
                LOG.error("engine step failed; aborting all requests", t);
                ended = "engine error: " + t;
                refuseFromNowOn("the engine stopped after an internal error: " + t);
                executor.abortAll(ended);
                break;
            }
        }
        refuseFromNowOn("the engine is closed"); // before the final drain: nothing queued after it
        // everything queued before the refusal runs now (enqueued requests are aborted below)
        List<Runnable> rest = new ArrayList<>();
        inbox.drainTo(rest);
        for (Runnable r : rest) {
            try {
                r.run();
            } catch (RuntimeException ignored) {
                // enqueue into a stopped scheduler: aborted below
            }
        }
        executor.abortAll(ended);
    }
}
