package io.radixkv.bench;

import io.radixkv.cache.Namespace;
import io.radixkv.engine.Engine;
import io.radixkv.engine.EngineConfig;
import io.radixkv.engine.EngineStats;
import io.radixkv.engine.GenerateRequest;
import io.radixkv.engine.RequestHandle;
import io.radixkv.engine.RequestResult;
import io.radixkv.kernels.cpu.CpuTokenBitmask;
import io.radixkv.model.ModelPresets;
import io.radixkv.model.SamplingParams;
import io.radixkv.structured.Constraint;
import io.radixkv.structured.Grammar;
import io.radixkv.structured.GrammarCompiler;
import io.radixkv.structured.GrammarMatcher;
import io.radixkv.structured.TokenVocabulary;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * Decode throughput of a constrained batch against an unconstrained one through the whole engine,
 * on a random-weight model of the {@code small} preset's shape whose vocabulary is a real
 * tokenizer's (Llama 3.1's 128256 ids or Qwen3's 151936, read from the tokenizer.json under
 * {@code -Dradixkv.bench.testData}, default {@code build/test-data}): logits and masks as wide as
 * a served model's.
 *
 * <p>One engine runs rounds of {@code requests} requests ({@code promptTokens} random prompt
 * tokens, exactly {@code maxTokens} output tokens: no stop ids, so a request whose grammar has
 * ended goes on sampling end tokens, masked like the others), alternating an unconstrained round
 * with a constrained one ({@code json_object}, the 10-property schema and the regex of
 * {@link StructuredMaskBench}), {@code repeats} times. The decode rate of a round is
 * {@code requests · (maxTokens − 1)} tokens over the time from the last first token to the last
 * end; each constrained round is set against the mean of the unconstrained rounds beside it. On a
 * shared machine the forward pass's time drifts with other load between rounds, so each round also
 * reports the forward pass's and the rest's time per step (engine counters), and a second ratio
 * sets the constrained round's step (forward + rest) against the same forward plus the
 * unconstrained rounds' rest: what the grammar adds to a step, free of the forward pass's drift.
 *
 * <p>Then, outside the engine: the grammar's compile time cold (a compiler without a cache,
 * median of 20) and cached; and the per-step mask cost per row on the outputs the constrained
 * rounds produced, replayed: {@code allowedTokens} + {@code accept} (masks cached, as in the
 * engine's steady state) and {@code rkv_apply_token_bitmask} over {@code requests} rows (masks
 * copied to native memory included).
 *
 * <p>A main, not a JMH benchmark (rounds are seconds long and compare with each other):
 * {@code java --enable-native-access=ALL-UNNAMED --add-modules=jdk.incubator.vector
 * -Dradixkv.native.dir=build/native/lib -cp bench/target/benchmarks.jar io.radixkv.bench.StructuredDecodeBench
 * [tokenizer requests promptTokens maxTokens temperature repeats]} (defaults
 * {@code llama3_1 32 32 48 0.8 2}; temperature 0 is greedy).
 */
public final class StructuredDecodeBench {
    private static final List<String> CONSTRAINTS = List.of("json_object", "schema", "regex");

    private StructuredDecodeBench() {}

    public static void main(String[] args) throws Exception {
        String tokenizer = args.length > 0 ? args[0] : "llama3_1";
        int requests = args.length > 1 ? Integer.parseInt(args[1]) : 32;
        int promptTokens = args.length > 2 ? Integer.parseInt(args[2]) : 32;
        int maxTokens = args.length > 3 ? Integer.parseInt(args[3]) : 48;
        float temperature = args.length > 4 ? Float.parseFloat(args[4]) : 0.8f;
        int repeats = args.length > 5 ? Integer.parseInt(args[5]) : 2;
        MachineLine.print();
        StructuredMaskBench.Model model = StructuredMaskBench.Model.of(tokenizer);
        TokenVocabulary vocab = model.load();
        GrammarCompiler compiler = new GrammarCompiler(vocab, 16);
        Path dir = Files.createTempDirectory("radixkv-structured-bench");
        int pageSize = 16;
        try {
            RandomCheckpointFiles.write(dir, ModelPresets.small(), model.size(), 11);
            try (Engine engine = Engine.start(EngineConfig.builder().model(dir.toString()).backend("cpu")
                    .pageSize(pageSize).numPages(requests * ((promptTokens + maxTokens) / pageSize + 2) + 64)
                    .prefixCache(false).maxRunning(requests).maxBatchTokens(requests * promptTokens + requests)
                    .build())) {
                Bench b = new Bench(engine, requests, promptTokens, maxTokens, temperature);
                System.out.printf("# %s (vocab %d), small shape, %d requests × %d prompt + %d output tokens, T %s%n",
                        tokenizer, model.size(), requests, promptTokens, maxTokens, temperature);
                // the JIT compiles both paths (and every grammar's masks get cached) before measuring
                b.round("warm-up", null);
                for (String c : CONSTRAINTS) {
                    b.round("warm-up " + c, compiler.compile(StructuredMaskBench.constraint(c)));
                }
                double[][] ratios = new double[CONSTRAINTS.size()][repeats];
                double[][] stepRatios = new double[CONSTRAINTS.size()][repeats];
                Round before = b.round("none", null);
                for (int rep = 0; rep < repeats; rep++) {
                    for (int i = 0; i < CONSTRAINTS.size(); i++) {
                        Round r = b.round(CONSTRAINTS.get(i), compiler.compile(StructuredMaskBench.constraint(CONSTRAINTS.get(i))));
                        Round after = b.round("none", null);
                        ratios[i][rep] = r.rate() / ((before.rate() + after.rate()) / 2);
                        // the forward pass is the same work with or without a grammar: set the
                        // constrained round's step against its own forward plus the unconstrained rest
                        double restNone = (before.rest() + after.rest()) / 2;
                        stepRatios[i][rep] = (r.forward() + restNone) / (r.forward() + r.rest());
                        before = after;
                        b.outputs.put(CONSTRAINTS.get(i), r.outputs());
                    }
                }
                for (int i = 0; i < CONSTRAINTS.size(); i++) {
                    System.out.printf("%-11s constrained/unconstrained: decode tok/s %s; step time without the forward "
                            + "pass's drift %s%n", CONSTRAINTS.get(i), format(ratios[i]), format(stepRatios[i]));
                }
                for (String c : CONSTRAINTS) {
                    maskCost(vocab, compiler, c, b.outputs.get(c));
                }
            }
        } finally {
            try (Stream<Path> files = Files.walk(dir)) {
                for (Path p : files.sorted(Comparator.reverseOrder()).toList()) {
                    Files.delete(p);
                }
            }
        }
    }

    /**
     * A round's decode rate (tok/s), the forward pass's and the rest's share of a step (ms), and
     * each request's output.
     */
    record Round(double rate, double forward, double rest, List<int[]> outputs) {}

    private static final class Bench {
        final Engine engine;
        final int requests;
        final int promptTokens;
        final int maxTokens;
        final float temperature;
        final SplittableRandom rnd = new SplittableRandom(42);
        final java.util.Map<String, List<int[]>> outputs = new java.util.HashMap<>();
        int seq;

        Bench(Engine engine, int requests, int promptTokens, int maxTokens, float temperature) {
            this.engine = engine;
            this.requests = requests;
            this.promptTokens = promptTokens;
            this.maxTokens = maxTokens;
            this.temperature = temperature;
        }

        Round round(String label, Grammar grammar) throws Exception {
            List<RequestHandle> handles = new ArrayList<>();
            EngineStats s0 = engine.snapshot();
            Grammar.Stats g0 = grammar == null ? null : grammar.stats();
            for (int i = 0; i < requests; i++) {
                int[] prompt = new int[promptTokens];
                for (int j = 0; j < promptTokens; j++) {
                    prompt[j] = 1 + rnd.nextInt(99_999);
                }
                SamplingParams p = new SamplingParams(maxTokens, temperature, 1f, seq, List.of());
                handles.add(engine.submit(new GenerateRequest("r" + seq++, prompt, Namespace.DEFAULT, p, grammar)));
            }
            long lastFirst = 0;
            long lastEnd = 0;
            List<int[]> outs = new ArrayList<>();
            for (RequestHandle h : handles) {
                RequestResult r = h.result().get(10, TimeUnit.MINUTES);
                if (!r.ok() || r.outputTokens().length != maxTokens) {
                    throw new IllegalStateException(label + ": request did not produce " + maxTokens + " tokens: " + r);
                }
                lastFirst = Math.max(lastFirst, r.stats().ttftNanos());
                lastEnd = Math.max(lastEnd, r.stats().e2eNanos());
                outs.add(r.outputTokens());
            }
            double rate = (double) requests * (maxTokens - 1) / ((lastEnd - lastFirst) / 1e9);
            EngineStats s1 = engine.snapshot();
            long steps = s1.steps() - s0.steps();
            double forward = (s1.forwardNanos() - s0.forwardNanos()) / 1e6 / steps;
            double rest = (s1.stepNanos() - s0.stepNanos()) / 1e6 / steps - forward;
            String inGrammar = "";
            if (grammar != null) {
                int open = 0;
                for (int[] o : outs) {
                    open += tokensBeforeEnd(grammar, o);
                }
                Grammar.Stats g1 = grammar.stats();
                inGrammar = String.format("; %.1f tokens a request before the grammar's end; %d new masks, %.1f ms a step",
                        (double) open / requests, g1.masksComputed() - g0.masksComputed(),
                        (g1.maskNanos() - g0.maskNanos()) / 1e6 / steps);
            }
            System.out.printf("%-20s decode %7.1f tok/s (%.2f s); a step: forward %.1f ms, the rest (masks, sampling, "
                    + "streaming) %.2f ms%s  [%s]%n", label, rate, (lastEnd - lastFirst) / 1e9, forward, rest, inGrammar,
                    MachineLine.load());
            return new Round(rate, forward, rest, outs);
        }
    }

    /** How many of {@code out}'s tokens came before the matcher ended. */
    private static int tokensBeforeEnd(Grammar g, int[] out) {
        GrammarMatcher m = g.newMatcher();
        int n = 0;
        for (int t : out) {
            if (m.isTerminated() || !m.accept(t)) {
                break;
            }
            n++;
        }
        return n;
    }

    /** Compile times and the per-step mask cost per row, replayed over the constrained rounds' outputs. */
    private static void maskCost(TokenVocabulary vocab, GrammarCompiler cached, String name, List<int[]> outs) {
        Constraint c = StructuredMaskBench.constraint(name);
        GrammarCompiler missing = new GrammarCompiler(vocab, 0);
        double[] cold = new double[20];
        double[] hit = new double[20];
        for (int i = 0; i < cold.length; i++) {
            long t0 = System.nanoTime();
            missing.compile(c);
            long t1 = System.nanoTime();
            cached.compile(c);
            long t2 = System.nanoTime();
            cold[i] = (t1 - t0) / 1e3;
            hit[i] = (t2 - t1) / 1e3;
        }
        Grammar g = cached.compile(c);
        int steps = outs.getFirst().length;
        int rows = outs.size();
        GrammarMatcher[] matchers = new GrammarMatcher[rows];
        double[] stepNanos = new double[3];
        double[] applyNanos = new double[3];
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment logits = arena.allocate((long) rows * vocab.size() * 4, 64);
            int[] rowIndices = new int[rows];
            Arrays.setAll(rowIndices, r -> r);
            for (int rep = 0; rep < stepNanos.length; rep++) {
                Arrays.setAll(matchers, r -> g.newMatcher());
                long advance = 0;
                long apply = 0;
                for (int s = 0; s < steps; s++) {
                    int[][] masks = new int[rows][];
                    long t0 = System.nanoTime();
                    for (int r = 0; r < rows; r++) {
                        masks[r] = matchers[r].allowedTokens();
                        matchers[r].accept(outs.get(r)[s]);
                    }
                    long t1 = System.nanoTime();
                    CpuTokenBitmask.instance().applyTokenBitmask(logits, rows, vocab.size(), masks, rowIndices);
                    long t2 = System.nanoTime();
                    advance += t1 - t0;
                    apply += t2 - t1;
                }
                stepNanos[rep] = advance / 1e3 / steps / rows;
                applyNanos[rep] = apply / 1e3 / steps / rows;
            }
        }
        System.out.printf("%-11s compile cold %.0f µs, cached %.2f µs (medians of 20); per step and row: "
                        + "mask + accept %.2f µs, apply %.1f µs (best of 3; %d rows × %d steps)%n", name, median(cold),
                median(hit), Arrays.stream(stepNanos).min().orElseThrow(), Arrays.stream(applyNanos).min().orElseThrow(),
                rows, steps);
    }

    private static String format(double[] xs) {
        return Arrays.toString(Arrays.stream(xs).mapToObj(x -> String.format("%.3f", x)).toArray());
    }

    private static double median(double[] xs) {
        double[] s = xs.clone();
        Arrays.sort(s);
        return s[s.length / 2];
    }
}
