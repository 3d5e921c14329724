package io.radixkv.engine;

import io.radixkv.kernels.BackendMemory;
import io.radixkv.kernels.KvCacheView;
import io.radixkv.model.ForwardBatch;
import io.radixkv.model.StepOutput;
import io.radixkv.paging.BatchTables;
import io.radixkv.paging.KvSequences;
import io.radixkv.sched.Sequence;
import io.radixkv.sched.StepPlan;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;
import java.util.Objects;

/**
 * Turns a step's entries into one forward pass: the page-table tables (CSR, slot mapping,
 * positions, qo_indptr) from {@link BatchTables}, the input token ids, and the rows whose
 * logits are needed (the last position of every decode and of every final prefill chunk).
 * All buffers are allocated once for the engine's limits, in the backend's host staging memory (page-locked
 * for a device), and reused. Engine thread only.
 */
final class ModelRunner implements AutoCloseable {
    /** The model's forward pass (a seam: tests wrap it to inject failures). */
    @FunctionalInterface
    interface Forward {
        void forward(ForwardBatch batch, List<KvCacheView> kv, StepOutput out);
    }

    private final Forward forward;
    private final List<KvCacheView> kv;
    private final KvSequences seqs;
    private final BatchTables tables;
    private final int vocab;
    private final MemorySegment tokenIds;
    private final MemorySegment logitRows;
    private final MemorySegment logits;
    private final MemorySegment argmax;
    private int numLogitRows;
    private boolean fullLogits;
    private long modelNanos;

    ModelRunner(Forward forward, List<KvCacheView> kv, KvSequences seqs, int maxBatch, int maxTokens, int vocab,
                BackendMemory memory) {
        this.forward = Objects.requireNonNull(forward, "forward");
        this.kv = kv;
        this.seqs = seqs;
        this.vocab = vocab;
        long maxPages = Math.min((long) maxBatch * seqs.maxPagesPerSeq(), Integer.MAX_VALUE);
        // host tables in the backend's staging memory (page-locked for a device): the model
        // validates them and uploads what its kernels read, asynchronously, once per step
        this.tables = new BatchTables(maxBatch, maxTokens, (int) maxPages, memory);
        this.tokenIds = memory.allocateHost(4L * maxTokens);
        this.logitRows = memory.allocateHost(4L * maxBatch);
        // page-locked for a device backend: the step's one device-to-host copy lands here
        this.logits = memory.allocateHost(4L * maxBatch * vocab);
        this.argmax = memory.allocateHost(4L * maxBatch);
    }

    /**
     * Runs the forward pass over {@code entries} (nothing is committed: on an exception the
     * sequences are exactly as before and the same entries can be run again). Afterwards
     * {@link #logitsRow} gives the logits of the k-th entry that needs them.
     */
    void run(List<StepPlan.Entry> entries, boolean fullLogits) {
        tables.begin(seqs);
        int t = 0;
        int rows = 0;
        for (StepPlan.Entry e : entries) {
            Sequence s = e.seq();
            tables.add(s.slot(), e.start(), e.end());
            for (int p = e.start(); p < e.end(); p++) {
                tokenIds.setAtIndex(ValueLayout.JAVA_INT, t++, s.tokenAt(p));
            }
            if (e.needsLogits()) {
                logitRows.setAtIndex(ValueLayout.JAVA_INT, rows++, t - 1);
            }
        }
        tables.finish();
        numLogitRows = rows;
        this.fullLogits = fullLogits;
        ForwardBatch batch = new ForwardBatch(tokenIds, tables.positions(), t, tables.slotMapping(),
                tables.qoIndptr(), tables.csr(), logitRows, rows);
        long t0 = System.nanoTime();
        try {
            // every step gets the rows' argmax (greedy sampling); the logits only when asked for
            forward.forward(batch, kv, new StepOutput(logits, argmax, fullLogits));
        } finally {
            modelNanos += System.nanoTime() - t0;
        }
    }

    /** Time spent in the model's forward itself (without building the batch tables), all runs. */
    long modelNanos() {
        return modelNanos;
    }

    int numLogitRows() {
        return numLogitRows;
    }

    int vocab() {
        return vocab;
    }

    /** True when the last run produced the full logits (not only each row's argmax). */
    boolean hasFullLogits() {
        return fullLogits;
    }

    /** The argmax (greedy token) of the {@code row}-th logit row of the last run. */
    int argmax(int row) {
        Objects.checkIndex(row, numLogitRows);
        return argmax.getAtIndex(ValueLayout.JAVA_INT, row);
    }

    /** The logits buffer {@code [numLogitRows, vocab]} f32 of the last run (valid when {@link #hasFullLogits()}). */
    MemorySegment logits() {
        return logits;
    }

    /** Logits of the {@code row}-th logit row of the last run ({@code vocab} floats). */
    MemorySegment logitsRow(int row) {
        Objects.checkIndex(row, numLogitRows);
        return logits.asSlice(4L * row * vocab, 4L * vocab);
    }

    @Override
    public void close() {
        tables.close();
    }
}
