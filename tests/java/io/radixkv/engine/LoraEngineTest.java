package io.radixkv.engine;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.radixkv.cache.Namespace;
import io.radixkv.kernels.DType;
import io.radixkv.lora.PeftAdapterWriter;
import io.radixkv.model.ModelConfig;
import io.radixkv.model.ModelPresets;
import io.radixkv.model.SafetensorsTestWriter;
import io.radixkv.model.SamplingParams;
import io.radixkv.model.StubDeviceBackend;
import io.radixkv.sched.FinishReason;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * LoRA adapters in the engine: each adapter's KV lives in its own prefix-cache namespace (apart
 * from the base model's, from other adapters' and from other salts), adapters beyond the slots
 * wait in the queue instead of failing, slots are reused least recently used first, every sample
 * of an n > 1 request runs with its adapter, malformed adapters are refused with one line and
 * leave the engine serving, and unloading waits for the adapter's requests.
 */
class LoraEngineTest {
    private static final ModelConfig TINY = ModelPresets.tiny();
    private static final PeftAdapterWriter.Dims DIMS = new PeftAdapterWriter.Dims(TINY.layers(), TINY.hidden(),
            TINY.qDim(), TINY.kvDim(), TINY.intermediate());

    @TempDir
    Path tmp;

    private Path adapter(String name, long seed) throws IOException {
        return PeftAdapterWriter.write(tmp.resolve(name), PeftAdapterWriter.config(8, 16, "[\"q_proj\", \"v_proj\", "
                + "\"down_proj\"]", ""), PeftAdapterWriter.factors(DIMS, List.of("q_proj", "v_proj", "down_proj"),
                k -> 8, seed), "F32");
    }

    private static EngineConfig.Builder config(int maxLoras) {
        return EngineTestSupport.tiny(4, DType.F32, true, 256).maxLoras(maxLoras);
    }

    private static int[] prompt(int n, int from) {
        int[] p = new int[n];
        Arrays.setAll(p, i -> from + i);
        return p;
    }

    private static RequestResult run(Engine e, String id, int[] prompt, Namespace ns, int tokens) {
        RequestResult r = e.submit(new GenerateRequest(id, prompt, ns, SamplingParams.greedy(tokens))).result().join();
        assertEquals(FinishReason.LENGTH, r.reason(), r.error());
        return r;
    }

    @Test
    void adaptersBaseAndSaltsShareNoPagesAndEachRepeatHitsItsOwnCache() throws IOException {
        try (Engine e = EngineTestSupport.start(config(4).build())) {
            e.loadAdapter("a", adapter("a", 1));
            e.loadAdapter("b", adapter("b", 2));
            int[] p = prompt(24, 100);
            List<Namespace> spaces = List.of(Namespace.DEFAULT, Namespace.ofLora("a"), Namespace.ofLora("b"),
                    new Namespace("a", "tenant-1"), Namespace.ofSalt("tenant-1"));
            List<int[]> outputs = new ArrayList<>();
            for (Namespace ns : spaces) {
                RequestResult r = run(e, "first-" + ns, p, ns, 4);
                assertEquals(0, r.stats().cachedPromptTokens(), ns + " reused pages of another namespace");
                outputs.add(r.outputTokens());
            }
            for (int i = 0; i < spaces.size(); i++) {
                RequestResult again = run(e, "again-" + spaces.get(i), p, spaces.get(i), 4);
                assertTrue(again.stats().cachedPromptTokens() >= 20, spaces.get(i) + " did not hit its own cache: "
                        + again.stats().cachedPromptTokens());
                assertArrayEquals(outputs.get(i), again.outputTokens(), spaces.get(i) + ": the cached repeat differs");
            }
            assertFalse(Arrays.equals(outputs.get(0), outputs.get(1)) && Arrays.equals(outputs.get(1), outputs.get(2)),
                    "the adapters change nothing");
            e.checkInvariants(true);
        }
    }

    @Test
    void moreAdaptersThanSlotsWaitInTheQueueAndAllFinish() throws IOException {
        int maxLoras = 2;
        try (Engine e = EngineTestSupport.start(config(maxLoras).build())) {
            List<String> names = List.of("a", "b", "c", "d");
            for (int i = 0; i < names.size(); i++) {
                e.loadAdapter(names.get(i), adapter(names.get(i), 10 + i));
            }
            AtomicInteger worst = new AtomicInteger();
            AtomicInteger sawWaiting = new AtomicInteger();
            List<RequestHandle> handles = new ArrayList<>();
            for (int i = 0; i < 8; i++) {
                String name = names.get(i % names.size());
                handles.add(e.submit(new GenerateRequest("r" + i, prompt(8, 10 * i + 1), Namespace.ofLora(name),
                        SamplingParams.greedy(6)), t -> {
                            LoraStats s = e.loraStats(); // runs on the engine thread: the last step's view
                            worst.accumulateAndGet(s.running().size(), Math::max);
                            sawWaiting.accumulateAndGet(s.waiting().size(), Math::max);
                        }));
            }
            for (RequestHandle h : handles) {
                RequestResult r = h.result().join();
                assertEquals(FinishReason.LENGTH, r.reason(), r.error());
            }
            assertTrue(worst.get() <= maxLoras, worst.get() + " adapters ran at once with " + maxLoras + " slots");
            assertTrue(worst.get() == maxLoras, "the slots were never full: the test did not exercise the limit");
            assertTrue(sawWaiting.get() > 0, "no adapter ever waited for a slot");
            long[] counts = e.loraSlotCounts();
            assertTrue(counts[0] >= 4 && counts[1] >= 2, "loads " + counts[0] + ", evictions " + counts[1]);
            assertEquals(maxLoras, e.loraStats().maxLoras());
        }
    }

    @Test
    void aSlotNoRequestUsesIsReusedLeastRecentlyUsedFirst() throws IOException {
        try (Engine e = EngineTestSupport.start(config(2).build())) {
            for (String n : List.of("a", "b", "c")) {
                e.loadAdapter(n, adapter(n, n.hashCode()));
            }
            int[] p = prompt(6, 7);
            run(e, "1", p, Namespace.ofLora("a"), 2);
            run(e, "2", p, Namespace.ofLora("b"), 2);
            assertArrayEquals(new long[] {2, 0}, e.loraSlotCounts());
            run(e, "3", p, Namespace.ofLora("a"), 2); // a used after b: b is now the least recently used
            assertArrayEquals(new long[] {2, 0}, e.loraSlotCounts());
            run(e, "4", p, Namespace.ofLora("c"), 2); // evicts b
            assertArrayEquals(new long[] {3, 1}, e.loraSlotCounts());
            run(e, "5", p, Namespace.ofLora("a"), 2); // a was kept
            assertArrayEquals(new long[] {3, 1}, e.loraSlotCounts());
            run(e, "6", p, Namespace.ofLora("b"), 2); // b comes back into c's slot
            assertArrayEquals(new long[] {4, 2}, e.loraSlotCounts());
        }
    }

    @Test
    void malformedAdaptersAreRefusedWithOneLineAndTheEngineServesOn() throws IOException {
        Map<String, SafetensorsTestWriter.T> good = PeftAdapterWriter.factors(DIMS, List.of("q_proj", "o_proj"), k -> 8, 3);
        String cfg = PeftAdapterWriter.config(8, 16, "[\"q_proj\", \"o_proj\"]", "");
        var missing = new java.util.LinkedHashMap<>(good);
        missing.remove("base_model.model.model.layers.1.self_attn.o_proj.lora_B.weight");
        PeftAdapterWriter.write(tmp.resolve("missing"), cfg, missing, "F32");
        var wrongShape = new java.util.LinkedHashMap<>(good);
        String q = "base_model.model.model.layers.0.self_attn.q_proj.lora_B.weight";
        wrongShape.put(q, new SafetensorsTestWriter.T(q, "F32", new long[] {TINY.qDim() - 1, 8},
                new float[(TINY.qDim() - 1) * 8]));
        PeftAdapterWriter.write(tmp.resolve("shape"), cfg, wrongShape, "F32");
        PeftAdapterWriter.write(tmp.resolve("rank"), PeftAdapterWriter.config(32, 16, "[\"q_proj\"]", ""),
                PeftAdapterWriter.factors(DIMS, List.of("q_proj"), k -> 32, 4), "F32");
        PeftAdapterWriter.write(tmp.resolve("dora"), cfg.replace("\"use_dora\": false", "\"use_dora\": true"), good, "F32");
        var extra = new java.util.LinkedHashMap<>(good);
        String emb = "base_model.model.model.embed_tokens.lora_embedding_A";
        extra.put(emb, new SafetensorsTestWriter.T(emb, "F32", new long[] {8, 4}, new float[32]));
        PeftAdapterWriter.write(tmp.resolve("embedding"), cfg, extra, "F32");
        Files.createDirectories(tmp.resolve("empty"));
        try (Engine e = EngineTestSupport.start(config(4).build())) {
            for (String[] c : new String[][] {
                    {"missing", "lacks tensor base_model.model.model.layers.1.self_attn.o_proj.lora_B.weight"},
                    {"shape", "has shape [63, 8] but the config needs [64, 8]"},
                    {"rank", "rank 32 of model.layers.0.self_attn.q_proj exceeds the maximum LoRA rank 16"},
                    {"dora", "use_dora DoRA adapters are not supported"},
                    {"embedding", "unexpected tensor " + emb},
                    {"empty", "no adapter_config.json"}}) {
                IllegalArgumentException ex = assertThrows(IllegalArgumentException.class,
                        () -> e.loadAdapter(c[0], tmp.resolve(c[0])), c[0]);
                assertTrue(ex.getMessage().contains(c[1]), c[0] + ": " + ex.getMessage());
                assertFalse(ex.getMessage().contains("\n"), c[0] + ": more than one line: " + ex.getMessage());
            }
            assertEquals(List.of(), e.adapters());
            IllegalArgumentException unknown = assertThrows(IllegalArgumentException.class, () -> e.submit(
                    new GenerateRequest("x", prompt(4, 1), Namespace.ofLora("missing"), SamplingParams.greedy(2))));
            assertTrue(unknown.getMessage().contains("unknown LoRA adapter 'missing'"), unknown.getMessage());
            run(e, "still-serving", prompt(5, 3), Namespace.DEFAULT, 3);
            e.loadAdapter("fine", adapter("fine", 5));
            run(e, "adapter-serving", prompt(5, 3), Namespace.ofLora("fine"), 3);
            e.checkInvariants(true);
        }
    }

    @Test
    void unloadWaitsForTheAdaptersRequestsThenDropsItsCachedPages() throws Exception {
        try (Engine e = EngineTestSupport.start(config(4).build())) {
            e.loadAdapter("a", adapter("a", 1));
            int[] p = prompt(16, 50);
            RequestResult first = run(e, "cache-it", p, Namespace.ofLora("a"), 2);
            CountDownLatch started = new CountDownLatch(1);
            CountDownLatch proceed = new CountDownLatch(1);
            RequestHandle running = e.submit(new GenerateRequest("long", prompt(8, 300), Namespace.ofLora("a"),
                    SamplingParams.greedy(20)), t -> {
                        started.countDown();
                        try {
                            proceed.await(30, TimeUnit.SECONDS); // holds the engine thread: the unload must wait
                        } catch (InterruptedException ex) {
                            Thread.currentThread().interrupt();
                        }
                    });
            assertTrue(started.await(30, TimeUnit.SECONDS));
            CompletableFuture<Void> unloaded = e.unloadAdapter("a");
            assertFalse(unloaded.isDone(), "unloaded while a request of the adapter runs");
            IllegalArgumentException refused = assertThrows(IllegalArgumentException.class, () -> e.submit(
                    new GenerateRequest("late", p, Namespace.ofLora("a"), SamplingParams.greedy(2))));
            assertTrue(refused.getMessage().contains("unknown LoRA adapter 'a'"), refused.getMessage());
            proceed.countDown();
            assertEquals(FinishReason.LENGTH, running.result().join().reason());
            unloaded.get(30, TimeUnit.SECONDS);
            assertEquals(List.of(), e.adapters());
            e.loadAdapter("a", adapter("a2", 2)); // other weights under the same name
            RequestResult after = run(e, "after-reload", p, Namespace.ofLora("a"), 2);
            assertEquals(0, after.stats().cachedPromptTokens(), "the reloaded adapter reused the old adapter's KV");
            assertTrue(first.stats().promptTokens() > 0);
            e.checkInvariants(true);
        }
    }

    private static SamplingParams sampled(long seed, List<Integer> stops) {
        return new SamplingParams(12, 1.0f, 0.95f, seed, stops);
    }

    private static int[] alone(Engine e, String id, int[] prompt, Namespace ns, SamplingParams p) {
        e.evictAll();
        RequestResult r = e.submit(new GenerateRequest(id, prompt, ns, p)).result().join();
        assertTrue(r.ok(), r.toString());
        return r.outputTokens();
    }

    /**
     * A request for 3 samples under an adapter: every sample runs with the adapter (sample i is the
     * request alone under the adapter with seed + i, and not the base model's), and the adapter's
     * slot stays held until the last sample ends: with one slot, a request of another adapter
     * submitted right after streams no token before the samples' last one, although sample 0 (the
     * request the others were forked from) ends early on a stop token.
     */
    @Test
    void everySampleOfAnAdapterRequestRunsWithItAndHoldsItsSlotToTheLastOne() throws Exception {
        int n = 3;
        long seed = 77;
        try (Engine e = EngineTestSupport.start(config(1).build())) {
            e.loadAdapter("a", adapter("a", 1));
            e.loadAdapter("b", adapter("b", 2));
            int[] p = prompt(13, 60);
            Namespace a = Namespace.ofLora("a");
            List<Integer> stop = List.of(alone(e, "probe", p, a, sampled(seed, null))[2]);
            List<int[]> withAdapter = new ArrayList<>();
            List<int[]> base = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                withAdapter.add(alone(e, "a" + i, p, a, sampled(seed + i, stop)));
                base.add(alone(e, "base" + i, p, Namespace.DEFAULT, sampled(seed + i, stop)));
            }
            e.evictAll();
            List<String> order = java.util.Collections.synchronizedList(new ArrayList<>());
            MultiSampleHandle g = e.submit(new GenerateRequest("g", p, a, sampled(seed, stop)), n,
                    (sample, token) -> order.add("a" + sample));
            RequestHandle other = e.submit(new GenerateRequest("other", prompt(7, 5), Namespace.ofLora("b"),
                    SamplingParams.greedy(3)), t -> order.add("b"));
            List<RequestResult> rs = g.results().get(120, TimeUnit.SECONDS);
            assertEquals(FinishReason.LENGTH, other.result().join().reason());
            for (int i = 0; i < n; i++) {
                assertArrayEquals(withAdapter.get(i), rs.get(i).outputTokens(), "sample " + i + " ran without the adapter");
                assertFalse(Arrays.equals(base.get(i), rs.get(i).outputTokens()), "sample " + i + " is the base model's");
            }
            assertEquals(FinishReason.STOP, rs.get(0).reason(), "sample 0 meets its stop token");
            assertTrue(rs.get(0).outputTokens().length < Math.max(rs.get(1).outputTokens().length,
                    rs.get(2).outputTokens().length), "sample 0 must end before another sample: " + order);
            int lastSample = Math.max(order.lastIndexOf("a0"), Math.max(order.lastIndexOf("a1"), order.lastIndexOf("a2")));
            assertTrue(order.indexOf("b") > lastSample, "adapter b took the only slot while a sample of a ran: " + order);
            assertArrayEquals(new long[] {2, 1}, e.loraSlotCounts(), "a, then b in a's slot");
            e.checkInvariants(true);
        }
    }

    @Test
    void theDeviceBackendRefusesAdapters() throws IOException {
        Path dir = adapter("a", 1);
        try (Engine e = Engine.start(config(4).build(), StubDeviceBackend::new, null, null)) {
            IllegalStateException ex = assertThrows(IllegalStateException.class, () -> e.loadAdapter("a", dir));
            assertTrue(ex.getMessage().contains("LoRA adapters run on the cpu backend"), ex.getMessage());
        }
    }
}
