package io.radixkv.kvtier;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.radixkv.cache.Namespace;
import io.radixkv.engine.Engine;
import io.radixkv.engine.EngineConfig;
import io.radixkv.engine.GenerateRequest;
import io.radixkv.engine.RequestResult;
import io.radixkv.model.SamplingParams;
import io.radixkv.sched.FinishReason;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** Two engines sharing one real redis-server (started here on a free loopback port). */
class RedisKvTierTest {
    @TempDir
    Path tmp;

    private static int[] randomPrompt(Random r, int len) {
        int[] p = new int[len];
        for (int i = 0; i < len; i++) {
            p[i] = 1 + r.nextInt(250);
        }
        return p;
    }

    private static RequestResult run(Engine e, String id, int[] prompt) {
        return run(e, id, prompt, Namespace.DEFAULT);
    }

    private static RequestResult run(Engine e, String id, int[] prompt, Namespace ns) {
        RequestResult res = e.runToCompletion(List.of(new GenerateRequest(id, prompt, ns, SamplingParams.greedy(8))))
                .get(0);
        assertEquals(FinishReason.LENGTH, res.reason(), id + ": " + res);
        return res;
    }

    @ParameterizedTest
    @CsvSource({"bf16, 1", "f32, 1", "fp8_e4m3, 0.25"})
    void prefixEvictedOnAIsServedOnBFromRedisAndADeadRedisMeansPrefill(String dtype, float scale) throws Exception {
        Random r = new Random(11);
        int[] p = randomPrompt(r, 100); // 6 full pages of 16 + 4 tokens
        int[] q = randomPrompt(r, 150);
        int[] filler = randomPrompt(r, 200);
        int[] filler2 = randomPrompt(r, 200);
        try (TestSupport.Redis redis = new TestSupport.Redis()) {
            EngineConfig small = EngineConfig.builder().model("tiny").backend("cpu").kvDtype(dtype).kvScale(scale)
                    .pageSize(16).numPages(24).maxRunning(2).build();
            RequestResult aP;
            RequestResult aQ;
            try (KvTierExtension kvA = KvTierExtension.builder().kvTier(redis.uri()).build();
                 Engine a = Engine.start(small, kvA)) {
                aP = run(a, "p", p);
                aQ = run(a, "q", q);
                run(a, "filler", filler); // the two fillers evict p's and q's pages: they go to Redis
                run(a, "filler2", filler2);
                assertTrue(kvA.flushTier(10_000));
                KvTierStats s = kvA.tierStats();
                assertTrue(s.pagesWritten() >= 6 + 9, "evicted pages were written: " + s);
                assertEquals(0, s.errors());
            }
            EngineConfig fresh = small.toBuilder().numPages(64).build();
            try (KvTierExtension kvB = KvTierExtension.builder().kvTier(redis.uri()).tierTimeoutMillis(300).build();
                 Engine b = Engine.start(fresh, kvB)) {
                RequestResult bP = run(b, "p", p);
                assertEquals(96, bP.stats().cachedPromptTokens(), "6 pages fetched from Redis");
                assertEquals(4, bP.stats().computedPromptTokens(), "only the suffix is prefilled");
                assertArrayEquals(aP.outputTokens(), bP.outputTokens(), "same greedy output as engine A");
                assertEquals(6, kvB.tierStats().pagesFetched());

                redis.kill(); // mid-run: q's pages are in the (now dead) store
                RequestResult bQ = run(b, "q", q);
                assertEquals(0, bQ.stats().cachedPromptTokens(), "nothing fetched: prefilled instead");
                assertArrayEquals(aQ.outputTokens(), bQ.outputTokens());
                assertTrue(kvB.tierStats().errors() >= 1);
                // eviction writes to a dead store are dropped, never fail the engine
                run(b, "filler", filler);
                RequestResult again = run(b, "p2", p);
                assertArrayEquals(aP.outputTokens(), again.outputTokens());
            }
        }
    }

    @ParameterizedTest
    @CsvSource({"foreign", "corrupt"})
    void aForeignOrCorruptEntryIsAMissNotWrongOutput(String kind) throws Exception {
        Random r = new Random(5);
        int[] p = randomPrompt(r, 100);
        try (TestSupport.Redis redis = new TestSupport.Redis()) {
            EngineConfig cfg = EngineConfig.builder().model("tiny").backend("cpu").pageSize(16).numPages(64).build();
            RequestResult aP;
            try (KvTierExtension kvA = KvTierExtension.builder().kvTier(redis.uri()).writeOnCache(true).build();
                 Engine a = Engine.start(cfg, kvA)) {
                aP = run(a, "p", p);
                assertTrue(kvA.flushTier(10_000));
                assertEquals(6, kvA.tierStats().pagesWritten());
            }
            EngineConfig other = cfg;
            if (kind.equals("foreign")) {
                other = cfg.toBuilder().weightsSeed(99).build(); // another model: its KV differs
            } else {
                try (var j = redis.client()) { // flip one payload byte of the third page
                    byte[] key = ("radixkv:page:" + java.util.HexFormat.of().formatHex(
                            new BlockHasher("sha256_cbor", "0").chain(io.radixkv.cache.Namespace.DEFAULT, p, 16, 3)[2]))
                            .getBytes(java.nio.charset.StandardCharsets.US_ASCII);
                    byte[] v = j.get(key);
                    v[v.length - 1] ^= 1;
                    j.set(key, v);
                }
            }
            try (KvTierExtension kvB = KvTierExtension.builder().kvTier(redis.uri()).build();
                 Engine b = Engine.start(other, kvB)) {
                RequestResult bP = run(b, "p", p);
                assertEquals(1, kvB.tierStats().rejected());
                if (kind.equals("foreign")) {
                    assertEquals(0, bP.stats().cachedPromptTokens());
                } else {
                    assertEquals(32, bP.stats().cachedPromptTokens(), "the two good pages before the bad one");
                    assertArrayEquals(aP.outputTokens(), bP.outputTokens());
                }
            }
        }
    }

    /**
     * An adapter unloaded and loaded again under the same name with other weights fetches none of
     * the old weights' pages from the tier; the old files loaded again (from another directory)
     * fetch them all and give the same output.
     */
    @Test
    void anAdapterReloadedWithOtherWeightsNeverFetchesTheOldWeightsPages() throws Exception {
        Random r = new Random(9);
        int[] p = randomPrompt(r, 100); // 6 full pages of 16 + 4 tokens
        Path first = KvEventsTest.adapter(tmp.resolve("first"), 1);
        Path other = KvEventsTest.adapter(tmp.resolve("other"), 2);
        Path copy = Files.createDirectories(tmp.resolve("copy"));
        for (String f : List.of("adapter_config.json", "adapter_model.safetensors")) {
            Files.copy(first.resolve(f), copy.resolve(f));
        }
        Namespace sql = Namespace.ofLora("sql");
        try (TestSupport.Redis redis = new TestSupport.Redis()) {
            EngineConfig cfg = EngineConfig.builder().model("tiny").backend("cpu").pageSize(16).numPages(64)
                    .maxLoras(1).build();
            try (KvTierExtension kv = KvTierExtension.builder().kvTier(redis.uri()).writeOnCache(true).build();
                 Engine e = Engine.start(cfg, kv)) {
                e.loadAdapter("sql", first);
                RequestResult old = run(e, "old", p, sql);
                assertTrue(kv.flushTier(10_000));
                assertEquals(6, kv.tierStats().pagesWritten());

                e.unloadAdapter("sql").join(); // drops the local pages: only the tier still has them
                e.loadAdapter("sql", other);
                RequestResult reloaded = run(e, "reloaded", p, sql);
                assertEquals(0, reloaded.stats().cachedPromptTokens(), "the other weights met the old pages");
                assertEquals(0, kv.tierStats().pagesFetched());
                assertFalse(java.util.Arrays.equals(old.outputTokens(), reloaded.outputTokens()),
                        "the two adapters give the same output: the test shows nothing");

                e.unloadAdapter("sql").join();
                e.loadAdapter("sql", copy);
                RequestResult same = run(e, "same-files", p, sql);
                assertEquals(96, same.stats().cachedPromptTokens(), "the same files fetch their 6 pages");
                assertEquals(6, kv.tierStats().pagesFetched());
                assertArrayEquals(old.outputTokens(), same.outputTokens());
            }
        }
    }
}
