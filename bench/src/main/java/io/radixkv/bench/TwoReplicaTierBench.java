package io.radixkv.bench;

import io.radixkv.engine.Engine;
import io.radixkv.engine.EngineConfig;
import io.radixkv.engine.GenerateRequest;
import io.radixkv.engine.RequestResult;
import io.radixkv.kvtier.KvTierExtension;
import io.radixkv.kvtier.KvTierStats;
import io.radixkv.model.SamplingParams;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;

/**
 * Two replicas with and without a shared Redis KV tier: the prefix_caching workload's shape (a
 * shared 1024-token system prompt, 32-128 unique tokens, 32 output tokens, 48 requests) split
 * round-robin across two engines, one request at a time; with the tier, pages are written when
 * first cached, so replica B fetches the prefix replica A computed. Prints wall time, TTFT
 * percentiles and the tier's traffic for both runs. That B reuses A's pages through the tier is
 * tested in RedisKvTierTest; this measures what it saves.
 *
 * <p>Needs a running redis-server: {@code java -cp radixkv-bench.jar io.radixkv.bench.TwoReplicaTierBench
 * [redis://127.0.0.1:6379]}; the model is {@code -Dradixkv.bench.model} (default tiny).
 */
public final class TwoReplicaTierBench {
    private TwoReplicaTierBench() {}

    public static void main(String[] args) throws Exception {
        String redis = args.length > 0 ? args[0] : "redis://127.0.0.1:6379";
        String model = System.getProperty("radixkv.bench.model", "tiny");
        Random r = new Random(1);
        int[] system = new int[1024];
        Arrays.setAll(system, i -> 1 + r.nextInt(250));
        List<int[]> prompts = new ArrayList<>();
        for (int i = 0; i < 48; i++) {
            int[] p = Arrays.copyOf(system, 1024 + 32 + r.nextInt(97));
            for (int j = 1024; j < p.length; j++) {
                p[j] = 1 + r.nextInt(250);
            }
            prompts.add(p);
        }
        EngineConfig cfg = EngineConfig.builder().model(model).backend("cpu").kvDtype("bf16").pageSize(16)
                .numPages(2048).build();
        MachineLine.print();
        for (boolean shared : new boolean[] {false, true}) {
            try (KvTierExtension kvA = ext(shared, redis);
                 KvTierExtension kvB = ext(shared, redis);
                 Engine a = Engine.start(cfg, kvA);
                 Engine b = Engine.start(cfg, kvB)) {
                long[] ttft = new long[prompts.size()];
                long prefill = 0;
                long t0 = System.nanoTime();
                for (int i = 0; i < prompts.size(); i++) {
                    Engine e = i % 2 == 0 ? a : b;
                    RequestResult res = e.runToCompletion(List.of(new GenerateRequest("r" + i, prompts.get(i),
                            SamplingParams.greedy(32)))).get(0);
                    ttft[i] = res.stats().ttftNanos();
                    prefill += res.stats().computedPromptTokens();
                    if (i == 0 && shared) {
                        kvA.flushTier(10_000);
                    }
                }
                double wall = (System.nanoTime() - t0) / 1e9;
                long firstB = ttft[1];
                Arrays.sort(ttft);
                KvTierStats sb = kvB.tierStats();
                System.out.printf("%s: wall %.2f s, TTFT p50 %.1f ms p90 %.1f ms, B's first TTFT %.1f ms, prefill tokens %d,"
                                + " fetched %d pages / %.2f MB in %.2f ms (%.2f GB/s), written %d pages%n",
                        shared ? "shared tier" : "no tier", wall, ttft[24] / 1e6, ttft[43] / 1e6, firstB / 1e6, prefill,
                        sb.pagesFetched(), sb.bytesFetched() / 1e6, sb.fetchNanos() / 1e6,
                        sb.fetchNanos() == 0 ? 0 : sb.bytesFetched() / (double) sb.fetchNanos(),
                        kvA.tierStats().pagesWritten() + sb.pagesWritten());
            }
        }
    }

    private static KvTierExtension ext(boolean shared, String redis) {
        KvTierExtension.Builder b = KvTierExtension.builder();
        if (shared) {
            b.kvTier(redis).writeOnCache(true);
        }
        return b.build();
    }
}
