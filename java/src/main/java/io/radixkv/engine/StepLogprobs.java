package io.radixkv.engine;

import io.radixkv.kernels.LogprobKernels;
import io.radixkv.kernels.LogprobRows;
import io.radixkv.sched.Sequence;
import io.radixkv.sched.StepPlan;
import java.util.ArrayList;
import java.util.List;

/**
 * One step's log-probabilities, from one kernel call over the rows of the step's logits buffer
 * that requests asked about: each sampled row of a request with {@link LogprobOptions#sampled()}
 * (its target the token just sampled) and every prompt row ({@link ModelRunner.PromptRows}, its
 * target the next prompt token). The rows stay where the forward pass wrote them; only the
 * results come to Java. Engine thread only.
 */
final class StepLogprobs {
    private final TokenLogprob[] sampled;
    private final List<List<TokenLogprob>> prompt;

    private StepLogprobs(TokenLogprob[] sampled, List<List<TokenLogprob>> prompt) {
        this.sampled = sampled;
        this.prompt = prompt;
    }

    static LogprobOptions options(Sequence s) {
        RequestLogprobs lp = ((RequestState) s.attachment()).logprobs();
        return lp == null ? LogprobOptions.NONE : lp.options();
    }

    /** The first prompt position whose next-token row {@code s} still wants (MAX_VALUE: none). */
    static int promptLogitsFrom(Sequence s) {
        RequestLogprobs lp = ((RequestState) s.attachment()).logprobs();
        return lp == null || !lp.options().prompt() ? Integer.MAX_VALUE : lp.promptDone();
    }

    /** True when an entry of the step wants log-probabilities (the step then needs the full logits). */
    static boolean wanted(List<StepPlan.Entry> entries) {
        for (StepPlan.Entry e : entries) {
            if (options(e.seq()).any()) {
                return true;
            }
        }
        return false;
    }

    /**
     * Computes the step's log-probabilities, or returns null when nobody wants any.
     *
     * @param tokens the token sampled from each sampled row, or null when the step sampled row by
     *     row (then only the prompt rows are computed here; {@link #single} does each sampled row)
     */
    static StepLogprobs compute(LogprobKernels kernels, ModelRunner runner, List<StepPlan.Entry> entries,
                                int[] tokens) {
        List<ModelRunner.PromptRows> promptRows = runner.promptRows();
        int sampledRows = runner.sampledRows();
        List<Integer> rowIndex = new ArrayList<>();
        List<Integer> targets = new ArrayList<>();
        int topK = 0;
        int[] resultOf = new int[sampledRows];
        int row = 0;
        for (StepPlan.Entry e : entries) {
            if (!e.needsLogits()) {
                continue;
            }
            LogprobOptions o = options(e.seq());
            resultOf[row] = -1;
            if (o.sampled() && tokens != null) {
                resultOf[row] = rowIndex.size();
                rowIndex.add(row);
                targets.add(tokens[row]);
                topK = Math.max(topK, o.topK());
            }
            row++;
        }
        int firstPrompt = rowIndex.size();
        for (ModelRunner.PromptRows pr : promptRows) {
            Sequence s = entries.get(pr.entry()).seq();
            topK = Math.max(topK, options(s).promptTopK());
            for (int i = 0; i < pr.count(); i++) {
                rowIndex.add(pr.row() + i);
                targets.add(s.tokenAt(pr.from() + i + 1));
            }
        }
        if (rowIndex.isEmpty()) {
            return null;
        }
        LogprobRows r = kernels.compute(runner.logits(), runner.numLogitRows(), runner.vocab(),
                rowIndex.stream().mapToInt(Integer::intValue).toArray(),
                targets.stream().mapToInt(Integer::intValue).toArray(), topK);
        TokenLogprob[] sampled = new TokenLogprob[sampledRows];
        row = 0;
        for (StepPlan.Entry e : entries) {
            if (e.needsLogits()) {
                if (resultOf[row] >= 0) {
                    sampled[row] = token(r, resultOf[row], targets.get(resultOf[row]), options(e.seq()).topK());
                }
                row++;
            }
        }
        List<List<TokenLogprob>> prompt = new ArrayList<>();
        int at = firstPrompt;
        for (ModelRunner.PromptRows pr : promptRows) {
            int k = options(entries.get(pr.entry()).seq()).promptTopK();
            List<TokenLogprob> rows = new ArrayList<>(pr.count());
            for (int i = 0; i < pr.count(); i++, at++) {
                rows.add(token(r, at, targets.get(at), k));
            }
            prompt.add(rows);
        }
        return new StepLogprobs(sampled, prompt);
    }

    /** The log-probabilities of one sampled row (a step sampled row by row). */
    static TokenLogprob single(LogprobKernels kernels, ModelRunner runner, int row, int token, int topK) {
        LogprobRows r = kernels.compute(runner.logits(), runner.numLogitRows(), runner.vocab(), new int[] {row},
                new int[] {token}, topK);
        return token(r, 0, token, topK);
    }

    private static TokenLogprob token(LogprobRows r, int i, int token, int k) {
        int[] ids = new int[k];
        double[] lps = new double[k];
        for (int j = 0; j < k; j++) {
            ids[j] = r.topId(i, j);
            lps[j] = r.topLogprob(i, j);
        }
        return new TokenLogprob(token, r.targetLogprob()[i], ids, lps);
    }

    /** The sampled row's log-probabilities, or null where this step did not compute them. */
    TokenLogprob sampled(int row) {
        return sampled[row];
    }

    /** Appends the prompt rows of the step's entry {@code entry} to its request's log-probabilities. */
    void deliverPrompt(List<ModelRunner.PromptRows> promptRows, int entry, Sequence s) {
        for (int i = 0; i < promptRows.size(); i++) {
            if (promptRows.get(i).entry() == entry) {
                RequestLogprobs lp = ((RequestState) s.attachment()).logprobs();
                prompt.get(i).forEach(lp::addPrompt);
            }
        }
    }
}
