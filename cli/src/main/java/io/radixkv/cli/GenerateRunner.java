package io.radixkv.cli;

import io.radixkv.engine.Engine;
import io.radixkv.engine.EngineConfig;
import io.radixkv.engine.GenerateRequest;
import io.radixkv.engine.RequestResult;
import io.radixkv.engine.RequestStats;
import io.radixkv.model.SamplingParams;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
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
                .weightsDtype(s.weightsDtype()).build();
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
    }
}
