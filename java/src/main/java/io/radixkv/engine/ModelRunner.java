package io.radixkv.engine;

import io.radixkv.kernels.BackendMemory;
import io.radixkv.kernels.KvCacheView;
import io.radixkv.model.ForwardBatch;
import io.radixkv.model.StepOutput;
import io.radixkv.paging.BatchTables;
import io.radixkv.paging.KvSequences;
import io.radixkv.sched.Scheduler;
import io.radixkv.sched.Sequence;
import io.radixkv.sched.StepPlan;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.function.ToIntFunction;

/**
 * Turns a step's entries into one forward pass: the page-table tables (CSR, slot mapping,
 * positions, qo_indptr) from {@link BatchTables}, the input token ids, and the rows whose
 * logits are needed: first the last position of every decode and of every final prefill chunk
 * (the rows sampled, in entry order), then the prompt positions whose log-probabilities a
 * request wants ({@link PromptRows}). All buffers are allocated once for the engine's limits, in the backend's host staging memory (page-locked
 * for a device), and reused. Engine thread only.
 */
final class ModelRunner implements AutoCloseable {
    /** The model's forward pass (a seam: tests wrap it to inject failures). */
    @FunctionalInterface
    interface Forward {
        void forward(ForwardBatch batch, List<KvCacheView> kv, StepOutput out);
    }

    /**
     * Prompt positions {@code [from, from + count)} of entry {@code entry}, whose next-token logits
     * are rows {@code [row, row + count)} of the last run: row {@code row + i} scores prompt token
     * {@code from + i + 1}.
     */
    record PromptRows(int entry, int from, int row, int count) {}

    private final Forward forward;
    private final ToIntFunction<Sequence> promptLogitsFrom;
    private final BackendMemory memory;
    private final List<PromptRows> promptRows = new ArrayList<>();
    private int sampledRows;
    private int logitCapacity;
    private final List<KvCacheView> kv;
    private final KvSequences seqs;
    private final BatchTables tables;
    private final int vocab;
    private final MemorySegment tokenIds;
    private final MemorySegment logitRows;
    private MemorySegment logits;
    private MemorySegment argmax;
    private int numLogitRows;
    private boolean fullLogits;
    private long modelNanos;

    ModelRunner(Forward forward, List<KvCacheView> kv, KvSequences seqs, int maxBatch, int maxTokens, int vocab,
                BackendMemory memory) {
        this(forward, kv, seqs, maxBatch, maxTokens, vocab, memory, s -> Integer.MAX_VALUE);
    }

    /**
     * @param promptLogitsFrom the first prompt position whose logits a sequence wants
     *     ({@code Integer.MAX_VALUE}: none); the scheduler bounds how many such rows a step has
     */
    ModelRunner(Forward forward, List<KvCacheView> kv, KvSequences seqs, int maxBatch, int maxTokens, int vocab,
                BackendMemory memory, ToIntFunction<Sequence> promptLogitsFrom) {
        this.forward = Objects.requireNonNull(forward, "forward");
        this.promptLogitsFrom = Objects.requireNonNull(promptLogitsFrom, "promptLogitsFrom");
        this.memory = memory;
        this.kv = kv;
        this.seqs = seqs;
        this.vocab = vocab;
        long maxPages = Math.min((long) maxBatch * seqs.maxPagesPerSeq(), Integer.MAX_VALUE);
        // host tables in the backend's staging memory (page-locked for a device): the model
        // validates them and uploads what its kernels read, asynchronously, once per step
        this.tables = new BatchTables(maxBatch, maxTokens, (int) maxPages, memory);
        this.tokenIds = memory.allocateHost(4L * maxTokens);
        // every row is a distinct token of the step: the sampled rows, then at most the prompt rows
        this.logitRows = memory.allocateHost(4L * Math.min(maxTokens, maxBatch + (long) Scheduler.PROMPT_LOGIT_ROWS_PER_STEP));
        growLogits(maxBatch);
    }

    /**
     * Logits and argmax buffers for {@code rows} rows: the batch's from the start, grown (once, in
     * practice) when a step first carries prompt rows. The old buffers stay with the memory.
     */
    private void growLogits(int rows) {
        if (rows <= logitCapacity) {
            return;
        }
        // page-locked for a device backend: the step's one device-to-host copy lands here
        this.logits = memory.allocateHost(4L * rows * vocab);
        this.argmax = memory.allocateHost(4L * rows);
        this.logitCapacity = rows;
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
        int[] firstToken = new int[entries.size()];
        for (int i = 0; i < entries.size(); i++) {
            StepPlan.Entry e = entries.get(i);
            Sequence s = e.seq();
            firstToken[i] = t;
            tables.add(s.slot(), e.start(), e.end());
            for (int p = e.start(); p < e.end(); p++) {
                tokenIds.setAtIndex(ValueLayout.JAVA_INT, t++, s.tokenAt(p));
            }
            if (e.needsLogits()) {
                logitRows.setAtIndex(ValueLayout.JAVA_INT, rows++, t - 1);
            }
        }
        tables.finish();
        sampledRows = rows;
        promptRows.clear();
        for (int i = 0; i < entries.size(); i++) {
            StepPlan.Entry e = entries.get(i);
            if (e.decode()) {
                continue;
            }
            Sequence s = e.seq();
            int lo = Math.max(e.start(), promptLogitsFrom.applyAsInt(s));
            int hi = Math.min(e.end(), s.promptLength() - 1);
            if (lo < hi) {
                promptRows.add(new PromptRows(i, lo, rows, hi - lo));
                for (int p = lo; p < hi; p++) {
                    logitRows.setAtIndex(ValueLayout.JAVA_INT, rows++, firstToken[i] + p - e.start());
                }
            }
        }
        growLogits(rows);
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

    /** The rows sampled in the last run (the first rows): one per entry that needs logits. */
    int sampledRows() {
        return sampledRows;
    }

    /** The prompt rows of the last run, in entry order. */
    List<PromptRows> promptRows() {
        return promptRows;
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
