package io.radixkv.sched;

import java.util.ArrayList;
import java.util.List;

/**
 * One step's batch: for each sequence, the token positions {@code [start, end)} it computes
 * (one position for a decode, a chunk for a prefill) and whether its last position's logits
 * are needed (decode, or the final prefill chunk). Decodes come first, then prefill chunks.
 */
public final class StepPlan {
    /** One sequence's share of the batch. */
    public record Entry(Sequence seq, int start, int end, boolean decode, boolean needsLogits) {
        public int tokens() {
            return end - start;
        }
    }

    private final List<Entry> entries = new ArrayList<>();
    private int tokens;
    private int logitRows;

    void add(Sequence seq, int start, int end, boolean decode, boolean needsLogits) {
        entries.add(new Entry(seq, start, end, decode, needsLogits));
        tokens += end - start;
        if (needsLogits) {
            logitRows++;
        }
    }

    public List<Entry> entries() {
        return entries;
    }

    public boolean isEmpty() {
        return entries.isEmpty();
    }

    public int size() {
        return entries.size();
    }

    public int numTokens() {
        return tokens;
    }

    public int numLogitRows() {
        return logitRows;
    }

    public int decodeCount() {
        int n = 0;
        for (Entry e : entries) {
            if (e.decode()) {
                n++;
            }
        }
        return n;
    }
}
