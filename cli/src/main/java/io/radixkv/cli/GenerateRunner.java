package io.radixkv.cli;

import io.radixkv.engine.Engine;
import io.radixkv.engine.EngineConfig;
import io.radixkv.engine.GenerateRequest;
import io.radixkv.engine.RequestResult;
import io.radixkv.engine.RequestStats;
import io.radixkv.model.SamplingParams;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.Collectors;

/**
 * Runs {@code generate}'s prompts in order through one engine (each after the previous one
 * finished, so later prompts hit the cache of earlier ones), greedy, and prints the outputs
 * and per-request stats.
 */
final class GenerateRunner {
    private GenerateRunner() {}

    /** Thrown for a prompt token the model's vocabulary does not have (a usage error). */
    static final class BadTokenException extends RuntimeException {
        BadTokenException(String message) {
            super(message);
        }
    }

    static EngineConfig engineConfig(GenerateCommand.Settings s) {
        return EngineConfig.builder().model(s.model()).weightsSeed(s.seed()).kvDtype(s.kvDtype())
                .pageSize(s.pageSize()).prefixCache(s.prefixCache()).backend(s.backend())
                .weightsDtype(s.weightsDtype()).packWeights(s.packWeights()).weightsQuant(s.weightsQuant()).build();
    }

    static void run(Engine engine, GenerateCommand.Settings s, PrintWriter out) {
        int vocab = engine.modelConfig().vocab();
        for (int i = 0; i < s.prompts().size(); i++) {
            for (int t : s.prompts().get(i)) {
                if (t >= vocab) {
                    throw new BadTokenException("token id " + t + " of prompt " + i + " is outside the model's vocabulary [0, "
                            + vocab + ")");
                }
            }
        }
        // The probe sees every sampled token's logits; output index 0 is the last prompt position.
        Map<String, float[]> lastPrompt = new ConcurrentHashMap<>();
        if (s.logits() != null) {
            engine.setLogitsProbe((id, index, l) -> {
                if (index == 0) {
                    lastPrompt.put(id, l);
                }
            });
        }
        List<GenerateRequest> reqs = new ArrayList<>();
        for (int i = 0; i < s.prompts().size(); i++) {
            reqs.add(new GenerateRequest("prompt-" + i, s.prompts().get(i), SamplingParams.greedy(s.maxTokens())));
        }
        List<RequestResult> results = engine.runToCompletion(reqs);
        for (int i = 0; i < results.size(); i++) {
            RequestResult r = results.get(i);
            String ids = Arrays.stream(r.outputTokens()).mapToObj(Integer::toString).collect(Collectors.joining(" "));
            out.println("prompt " + i + ": " + ids + (r.ok() ? "" : "  [" + r.reason() + ": " + Main.oneLine(r.error()) + "]"));
        }
        out.printf("%-8s %8s %8s %9s %10s %10s %8s%n", "prompt", "tokens", "cached", "computed", "ttft_ms", "e2e_ms",
                "output");
        for (int i = 0; i < results.size(); i++) {
            RequestStats st = results.get(i).stats();
            out.printf(Locale.ROOT, "%-8d %8d %8d %9d %10.1f %10.1f %8d%n", i, st.promptTokens(),
                    st.cachedPromptTokens(), st.promptTokens() - st.cachedPromptTokens(),
                    st.ttftNanos() < 0 ? Double.NaN : st.ttftNanos() / 1e6, st.e2eNanos() / 1e6,
                    results.get(i).outputTokens().length);
        }
        out.flush();
        if (results.stream().anyMatch(r -> !r.ok())) {
            throw new IllegalStateException(results.stream().filter(r -> !r.ok()).count() + " of " + results.size()
                    + " prompts failed");
        }
        if (s.logits() != null) {
            writeLogits(s.logits(), results, lastPrompt, vocab);
            out.println("wrote logits of " + results.size() + " prompt(s) x " + vocab + " (float32) to " + s.logits());
            out.flush();
        }
    }

    /** {@code [vocab]} for one prompt, {@code [prompts, vocab]} otherwise, in prompt order. */
    private static void writeLogits(Path file, List<RequestResult> results, Map<String, float[]> lastPrompt,
                                    int vocab) {
        float[] all = new float[Math.multiplyExact(results.size(), vocab)];
        for (int i = 0; i < results.size(); i++) {
            float[] l = lastPrompt.get(results.get(i).id());
            if (l == null || l.length != vocab) {
                throw new IllegalStateException("no last-prompt logits recorded for prompt " + i);
            }
            System.arraycopy(l, 0, all, i * vocab, vocab);
        }
        long[] shape = results.size() == 1 ? new long[] {vocab} : new long[] {results.size(), vocab};
        try {
            Npy.writeF32(file, shape, all);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write --logits " + file + ": " + e.getMessage(), e);
        }
    }
}
