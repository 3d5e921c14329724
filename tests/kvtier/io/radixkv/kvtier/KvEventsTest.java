package io.radixkv.kvtier;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.radixkv.cache.Namespace;
import io.radixkv.engine.Engine;
import io.radixkv.engine.EngineConfig;
import io.radixkv.engine.GenerateRequest;
import io.radixkv.engine.RequestResult;
import io.radixkv.lora.PeftAdapterWriter;
import io.radixkv.model.ModelConfig;
import io.radixkv.model.ModelPresets;
import io.radixkv.model.SamplingParams;
import io.radixkv.sched.FinishReason;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The events of a scripted request sequence, received and decoded by a subscriber written with
 * another ZeroMQ/msgpack stack (Python pyzmq + msgpack + cbor2 from Debian), which also recomputes
 * every block hash with vLLM's sha256_cbor scheme on its own.
 */
class KvEventsTest {
    @TempDir
    Path tmp;

    /** The Python subscriber on the two sockets (stdout: "ready", then the JSON summary). */
    private static Process subscriber(int pubPort, int replayPort, String seed) throws IOException {
        return new ProcessBuilder(new ArrayList<>(List.of("/usr/bin/python3",
                TestSupport.root().resolve("tests/kvtier/kv_events_subscriber.py").toString(),
                "--pub", "tcp://127.0.0.1:" + pubPort, "--replay", "tcp://127.0.0.1:" + replayPort,
                "--seed", seed, "--idle", "3"))).redirectError(ProcessBuilder.Redirect.INHERIT).start();
    }

    private static int[] prompt(Random r, int[] prefix, int len) {
        int[] p = new int[len];
        System.arraycopy(prefix, 0, p, 0, Math.min(prefix.length, len));
        for (int i = prefix.length; i < len; i++) {
            p[i] = 1 + r.nextInt(200);
        }
        return p;
    }

    @Test
    void pythonSubscriberDecodesReplaysAndVerifiesEveryHash() throws Exception {
        int pubPort = TestSupport.freePort();
        int replayPort = TestSupport.freePort();
        // small pool: the scripted sequence evicts, so BlockRemoved events appear too
        EngineConfig config = EngineConfig.builder().model("tiny").backend("cpu").pageSize(16).numPages(20)
                .maxRunning(4).build();
        Random r = new Random(7);
        int[] shared = prompt(r, new int[0], 64);
        JsonNode summary;
        Set<Long> expectedFirst = new HashSet<>();
        int cachedPages;
        int tracked;
        try (KvTierExtension kv = KvTierExtension.builder().kvEvents("tcp://*:" + pubPort)
                .replay("tcp://*:" + replayPort).hashSeed("1234").build();
             Engine engine = Engine.start(config, kv)) {
            // before any subscriber: these batches are only reachable through replay
            engine.runToCompletion(List.of(new GenerateRequest("a", prompt(r, shared, 100), SamplingParams.greedy(4))));
            Process py = subscriber(pubPort, replayPort, "1234");
            try (BufferedReader out = new BufferedReader(new InputStreamReader(py.getInputStream(),
                    StandardCharsets.UTF_8))) {
                assertEquals("ready", out.readLine());
                List<GenerateRequest> rest = new ArrayList<>();
                for (int i = 0; i < 8; i++) {
                    rest.add(new GenerateRequest("r" + i, prompt(r, shared, 90 + 13 * i), SamplingParams.greedy(6)));
                }
                engine.runToCompletion(rest);
                int[] last = prompt(r, shared, 120);
                engine.runToCompletion(List.of(new GenerateRequest("last", last, SamplingParams.greedy(1))));
                byte[][] chain = kv.hasher().chain(io.radixkv.cache.Namespace.DEFAULT, last, 16, 120 / 16);
                for (byte[] h : chain) {
                    expectedFirst.add(BlockHasher.external(h));
                }
                // the step that retired the last request publishes the counters at its end
                TestSupport.await(() -> engine.snapshot().finished() == 10, "the counters of all 10 requests");
                cachedPages = engine.snapshot().cachedPages();
                tracked = kv.trackedPages();
                summary = new ObjectMapper().readTree(out.readLine());
            } finally {
                assertTrue(py.waitFor(30, TimeUnit.SECONDS), "subscriber did not exit");
            }
            assertEquals(0, kv.eventsDropped());
        }
        assertEquals("[]", summary.get("errors").toString());
        assertEquals("[]", summary.get("mismatches").toString(), "hashes differ from the Python recomputation");
        assertEquals(0, summary.get("unknown_parents").asInt());
        assertEquals("AllBlocksCleared", summary.get("first_event").asText());
        assertTrue(summary.get("replayed").asInt() >= 2, "missed batches come back through replay: " + summary);
        assertEquals(summary.get("stored").asInt(), summary.get("verified").asInt());
        assertTrue(summary.get("removed").asInt() > 0, "the small pool evicted: " + summary);
        // the sequence numbers arrived gap-free from 0
        JsonNode seqs = summary.get("seqs");
        for (int i = 0; i < seqs.size(); i++) {
            assertEquals(i, seqs.get(i).asInt());
        }
        // stored minus removed is exactly what the cache holds, including the last prompt's pages
        Set<Long> live = new HashSet<>();
        summary.get("live").forEach(n -> live.add(n.bigIntegerValue().longValue()));
        assertEquals(cachedPages, live.size(), "tracked " + tracked + " " + summary);
        assertTrue(live.containsAll(expectedFirst), "the last prompt's pages are live");
    }

    /** A rank-8 adapter of q_proj and v_proj for the tiny model, with factors drawn from {@code seed}. */
    static Path adapter(Path dir, long seed) throws IOException {
        ModelConfig m = ModelPresets.tiny();
        PeftAdapterWriter.Dims d = new PeftAdapterWriter.Dims(m.layers(), m.hidden(), m.qDim(), m.kvDim(),
                m.intermediate());
        return PeftAdapterWriter.write(dir, PeftAdapterWriter.config(8, 16, "[\"q_proj\", \"v_proj\"]", ""),
                PeftAdapterWriter.factors(d, List.of("q_proj", "v_proj"), k -> 8, seed), "F32");
    }

    /**
     * The same prompt under the base model and two adapters: each adapter's stored events carry its
     * name and its number (vLLM's lora_name and lora_id), the base model's carry null for both, the
     * three share no block hash, and the Python subscriber recomputes every hash with the adapter's
     * name as vLLM's extra key.
     */
    @Test
    void adapterPagesCarryTheAdaptersNameAndIdAndHashesApart() throws Exception {
        int pubPort = TestSupport.freePort();
        int replayPort = TestSupport.freePort();
        EngineConfig config = EngineConfig.builder().model("tiny").backend("cpu").pageSize(16).numPages(64)
                .maxRunning(4).maxLoras(2).build();
        int[] prompt = prompt(new Random(3), new int[0], 3 * 16 + 5);
        JsonNode summary;
        try (KvTierExtension kv = KvTierExtension.builder().kvEvents("tcp://*:" + pubPort)
                .replay("tcp://*:" + replayPort).build();
             Engine engine = Engine.start(config, kv)) {
            engine.loadAdapter("sql", adapter(tmp.resolve("sql"), 1));
            engine.loadAdapter("chat", adapter(tmp.resolve("chat"), 2));
            Process py = subscriber(pubPort, replayPort, "0");
            try (BufferedReader out = new BufferedReader(new InputStreamReader(py.getInputStream(),
                    StandardCharsets.UTF_8))) {
                assertEquals("ready", out.readLine());
                for (Namespace ns : List.of(Namespace.DEFAULT, Namespace.ofLora("sql"), Namespace.ofLora("chat"))) {
                    RequestResult r = engine.runToCompletion(List.of(new GenerateRequest("r-" + ns.loraId(), prompt,
                            ns, SamplingParams.greedy(2)))).get(0);
                    assertEquals(FinishReason.LENGTH, r.reason(), r.toString());
                }
                summary = new ObjectMapper().readTree(out.readLine());
            } finally {
                assertTrue(py.waitFor(30, TimeUnit.SECONDS), "subscriber did not exit");
            }
        }
        assertEquals("[]", summary.get("errors").toString());
        assertEquals("[]", summary.get("mismatches").toString(), "hashes differ from the Python recomputation");
        assertEquals(summary.get("stored").asInt(), summary.get("verified").asInt());
        JsonNode byLora = summary.get("by_lora");
        assertEquals(Set.of("", "sql", "chat"), fieldNames(byLora), summary.toString());
        assertEquals("[null]", byLora.get("").get("ids").toString(), "the base model's lora_id");
        JsonNode sqlIds = byLora.get("sql").get("ids");
        JsonNode chatIds = byLora.get("chat").get("ids");
        assertEquals(1, sqlIds.size(), sqlIds.toString());
        assertEquals(1, chatIds.size(), chatIds.toString());
        assertTrue(sqlIds.get(0).isIntegralNumber() && chatIds.get(0).isIntegralNumber(), sqlIds + " " + chatIds);
        assertTrue(sqlIds.get(0).asLong() != chatIds.get(0).asLong(), "two adapters, one lora_id");
        Set<Long> seen = new HashSet<>();
        int total = 0;
        for (String name : List.of("", "sql", "chat")) {
            JsonNode hashes = byLora.get(name).get("hashes");
            assertEquals(3, hashes.size(), name + ": the prompt's 3 full pages");
            for (JsonNode h : hashes) {
                seen.add(h.bigIntegerValue().longValue());
                total++;
            }
        }
        assertEquals(total, seen.size(), "the same tokens under two adapters (or the base model) share a hash");
    }

    private static Set<String> fieldNames(JsonNode n) {
        Set<String> out = new HashSet<>();
        n.fieldNames().forEachRemaining(out::add);
        return out;
    }
}
