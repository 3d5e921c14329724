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
 */
final class EngineLoop {
    private static final Logger LOG = LogManager.getLogger(EngineLoop.class);

    private final StepExecutor executor;
    private final Thread thread;
    private final LinkedBlockingQueue<Runnable> inbox = new LinkedBlockingQueue<>();
    private volatile boolean closing;
    private volatile String fatal;

    EngineLoop(StepExecutor executor) {
        this.executor = executor;
        this.thread = Thread.ofPlatform().name("radixkv-engine").daemon(true).unstarted(this::run);
    }

    void start() {
        thread.start();
    }

    boolean closing() {
        return closing;
    }

    /** Why the engine stopped serving, or null while it serves. */
    String fatal() {
        return fatal;
    }

    boolean isEngineThread() {
        return Thread.currentThread() == thread;
    }

    /** Runs {@code task} on the engine thread before the next step. Any thread. */
    void post(Runnable task) {
        inbox.add(task);
    }

    /** Wakes the engine thread (a request was cancelled). */
    void wake() {
        inbox.add(() -> { });
    }

    /** Runs {@code task} on the engine thread between steps and waits for its result. */
    <T> T call(Supplier<T> task) {
        CompletableFuture<T> f = new CompletableFuture<>();
        inbox.add(() -> {
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
        closing = true;
        inbox.add(() -> { });
        try {
            thread.join(timeoutMillis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        return !thread.isAlive();
    }

    private void run() {
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
                Thread.currentThread().interrupt();
                break;
            } catch (Throwable t) {
                // a bug in the engine itself (not one request's failure): stop serving cleanly
                LOG.error("engine step failed; aborting all requests", t);
                fatal = String.valueOf(t);
                executor.abortAll("engine error: " + t);
                break;
            }
        }
        // anything still queued (submissions racing close) must not hang
        List<Runnable> rest = new ArrayList<>();
        inbox.drainTo(rest);
        for (Runnable r : rest) {
            try {
                r.run();
            } catch (RuntimeException ignored) {
                // enqueue into a stopped scheduler: aborted below
            }
        }
        executor.abortAll(fatal != null ? "engine error: " + fatal : "the engine was closed");
    }
}
