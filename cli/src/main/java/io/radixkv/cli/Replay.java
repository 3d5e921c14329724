package io.radixkv.cli;

import io.radixkv.cli.report.RequestRecord;
import io.radixkv.cli.workload.Workload;
import io.radixkv.cli.workload.WorkloadRequest;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.function.BiConsumer;
import me.tongfei.progressbar.ProgressBar;
import me.tongfei.progressbar.ProgressBarBuilder;
import me.tongfei.progressbar.ProgressBarStyle;

/**
 * Replays a workload with arrivals in (scaled) real time against a {@link Target}: each
 * independent request is sent at its arrival time, a dependent one (a conversation's next turn)
 * when its predecessor has finished plus the think time. The same schedule drives the engine in
 * process and a server over HTTP, so their results compare.
 */
final class Replay {
    /** Where the requests go: the engine in process, or a server over HTTP. */
    interface Target {
        /**
         * Sends {@code prompt} as request {@code r} without blocking the caller; calls
         * {@code done} exactly once, from any thread, with what was observed and the output
         * token ids (null when the target does not return them).
         */
        void send(WorkloadRequest r, int[] prompt, BiConsumer<RequestRecord, int[]> done);
    }

    private Replay() {}

    /**
     * Runs the workload; a request not finished after {@code maxSeconds} counts as failed.
     *
     * @return one record per request, in id order
     */
    static List<RequestRecord> run(Workload w, double timeScale, double maxSeconds, String label, PrintWriter log,
                                   Target target) {
        int n = w.size();
        AtomicReferenceArray<RequestRecord> records = new AtomicReferenceArray<>(n);
        long[] sent = new long[n];
        int[][] sentPrompts = new int[n][];
        int[][] outputs = new int[n][];
        CountDownLatch done = new CountDownLatch(n);
        List<List<WorkloadRequest>> dependents = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            dependents.add(new ArrayList<>());
        }
        for (WorkloadRequest r : w.requests()) {
            if (r.after() >= 0) {
                dependents.get(r.after()).add(r);
            }
        }
        ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor(t -> {
            Thread th = new Thread(t, "radixkv-bench-arrivals");
            th.setDaemon(true);
            return th;
        });
        ProgressBar bar = CliSupport.interactive() ? new ProgressBarBuilder().setTaskName(label)
                .setInitialMax(n).setStyle(ProgressBarStyle.ASCII).continuousUpdate().build() : null;
        try {
            long start = System.nanoTime();
            // A submission task: sends request r, and when it ends records it and schedules its dependents.
            class Submit implements Runnable {
                final WorkloadRequest r;

                Submit(WorkloadRequest r) {
                    this.r = r;
                }

                @Override
                public void run() {
                    int[] prompt = livePrompt(r, w, sentPrompts, outputs);
                    sentPrompts[r.id()] = prompt;
                    sent[r.id()] = System.nanoTime();
                    try {
                        target.send(r, prompt, (rec, out) -> {
                            outputs[r.id()] = out;
                            finish(rec);
                        });
                    } catch (RuntimeException e) {
                        finish(RequestRecord.failed(r.id(), prompt.length, sent[r.id()], System.nanoTime(),
                                "refused at submit: " + Main.describe(e)));
                    }
                }

                private void finish(RequestRecord rec) {
                    records.set(r.id(), rec);
                    for (WorkloadRequest d : dependents.get(r.id())) {
                        timer.schedule(new Submit(d), Math.round(d.afterDelaySeconds() * timeScale * 1e9),
                                TimeUnit.NANOSECONDS);
                    }
                    if (bar != null) {
                        bar.step();
                    }
                    done.countDown();
                }
            }
            for (WorkloadRequest r : w.requests()) {
                if (r.after() < 0) {
                    long at = Math.round(r.arrivalSeconds() * timeScale * 1e9);
                    timer.schedule(new Submit(r), Math.max(0, start + at - System.nanoTime()), TimeUnit.NANOSECONDS);
                }
            }
            if (!done.await(Math.round(maxSeconds * 1e9), TimeUnit.NANOSECONDS)) {
                log.println("bench: run cut off after --max-duration " + maxSeconds
                        + " s; unfinished requests count as failed");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while waiting for the workload", e);
        } finally {
            timer.shutdownNow();
            if (bar != null) {
                bar.close();
            }
        }
        List<RequestRecord> out = new ArrayList<>(n);
        long now = System.nanoTime();
        for (int i = 0; i < n; i++) {
            RequestRecord rec = records.get(i);
            WorkloadRequest r = w.requests().get(i);
            out.add(rec != null ? rec : RequestRecord.failed(i, r.promptLength(), sent[i] != 0 ? sent[i] : now, now,
                    (sent[i] != 0 ? "unfinished" : "never sent") + " after --max-duration " + maxSeconds + " s"));
        }
        return out;
    }

    /**
     * The prompt to send: the workload's, except for a conversation's next turn whose
     * predecessor finished with known output ids: then the prompt actually sent there, the reply
     * actually generated (instead of the workload's stand-in) and this turn's new message, as a
     * chat client does.
     */
    static int[] livePrompt(WorkloadRequest r, Workload w, int[][] sentPrompts, int[][] outputs) {
        int a = r.after();
        if (r.replyTokens() == 0 || sentPrompts[a] == null || outputs[a] == null) {
            return r.prompt();
        }
        int[] own = r.prompt();
        int from = w.requests().get(a).promptLength() + r.replyTokens();
        int[] prev = sentPrompts[a];
        int[] reply = outputs[a];
        int[] p = new int[prev.length + reply.length + own.length - from];
        System.arraycopy(prev, 0, p, 0, prev.length);
        System.arraycopy(reply, 0, p, prev.length, reply.length);
        System.arraycopy(own, from, p, prev.length + reply.length, own.length - from);
        return p;
    }
}
