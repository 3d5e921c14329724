package io.radixkv.engine;

import io.radixkv.kernels.TokenBitmaskKernels;
import io.radixkv.sched.Scheduler;
import io.radixkv.sched.Sequence;
import io.radixkv.sched.StepPlan;
import io.radixkv.structured.GrammarMatcher;
import java.util.Arrays;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

/**
 * Structured outputs in the step: before a step's rows are sampled, each row of a request
 * with a grammar gets its matcher's token mask applied to its logits (disallowed tokens -inf,
 * before temperature and top-p); after sampling, {@link #advance} moves the matcher by the
 * token. A request whose grammar allows no token of the vocabulary, or whose token the matcher
 * refuses, fails alone, when its row is emitted (a sequence must not finish between the
 * forward pass and the step's commit). Engine thread only.
 */
final class ConstrainedRows {
    private static final Logger LOG = LogManager.getLogger(ConstrainedRows.class);

    private final Scheduler scheduler;
    private final TokenBitmaskKernels kernels;
    /** Requests whose mask failed this step: failed when their row is emitted, after the step's commit. */
    private final Map<Sequence, String> failures = new IdentityHashMap<>();

    ConstrainedRows(Scheduler scheduler, TokenBitmaskKernels kernels) {
        this.scheduler = scheduler;
        this.kernels = kernels;
    }

    /** True when a row that samples this step belongs to a request with a grammar (it needs full logits). */
    static boolean any(List<StepPlan.Entry> entries) {
        for (StepPlan.Entry e : entries) {
            if (e.needsLogits() && ((RequestState) e.seq().attachment()).matcher() != null) {
                return true;
            }
        }
        return false;
    }

    /** Masks the constrained rows of {@code logits} ({@code [rows, vocab]}, rows in entry order). */
    void apply(List<StepPlan.Entry> entries, java.lang.foreign.MemorySegment logits, int rows, int vocab) {
        failures.clear();
        int[][] masks = new int[rows][];
        int[] rowIndex = new int[rows];
        Sequence[] owners = new Sequence[rows];
        int n = 0;
        int row = 0;
        for (StepPlan.Entry e : entries) {
            if (!e.needsLogits()) {
                continue;
            }
            int r = row++;
            GrammarMatcher m = ((RequestState) e.seq().attachment()).matcher();
            if (m == null) {
                continue;
            }
            int[] mask;
            try {
                mask = m.allowedTokens();
            } catch (RuntimeException ex) {
                LOG.warn("token mask of request {} failed; failing it", e.seq().id(), ex);
                failures.put(e.seq(), "structured output: computing the token mask failed: " + ex);
                continue;
            }
            if (isEmpty(mask)) {
                failures.put(e.seq(), "structured output: no token of the vocabulary continues the text "
                        + "within the constraint");
                continue;
            }
            masks[n] = mask;
            rowIndex[n] = r;
            owners[n++] = e.seq();
        }
        if (n == 0) {
            return;
        }
        try {
            kernels.applyTokenBitmask(logits, rows, vocab, Arrays.copyOf(masks, n), Arrays.copyOf(rowIndex, n));
        } catch (RuntimeException ex) {
            LOG.warn("applying token masks failed; failing the constrained requests of the step", ex);
            for (int i = 0; i < n; i++) {
                failures.put(owners[i], "structured output: applying the token mask failed: " + ex);
            }
        }
    }

    /**
     * Why {@code s}'s row could not be masked this step, or null. Its row is sampled with the
     * others but its token must not be used: the caller fails it (after the step's commit).
     */
    String failure(Sequence s) {
        return failures.isEmpty() ? null : failures.get(s);
    }

    /** Moves {@code s}'s matcher by {@code token}; false (and {@code s} failed) when it refuses the token. */
    boolean advance(Sequence s, int token) {
        GrammarMatcher m = ((RequestState) s.attachment()).matcher();
        if (m == null || m.accept(token)) {
            return true;
        }
        scheduler.fail(s, "structured output: token " + token + " is outside the constraint");
        return false;
    }

    private static boolean isEmpty(int[] mask) {
        for (int w : mask) {
            if (w != 0) {
                return false;
            }
        }
        return true;
    }
}
