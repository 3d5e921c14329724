package io.radixkv.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code n} together with log-probabilities and structured outputs, as vLLM answers them: each
 * choice carries its own {@code logprobs} (choice i's those of the request alone with seed + i),
 * an echo puts the prompt and its log-probabilities before every choice, streamed chunks carry
 * their choice's index and its tokens' log-probabilities, and every choice follows the
 * {@code response_format} on its own.
 */
class MultiSampleFeaturesServerTest {
    private static final double TOL = 1e-5;

    @TempDir
    static Path tmp;

    private static ServerTestSupport t;

    @BeforeAll
    static void start() throws IOException {
        t = ServerTestSupport.tinyLlama(tmp.resolve("tiny-llama"), 42,
                b -> b.numPages(256).maxRunning(8).maxSeqLen(1024).maxSamples(4), ServerConfig.local("tiny-llama"));
    }

    @AfterAll
    static void stop() {
        ServerTestSupport.close(t, t == null ? null : t.tokenizer);
    }

    private static ObjectNode completion(String prompt, int maxTokens, long seed) {
        ObjectNode b = ServerTestSupport.JSON.createObjectNode();
        b.put("model", "tiny-llama").put("max_tokens", maxTokens).put("temperature", 1.0).put("seed", seed)
                .put("prompt", prompt);
        return b;
    }

    private static ObjectNode chat(int maxTokens, long seed) {
        ObjectNode b = ServerTestSupport.JSON.createObjectNode();
        b.put("model", "tiny-llama").put("max_tokens", maxTokens).put("temperature", 1.0).put("seed", seed);
        b.putArray("messages").addObject().put("role", "user").put("content", "Name a colour.");
        return b;
    }

    /** The one choice of {@code body} run with n = 1. */
    private static JsonNode alone(String path, ObjectNode body) throws Exception {
        JsonNode j = t.postOk(path, body);
        assertEquals(1, j.get("choices").size());
        return j.get("choices").get(0);
    }

    /** Equal JSON trees, numbers within {@link #TOL} (log-probabilities), nulls where nulls. */
    private static void assertJsonClose(JsonNode expected, JsonNode actual, String at) {
        if (expected.isNumber() && actual.isNumber()) {
            assertEquals(expected.asDouble(), actual.asDouble(), TOL, at);
            return;
        }
        assertEquals(expected.getNodeType(), actual.getNodeType(), at);
        if (expected.isContainerNode()) {
            assertEquals(expected.size(), actual.size(), at + ": " + actual);
            if (expected.isArray()) {
                for (int i = 0; i < expected.size(); i++) {
                    assertJsonClose(expected.get(i), actual.get(i), at + "[" + i + "]");
                }
            } else {
                expected.fieldNames().forEachRemaining(f -> {
                    assertTrue(actual.has(f), at + ": no '" + f + "' in " + actual);
                    assertJsonClose(expected.get(f), actual.get(f), at + "." + f);
                });
            }
        } else {
            assertEquals(expected, actual, at);
        }
    }

    private static JsonNode slice(JsonNode array, int from, int to) {
        var out = ServerTestSupport.JSON.createArrayNode();
        for (int i = from; i < to; i++) {
            out.add(array.get(i));
        }
        return out;
    }

    /**
     * Completions with {@code logprobs: 2} and n = 2: each choice's logprobs are its own tokens'
     * (those of the request alone with seed + i); with {@code echo} each choice starts with the
     * prompt and the prompt's log-probabilities, the same in both.
     */
    @Test
    void eachChoiceHasItsOwnLogprobsAndTheEchoedPrompt() throws Exception {
        String prompt = "Once upon a time";
        for (boolean echo : new boolean[] {false, true}) {
            JsonNode j = t.postOk("/v1/completions", completion(prompt, 6, 80).put("logprobs", 2).put("echo", echo)
                    .put("n", 2));
            assertEquals(2, j.get("choices").size());
            int promptTokens = j.get("usage").get("prompt_tokens").asInt();
            for (int i = 0; i < 2; i++) {
                JsonNode c = j.get("choices").get(i);
                JsonNode one = alone("/v1/completions", completion(prompt, 6, 80 + i).put("logprobs", 2).put("echo", echo));
                String at = "echo " + echo + ", choice " + i;
                assertEquals(i, c.get("index").asInt());
                assertEquals(one.get("text"), c.get("text"), at);
                assertJsonClose(one.get("logprobs"), c.get("logprobs"), at);
                JsonNode lp = c.get("logprobs");
                int generated = c.get("token_ids").size();
                assertEquals((echo ? promptTokens : 0) + generated, lp.get("tokens").size(), at);
                if (echo) {
                    assertTrue(c.get("text").asText().startsWith(prompt), at + ": " + c.get("text"));
                    assertTrue(lp.get("token_logprobs").get(0).isNull(), at + ": the first prompt token has none");
                    assertTrue(lp.get("token_logprobs").get(1).isNumber(), at + ": the prompt's log-probabilities");
                    JsonNode first = j.get("choices").get(0).get("logprobs");
                    for (String f : new String[] {"tokens", "token_logprobs", "top_logprobs", "text_offset"}) {
                        assertEquals(slice(first.get(f), 0, promptTokens), slice(lp.get(f), 0, promptTokens), at + " " + f);
                    }
                }
            }
        }
        t.assertPagesConserved();
    }

    /**
     * Chat with {@code logprobs: true, top_logprobs: 2}, n = 2, streamed: every chunk with text
     * carries its choice's index and one log-probability entry per token of it, and each choice's
     * entries, joined, are those of the request alone with seed + i.
     */
    @Test
    void streamedChatChunksCarryTheirChoicesLogprobs() throws Exception {
        ObjectNode body = chat(8, 90).put("logprobs", true).put("top_logprobs", 2);
        HttpResponse<String> r = t.post("/v1/chat/completions", body.deepCopy().put("n", 2).put("stream", true)
                .toString());
        assertEquals(200, r.statusCode(), r.body());
        Map<Integer, List<JsonNode>> entries = new TreeMap<>();
        for (JsonNode e : ServerTestSupport.sseEvents(r.body())) {
            JsonNode c = e.get("choices").get(0);
            int index = c.get("index").asInt();
            entries.computeIfAbsent(index, k -> new ArrayList<>());
            JsonNode ids = c.get("token_ids");
            if (ids != null && !ids.isEmpty()) {
                JsonNode content = c.get("logprobs").get("content");
                assertEquals(ids.size(), content.size(), "one entry per token: " + c);
                content.forEach(entries.get(index)::add);
            }
        }
        assertEquals(List.of(0, 1), new ArrayList<>(entries.keySet()));
        for (int i = 0; i < 2; i++) {
            JsonNode one = alone("/v1/chat/completions", chat(8, 90 + i).put("logprobs", true).put("top_logprobs", 2));
            JsonNode expected = one.get("logprobs").get("content");
            assertFalse(expected.isEmpty());
            var got = ServerTestSupport.JSON.createArrayNode();
            entries.get(i).forEach(got::add);
            assertJsonClose(expected, got, "choice " + i);
            assertEquals(2, got.get(0).get("top_logprobs").size());
        }
        t.assertPagesConserved();
    }

    /**
     * {@code response_format} with n = 2: a JSON schema of an enum makes every choice one of its
     * values, and {@code json_object} every choice an object's text; each choice is the request
     * alone with seed + i.
     */
    @Test
    void everyChoiceFollowsTheResponseFormat() throws Exception {
        List<String> colours = List.of("red", "green", "blue", "yellow");
        ObjectNode schema = chat(12, 100);
        ObjectNode js = schema.putObject("response_format").put("type", "json_schema").putObject("json_schema");
        js.put("name", "colour");
        var values = js.putObject("schema").put("type", "string").putArray("enum");
        colours.forEach(values::add);
        ObjectNode object = chat(24, 100);
        object.putObject("response_format").put("type", "json_object");
        for (ObjectNode body : List.of(schema, object)) {
            JsonNode j = t.postOk("/v1/chat/completions", body.deepCopy().put("n", 2));
            assertEquals(2, j.get("choices").size());
            for (int i = 0; i < 2; i++) {
                JsonNode c = j.get("choices").get(i);
                String content = c.get("message").get("content").asText();
                JsonNode one = alone("/v1/chat/completions", body.deepCopy().put("seed", 100 + i));
                assertEquals(one.get("message").get("content").asText(), content, "choice " + i);
                if (body == schema) {
                    assertEquals("stop", c.get("finish_reason").asText(), content);
                    assertTrue(colours.contains(ServerTestSupport.JSON.readTree(content).asText()), content);
                } else {
                    assertTrue(content.strip().startsWith("{"), "choice " + i + ": " + content);
                    if (c.get("finish_reason").asText().equals("stop")) {
                        assertTrue(ServerTestSupport.JSON.readTree(content).isObject(), content);
                    }
                }
            }
        }
        t.assertPagesConserved();
    }
}
