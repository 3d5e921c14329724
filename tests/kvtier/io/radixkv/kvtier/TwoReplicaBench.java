package io.radixkv.kvtier;

import io.radixkv.engine.Engine;
import io.radixkv.engine.EngineConfig;
import io.radixkv.engine.GenerateRequest;
import io.radixkv.engine.RequestResult;
import io.radixkv.model.SamplingParams;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * Rough measurement, not a test (surefire skips it by name; run with {@code -Dtest=TwoReplicaBench}):
 * the prefix_caching workload's shape (a shared 1024-token system prompt, 32-128 unique tokens, 32
 * output tokens, 48 requests) split round-robin across two engines, one request at a time, without
 * and with the shared Redis tier (pages written when first cached).
 */
class TwoReplicaBench {

    @Test
    void roundRobinWithAndWithoutTheSharedTier() throws Exception {
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
        for (boolean shared : new boolean[] {false, true}) {
            try (TestSupport.Redis redis = new TestSupport.Redis();
                 KvTierExtension kvA = ext(shared, redis);
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

    private static KvTierExtension ext(boolean shared, TestSupport.Redis redis) {
        KvTierExtension.Builder b = KvTierExtension.builder();
        if (shared) {
            b.kvTier(redis.uri()).writeOnCache(true);
        }
        return b.build();
    }
}
