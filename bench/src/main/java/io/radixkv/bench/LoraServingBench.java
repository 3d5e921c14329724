package io.radixkv.bench;

import io.radixkv.cache.Namespace;
import io.radixkv.engine.Engine;
import io.radixkv.engine.EngineConfig;
import io.radixkv.engine.GenerateRequest;
import io.radixkv.engine.RequestHandle;
import io.radixkv.engine.RequestResult;
import io.radixkv.model.ModelConfig;
import io.radixkv.model.ModelPresets;
import io.radixkv.model.SamplingParams;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * Multi-LoRA serving overhead through the whole engine: one batch of {@code requests} requests
 * ({@code promptTokens} random prompt tokens, {@code maxTokens} greedy output tokens, no stop ids),
 * spread round-robin over 0 (the base model alone), 1, 4 and 8 rank-{@code rank} adapters on all
 * seven projections, in one engine ({@code maxLoras} 8). The base-model round runs first and again
 * last, so the pair bounds the drift of the machine over the run; two unmeasured rounds (8 adapters,
 * then the base model) come before them, so the JIT has compiled both paths. Each round submits the whole batch
 * at once; the batch's prompts fit one prefill step, so every request's first token comes from the
 * same step and the decode rate is {@code requests · (maxTokens − 1)} tokens over the time from that
 * step's first token to the last request's end. Also printed: output tokens over the round's wall time
 * (prefill included), and the time {@link Engine#loadAdapter} takes for each adapter (files just
 * written, so in the page cache).
 *
 * <p>A main, not a JMH benchmark (a round is seconds long and the rounds compare with each other):
 * {@code java --enable-native-access=ALL-UNNAMED --add-modules=jdk.incubator.vector
 * -Dradixkv.native.dir=build/native/lib -cp bench/target/benchmarks.jar io.radixkv.bench.LoraServingBench
 * [model requests promptTokens maxTokens rank]} (defaults {@code small 32 64 64 16}).
 */
public final class LoraServingBench {
    private LoraServingBench() {}

    public static void main(String[] args) throws Exception {
        String model = args.length > 0 ? args[0] : "small";
        int requests = args.length > 1 ? Integer.parseInt(args[1]) : 32;
        int promptTokens = args.length > 2 ? Integer.parseInt(args[2]) : 64;
        int maxTokens = args.length > 3 ? Integer.parseInt(args[3]) : 64;
        int rank = args.length > 4 ? Integer.parseInt(args[4]) : 16;
        int adapters = 8;
        MachineLine.print();
        ModelConfig shape = ModelPresets.byName(model);
        Path dir = Files.createTempDirectory("radixkv-lora-bench");
        int pageSize = 16;
        try (Engine engine = Engine.start(EngineConfig.builder().model(model).backend("cpu").pageSize(pageSize)
                .numPages(requests * ((promptTokens + maxTokens) / pageSize + 2) + 64).prefixCache(false)
                .maxRunning(requests).maxBatchTokens(requests * promptTokens + requests)
                .maxLoras(adapters).maxLoraRank(rank).build())) {
            for (int a = 0; a < adapters; a++) {
                Path d = PeftAdapterFiles.write(dir.resolve("a" + a), shape, rank, 100 + a);
                long t0 = System.nanoTime();
                engine.loadAdapter("a" + a, d);
                System.out.printf("load a%d: %.1f ms (%.1f MiB)%n", a, (System.nanoTime() - t0) / 1e6,
                        Files.size(d.resolve("adapter_model.safetensors")) / 1048576.0);
            }
            SplittableRandom rnd = new SplittableRandom(42);
            // the adapter path's code is compiled on its first use: warm both paths before measuring
            round(engine, "warm-up 8", adapters, requests, promptTokens, maxTokens, rnd);
            round(engine, "warm-up", 0, requests, promptTokens, maxTokens, rnd);
            for (int n : new int[] {0, 1, 4, 8, 0}) {
                round(engine, n == 0 ? "base" : n + " adapter" + (n == 1 ? "" : "s"), n, requests, promptTokens,
                        maxTokens, rnd);
            }
        } finally {
            try (Stream<Path> files = Files.walk(dir)) {
                for (Path p : files.sorted(Comparator.reverseOrder()).toList()) {
                    Files.delete(p);
                }
            }
        }
    }

    private static void round(Engine engine, String label, int adapters, int requests, int promptTokens, int maxTokens,
                              SplittableRandom rnd) throws Exception {
        List<RequestHandle> handles = new ArrayList<>();
        long start = System.nanoTime();
        for (int i = 0; i < requests; i++) {
            int[] prompt = new int[promptTokens];
            for (int j = 0; j < promptTokens; j++) {
                prompt[j] = 1 + rnd.nextInt(31_999);
            }
            Namespace ns = adapters == 0 ? Namespace.DEFAULT : Namespace.ofLora("a" + i % adapters);
            handles.add(engine.submit(new GenerateRequest(label + "-" + i, prompt, ns, SamplingParams.greedy(maxTokens))));
        }
        long lastFirst = 0;
        long lastEnd = 0;
        long tokens = 0;
        for (RequestHandle h : handles) {
            RequestResult r = h.result().get(10, TimeUnit.MINUTES);
            if (!r.ok() || r.outputTokens().length != maxTokens) {
                throw new IllegalStateException("request did not produce " + maxTokens + " tokens: " + r);
            }
            lastFirst = Math.max(lastFirst, r.stats().ttftNanos());
            lastEnd = Math.max(lastEnd, r.stats().e2eNanos());
            tokens += r.outputTokens().length;
        }
        long wall = System.nanoTime() - start;
        double decode = (double) requests * (maxTokens - 1) / ((lastEnd - lastFirst) / 1e9);
        System.out.printf("%-11s decode %7.1f tok/s  (%d × %d tokens in %.2f s after the first token at %.2f s);"
                + " output/wall %6.1f tok/s%n", label, decode, requests, maxTokens - 1, (lastEnd - lastFirst) / 1e9,
                lastFirst / 1e9, tokens / (wall / 1e9));
    }
}
