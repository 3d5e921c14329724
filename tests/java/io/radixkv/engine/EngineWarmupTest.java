package io.radixkv.engine;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.radixkv.cache.CacheListener;
import io.radixkv.cache.Namespace;
import io.radixkv.kernels.DType;
import io.radixkv.model.SamplingParams;
import io.radixkv.sched.ExternalKvTier;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * {@link Engine#warmUp}: it runs prefill and decode through the engine but bypasses the prefix
 * cache, so the cache, its listener (KV events) and an external tier see nothing, and the
 * requests served afterwards get the outputs of an engine that never warmed up.
 */
class EngineWarmupTest {

    private static final class Recorder implements CacheListener, ExternalKvTier {
        int cached;
        int evicted;
        int fetches;

        @Override
        public void pagesCached(Namespace ns, int parentPage, int[] pages, int[] kvKeys) {
            cached += pages.length;
        }

        @Override
        public void pagesEvicted(Namespace ns, int[] pages) {
            evicted += pages.length;
        }

        @Override
        public List<MemorySegment> fetch(Namespace ns, int[] tokens, int fromPage, int maxPages) {
            fetches++;
            return List.of();
        }
    }

    private static EngineConfig config() {
        return EngineTestSupport.tiny(16, DType.BF16, true, 64).build();
    }

    @Test
    void warmUpLeavesTheCacheAndItsListenersUntouched() {
        int[] prompt = EngineTestSupport.randomTokens(new SplittableRandom(3), 40);
        GenerateRequest req = new GenerateRequest("after", prompt, SamplingParams.greedy(6));
        int[] cold;
        try (Engine e = EngineTestSupport.start(config())) {
            cold = e.runToCompletion(List.of(req)).get(0).outputTokens();
        }

        Recorder rec = new Recorder();
        try (Engine e = Engine.start(config(), EngineTestSupport.backend(), EngineTestSupport.weights(), null,
                (cfg, model, pool) -> new KvExtension.Hooks(rec, rec))) {
            EngineWarmup.Result w = e.warmUp();
            assertEquals(2, w.requests());
            assertEquals(64, w.promptTokens(), "two prompts of 32 tokens");
            assertEquals(16, w.generatedTokens(), "8 greedy tokens each, no stop tokens");
            EngineStats s = e.snapshot();
            assertEquals(64, s.prefillTokens(), "the prompts were computed, none reused");
            assertEquals(0, s.cachedPages(), "nothing of the warm-up stays in the cache");
            assertEquals(0, rec.cached, "the listener (KV events) saw no page cached");
            assertEquals(0, rec.fetches, "the external tier was never asked");
            e.checkInvariants(true);

            RequestResult r = e.runToCompletion(List.of(req)).get(0);
            assertArrayEquals(cold, r.outputTokens(), "outputs after the warm-up equal a cold engine's");
            assertEquals(0, r.stats().cachedPromptTokens());
            assertTrue(rec.cached >= 2, "a client request still caches its pages: " + rec.cached);
            assertTrue(rec.fetches >= 1, "and looks them up in the tier");
            e.checkInvariants(true);
        }
    }

    @Test
    void warmUpShrinksToTheSequenceLimitAndThePool() {
        try (Engine e = EngineTestSupport.start(EngineTestSupport.tiny(16, DType.BF16, true, 64)
                .maxSeqLen(10).build())) {
            EngineWarmup.Result w = e.warmUp();
            assertEquals(18, w.promptTokens(), "prompts of 9 tokens: 9 + 2 new - 1 = 10 positions");
            assertEquals(4, w.generatedTokens());
        }
        // 2 pages of 4 tokens: each request gets 8 positions, the two run one after the other
        try (Engine e = EngineTestSupport.start(EngineTestSupport.tiny(4, DType.BF16, true, 2)
                .build())) {
            EngineWarmup.Result w = e.warmUp();
            assertEquals(16, w.promptTokens(), "prompts of 8 tokens: 8 + 1 new - 1 = 8 positions");
            assertEquals(2, w.generatedTokens());
            e.checkInvariants(true);
        }
    }

    @Test
    void aFailingForwardPassFailsTheWarmUpNamingWhy() {
        try (Engine e = EngineTestSupport.start(config(), forward -> (batch, kv, out) -> {
            throw new IllegalStateException("injected kernel failure");
        })) {
            IllegalStateException ex = assertThrows(IllegalStateException.class, e::warmUp);
            assertTrue(ex.getMessage().contains("radixkv-warmup-") && ex.getMessage().contains("ERROR")
                    && ex.getMessage().contains("injected kernel failure"), ex.getMessage());
        }
    }
}
