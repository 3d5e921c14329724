package io.radixkv.engine;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.radixkv.cache.CacheListener;
import io.radixkv.cache.Namespace;
import io.radixkv.model.SamplingParams;
import io.radixkv.paging.KvPool;
import io.radixkv.sched.ExternalKvTier;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The KvExtension seam with an in-memory external tier: engine A's listener copies every page it
 * caches out of its pool; engine B's tier hands those page images back on a local miss, and B
 * serves the prompt from them, prefilling only the suffix, with A's greedy output.
 */
class KvExtensionTest {
    private static final int PAGE = 16;

    /** Page images by the tokens up to and including the page (a test stand-in for chained hashes). */
    private static final Map<String, byte[]> STORE = new HashMap<>();

    private static String key(int[] tokens, int pages) {
        return Arrays.toString(Arrays.copyOf(tokens, pages * PAGE));
    }

    private static final class Capture implements CacheListener {
        private final KvPool pool;
        private final Map<Integer, int[]> pathOf = new HashMap<>(); // page -> tokens through it
        int evicted;

        Capture(KvPool pool) {
            this.pool = pool;
        }

        @Override
        public void pagesCached(Namespace ns, int parentPage, int[] pages, int[] kvKeys) {
            int[] path = parentPage < 0 ? new int[0] : pathOf.get(parentPage);
            for (int i = 0; i < pages.length; i++) {
                int[] next = Arrays.copyOf(path, path.length + PAGE);
                System.arraycopy(kvKeys, i * PAGE, next, path.length, PAGE);
                path = next;
                pathOf.put(pages[i], path);
                byte[] image = new byte[(int) pool.pageImageBytes()];
                pool.readPage(pages[i], MemorySegment.ofArray(image));
                STORE.put(Arrays.toString(path), image);
            }
        }

        @Override
        public void pagesEvicted(Namespace ns, int[] pages) {
            evicted += pages.length;
            for (int p : pages) {
                pathOf.remove(p);
            }
        }
    }

    private static final class MapTier implements ExternalKvTier {
        int asked;

        @Override
        public List<MemorySegment> fetch(Namespace ns, int[] tokens, int fromPage, int maxPages) {
            asked++;
            List<MemorySegment> out = new ArrayList<>();
            for (int i = fromPage; i < fromPage + maxPages; i++) {
                byte[] image = STORE.get(key(tokens, i + 1));
                if (image == null) {
                    break;
                }
                out.add(MemorySegment.ofArray(image.clone()));
            }
            return out;
        }
    }

    @Test
    void pagesCachedOnAAreServedOnBThroughTheTier() {
        STORE.clear();
        int[] prompt = new int[100]; // 6 full pages + 4 tokens
        Arrays.setAll(prompt, i -> 1 + (i * 37) % 250);
        EngineConfig config = EngineConfig.builder().model("tiny").backend("cpu").pageSize(PAGE).numPages(64).build();
        GenerateRequest req = new GenerateRequest("p", prompt, SamplingParams.greedy(8));
        Capture[] capture = new Capture[1];
        RequestResult a;
        try (Engine engineA = Engine.start(config, (cfg, model, pool) -> {
            capture[0] = new Capture(pool);
            return new KvExtension.Hooks(capture[0], null);
        })) {
            a = engineA.runToCompletion(List.of(req)).get(0);
        }
        assertTrue(STORE.containsKey(key(prompt, 6)), "all six full prompt pages were reported cached");

        MapTier tier = new MapTier();
        try (Engine engineB = Engine.start(config, (cfg, model, pool) -> new KvExtension.Hooks(null, tier))) {
            RequestResult b = engineB.runToCompletion(List.of(req)).get(0);
            assertEquals(96, b.stats().cachedPromptTokens(), "six pages came from the tier");
            assertEquals(4, b.stats().computedPromptTokens(), "only the suffix was prefilled");
            assertArrayEquals(a.outputTokens(), b.outputTokens());
            engineB.checkInvariants(true); // fetched pages are cache-owned, nothing leaked
        }

        STORE.clear(); // an empty tier changes nothing
        try (Engine engineC = Engine.start(config, (cfg, model, pool) -> new KvExtension.Hooks(null, tier))) {
            RequestResult c = engineC.runToCompletion(List.of(req)).get(0);
            assertEquals(0, c.stats().cachedPromptTokens());
            assertArrayEquals(a.outputTokens(), c.outputTokens());
            engineC.checkInvariants(true);
        }
    }
}
