package io.radixkv.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.radixkv.engine.EngineConfig;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * LoRA adapters through the OpenAI API as vLLM serves them: adapters are models of their own in
 * {@code /v1/models} with the base model as {@code parent}, {@code model} selects one, an unknown
 * model is vLLM's 404, the runtime load/unload endpoints exist only when allowed, and
 * {@code lora_requests_info} reports the slots.
 */
class LoraServerTest {
    @TempDir
    Path tmp;
    private ServerTestSupport t;

    @BeforeEach
    void start() throws Exception {
        EngineConfig ec = EngineConfig.builder().model("tiny").backend("cpu").pageSize(16).numPages(64).maxRunning(4)
                .maxBatchTokens(128).maxSeqLen(512).maxLoras(3).build();
        t = new ServerTestSupport(ec, null, ServerConfig.local("tiny"));
        t.engine.loadAdapter("sql", TinyLlamaCheckpoint.adapter(tmp.resolve("sql"), 1));
    }

    @AfterEach
    void stop() {
        t.close();
    }

    private static List<Integer> ids(JsonNode completion) {
        List<Integer> out = new ArrayList<>();
        completion.get("choices").get(0).get("token_ids").forEach(n -> out.add(n.asInt()));
        return out;
    }

    private JsonNode complete(String model) throws Exception {
        HttpResponse<String> r = t.post("/v1/completions", "{\"model\": \"" + model + "\", \"prompt\": [5, 6, 7, 8, 9],"
                + " \"max_tokens\": 6, \"temperature\": 0}");
        assertEquals(200, r.statusCode(), r.body());
        return ServerTestSupport.json(r);
    }

    @Test
    void adaptersAreModelsWithTheBaseAsParentAndRequestsSelectThem() throws Exception {
        JsonNode models = ServerTestSupport.json(t.get("/v1/models")).get("data");
        assertEquals(2, models.size(), models.toString());
        assertEquals("tiny", models.get(0).get("id").asText());
        assertEquals("sql", models.get(1).get("id").asText());
        assertEquals("tiny", models.get(1).get("parent").asText());
        assertEquals(tmp.resolve("sql").toString(), models.get(1).get("root").asText());
        JsonNode base = complete("tiny");
        JsonNode sql = complete("sql");
        assertEquals("sql", sql.get("model").asText());
        assertEquals("tiny", base.get("model").asText());
        assertNotEquals(ids(base), ids(sql), "the adapter changed nothing");
        assertEquals(ids(sql), ids(complete("sql")), "an adapter's greedy output repeats");

        HttpResponse<String> unknown = t.post("/v1/completions", "{\"model\": \"nope\", \"prompt\": [1], \"max_tokens\": 1}");
        assertEquals(404, unknown.statusCode());
        assertEquals("The model `nope` does not exist.", ServerTestSupport.json(unknown).get("error").get("message").asText());
    }

    private JsonNode sample(String model, int n, long seed) throws Exception {
        HttpResponse<String> r = t.post("/v1/completions", "{\"model\": \"" + model + "\", \"prompt\": [5, 6, 7, 8, 9],"
                + " \"max_tokens\": 6, \"temperature\": 1, \"seed\": " + seed + ", \"n\": " + n + "}");
        assertEquals(200, r.statusCode(), r.body());
        return ServerTestSupport.json(r);
    }

    @Test
    void everyChoiceOfAnAdapterRequestWithNRunsWithTheAdapter() throws Exception {
        JsonNode g = sample("sql", 3, 40);
        assertEquals("sql", g.get("model").asText());
        assertEquals(3, g.get("choices").size());
        for (int i = 0; i < 3; i++) {
            JsonNode choice = g.get("choices").get(i).get("token_ids");
            assertEquals(sample("sql", 1, 40 + i).get("choices").get(0).get("token_ids"), choice,
                    "choice " + i + " is the adapter's request alone with seed + " + i);
            assertNotEquals(sample("tiny", 1, 40 + i).get("choices").get(0).get("token_ids"), choice,
                    "choice " + i + " is the base model's");
        }
    }

    @Test
    void runtimeLoadingAndUnloadingOnlyWhenAllowed() throws Exception {
        Path dir = TinyLlamaCheckpoint.adapter(tmp.resolve("chat"), 2);
        String load = "{\"lora_name\": \"chat\", \"lora_path\": \"" + dir + "\"}";
        assertEquals(404, t.post("/v1/load_lora_adapter", load).statusCode());
        assertEquals(404, t.post("/v1/unload_lora_adapter", "{\"lora_name\": \"sql\"}").statusCode());

        t.server.allowRuntimeLoraUpdating(true);
        HttpResponse<String> ok = t.post("/v1/load_lora_adapter", load);
        assertEquals(200, ok.statusCode(), ok.body());
        assertEquals("Success: LoRA adapter 'chat' added successfully.", ok.body());
        assertEquals("chat", complete("chat").get("model").asText());
        HttpResponse<String> again = t.post("/v1/load_lora_adapter", load);
        assertEquals(400, again.statusCode());
        assertTrue(again.body().contains("has already been loaded"), again.body());
        HttpResponse<String> bad = t.post("/v1/load_lora_adapter", "{\"lora_name\": \"x\", \"lora_path\": \""
                + tmp.resolve("missing") + "\"}");
        assertEquals(400, bad.statusCode());
        assertTrue(bad.body().contains("is not a directory"), bad.body());
        assertEquals(400, t.post("/v1/load_lora_adapter", "{\"lora_name\": \"x\"}").statusCode());

        HttpResponse<String> gone = t.post("/v1/unload_lora_adapter", "{\"lora_name\": \"chat\"}");
        assertEquals(200, gone.statusCode(), gone.body());
        assertEquals("Success: LoRA adapter 'chat' removed successfully.", gone.body());
        assertEquals(404, t.post("/v1/completions", "{\"model\": \"chat\", \"prompt\": [1], \"max_tokens\": 1}")
                .statusCode());
        assertEquals(404, t.post("/v1/unload_lora_adapter", "{\"lora_name\": \"chat\"}").statusCode());
        JsonNode models = ServerTestSupport.json(t.get("/v1/models")).get("data");
        assertEquals(2, models.size(), models.toString());
    }

    @Test
    void loraRequestsInfoCarriesTheSlotCount() throws Exception {
        complete("sql");
        String metrics = t.get("/metrics").body();
        String line = metrics.lines().filter(l -> l.startsWith("radixkv:lora_requests_info{")).findFirst().orElse("");
        assertFalse(line.isEmpty(), metrics);
        assertTrue(line.contains("max_lora=\"3\""), line);
        assertTrue(line.contains("running_lora_adapters=\"\""), line);
        assertTrue(line.contains("waiting_lora_adapters=\"\""), line);
    }
}
