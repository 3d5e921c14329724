package io.radixkv.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * OpenAI's {@code n} on both endpoints, against the same requests of one choice: choice i is
 * the request with seed + i, a list of prompts gives prompt-major choices, streamed chunks carry
 * their choice's index and each choice's last chunk its finish reason, usage counts the prompt
 * once, stop strings end choices one by one, and bad {@code n} / {@code best_of} are 400s.
 */
class MultiSampleServerTest {
    @TempDir
    static Path tmp;

    private static ServerTestSupport t;

    @BeforeAll
    static void start() throws IOException {
        t = ServerTestSupport.tinyLlama(tmp.resolve("tiny-llama"), 42,
                b -> b.numPages(256).maxRunning(8).maxSeqLen(1024).maxSamples(6), ServerConfig.local("tiny-llama"));
    }

    @AfterAll
    static void stop() {
        ServerTestSupport.close(t, t == null ? null : t.tokenizer);
    }

    private static ObjectNode completion(Object prompt, int maxTokens, long seed) {
        ObjectNode b = ServerTestSupport.JSON.createObjectNode();
        b.put("model", "tiny-llama").put("max_tokens", maxTokens).put("temperature", 1.0).put("seed", seed);
        if (prompt instanceof String s) {
            b.put("prompt", s);
        } else {
            var a = b.putArray("prompt");
            ((List<?>) prompt).forEach(p -> a.add((String) p));
        }
        return b;
    }

    private static ObjectNode chat(int maxTokens, long seed) {
        ObjectNode b = ServerTestSupport.JSON.createObjectNode();
        b.put("model", "tiny-llama").put("max_tokens", maxTokens).put("temperature", 1.0).put("seed", seed);
        b.putArray("messages").addObject().put("role", "user").put("content", "Name a prime number.");
        return b;
    }

    private static JsonNode only(ObjectNode body, String path) throws Exception {
        JsonNode j = t.postOk(path, body);
        assertEquals(1, j.get("choices").size());
        return j;
    }

    private static String text(JsonNode choice) {
        return choice.has("message") ? choice.get("message").get("content").asText() : choice.get("text").asText();
    }

    @Test
    void choicesAreTheSamplesOfSeedPlusI() throws Exception {
        String prompt = "Once upon a time";
        JsonNode j = t.postOk("/v1/completions", completion(prompt, 8, 70).put("n", 3));
        assertEquals(3, j.get("choices").size());
        int completion = 0;
        int promptTokens = 0;
        for (int i = 0; i < 3; i++) {
            JsonNode alone = only(completion(prompt, 8, 70 + i), "/v1/completions");
            JsonNode c = j.get("choices").get(i);
            assertEquals(i, c.get("index").asInt());
            assertEquals(text(alone.get("choices").get(0)), text(c), "choice " + i + " is the request with seed + " + i);
            assertEquals(alone.get("choices").get(0).get("token_ids"), c.get("token_ids"));
            completion += alone.get("usage").get("completion_tokens").asInt();
            promptTokens = alone.get("usage").get("prompt_tokens").asInt();
        }
        assertEquals(promptTokens, j.get("usage").get("prompt_tokens").asInt(), "the prompt counts once");
        assertEquals(completion, j.get("usage").get("completion_tokens").asInt(), "every choice's tokens count");
        assertEquals(promptTokens + completion, j.get("usage").get("total_tokens").asInt());
        assertTrue(new HashSet<>(j.get("choices").findValuesAsText("text")).size() > 1, "different seeds: " + j);

        JsonNode c = t.postOk("/v1/chat/completions", chat(6, 9).put("n", 2));
        assertEquals(2, c.get("choices").size());
        for (int i = 0; i < 2; i++) {
            JsonNode alone = only(chat(6, 9 + i), "/v1/chat/completions");
            assertEquals(i, c.get("choices").get(i).get("index").asInt());
            assertEquals(text(alone.get("choices").get(0)), text(c.get("choices").get(i)));
            assertEquals("assistant", c.get("choices").get(i).get("message").get("role").asText());
        }
        t.assertPagesConserved();
    }

    @Test
    void aListOfPromptsGivesPromptMajorChoices() throws Exception {
        List<String> prompts = List.of("The sky is", "In 1492,");
        JsonNode j = t.postOk("/v1/completions", completion(prompts, 5, 31).put("n", 2));
        assertEquals(4, j.get("choices").size());
        int promptTokens = 0;
        for (int p = 0; p < 2; p++) {
            for (int i = 0; i < 2; i++) {
                JsonNode alone = only(completion(prompts.get(p), 5, 31 + i), "/v1/completions");
                JsonNode c = j.get("choices").get(p * 2 + i);
                assertEquals(p * 2 + i, c.get("index").asInt());
                assertEquals(text(alone.get("choices").get(0)), text(c), "prompt " + p + ", sample " + i);
                if (i == 0) {
                    promptTokens += alone.get("usage").get("prompt_tokens").asInt();
                }
            }
        }
        assertEquals(promptTokens, j.get("usage").get("prompt_tokens").asInt(), "each prompt counts once");
        t.assertPagesConserved();
    }

    /** Streamed chunks by choice index: each choice's text and, on its last chunk only, its finish reason. */
    @Test
    void streamedChunksCarryTheirChoiceIndexAndFinishReason() throws Exception {
        for (boolean chat : new boolean[] {false, true}) {
            ObjectNode body = chat ? chat(6, 12) : completion("Once upon a time", 6, 12);
            String path = chat ? "/v1/chat/completions" : "/v1/completions";
            JsonNode whole = t.postOk(path, body.deepCopy().put("n", 3));
            body.put("n", 3).put("stream", true).putObject("stream_options").put("include_usage", true);
            HttpResponse<String> r = t.post(path, body.toString());
            assertEquals(200, r.statusCode(), r.body());
            List<JsonNode> events = ServerTestSupport.sseEvents(r.body());
            Map<Integer, StringBuilder> texts = new TreeMap<>();
            Map<Integer, List<JsonNode>> byIndex = new TreeMap<>();
            JsonNode usage = null;
            for (JsonNode e : events) {
                if (e.get("choices").isEmpty()) {
                    usage = e.get("usage");
                    continue;
                }
                assertEquals(1, e.get("choices").size(), "one choice per chunk");
                JsonNode c = e.get("choices").get(0);
                int index = c.get("index").asInt();
                byIndex.computeIfAbsent(index, k -> new ArrayList<>()).add(c);
                JsonNode piece = chat ? c.get("delta").get("content") : c.get("text");
                texts.computeIfAbsent(index, k -> new StringBuilder()).append(piece == null ? "" : piece.asText());
            }
            assertEquals(List.of(0, 1, 2), new ArrayList<>(byIndex.keySet()));
            for (int i = 0; i < 3; i++) {
                List<JsonNode> cs = byIndex.get(i);
                for (int k = 0; k < cs.size() - 1; k++) {
                    assertTrue(cs.get(k).get("finish_reason").isNull(), "only the last chunk of choice " + i + " ends it");
                }
                assertEquals(whole.get("choices").get(i).get("finish_reason").asText(),
                        cs.get(cs.size() - 1).get("finish_reason").asText());
                assertEquals(text(whole.get("choices").get(i)), texts.get(i).toString(), "choice " + i);
                if (chat) {
                    assertEquals("assistant", cs.get(0).get("delta").get("role").asText(), "choice " + i + " opens with its role");
                }
            }
            assertEquals(whole.get("usage").get("prompt_tokens"), usage.get("prompt_tokens"), "the prompt counts once");
            assertEquals(whole.get("usage").get("completion_tokens"), usage.get("completion_tokens"));
        }
        t.assertPagesConserved();
    }

    /** A stop string ends the choice that produces it; the others are their own requests with that stop. */
    @Test
    void stopStringsEndChoicesOneByOne() throws Exception {
        String prompt = "Once upon a time";
        String full = text(only(completion(prompt, 24, 51), "/v1/completions").get("choices").get(0));
        String stop = ServerTestSupport.stopInTheMiddle(full);
        ObjectNode b = completion(prompt, 24, 50).put("n", 3);
        b.putArray("stop").add(stop);
        JsonNode j = t.postOk("/v1/completions", b);
        assertEquals(full.substring(0, full.indexOf(stop)), text(j.get("choices").get(1)), "seed 51 stops at '" + stop + "'");
        assertEquals("stop", j.get("choices").get(1).get("finish_reason").asText());
        for (int i = 0; i < 3; i++) {
            ObjectNode one = completion(prompt, 24, 50 + i);
            one.putArray("stop").add(stop);
            JsonNode alone = only(one, "/v1/completions").get("choices").get(0);
            assertEquals(text(alone), text(j.get("choices").get(i)), "choice " + i);
            assertEquals(alone.get("finish_reason"), j.get("choices").get(i).get("finish_reason"));
        }
        t.assertPagesConserved();
    }

    /** The official OpenAI client (npm {@code openai}) reads n = 2 choices, whole and streamed. */
    @Test
    void officialOpenAiClientReadsTheChoices() throws Exception {
        JsonNode r = t.runOpenAiClient("samples.mjs", "tiny-llama");
        JsonNode ours = t.postOk("/v1/completions", completion("Hello, my name is", 6, 5).put("n", 2));
        for (int i = 0; i < 2; i++) {
            JsonNode c = r.get("completion").get("choices").get(i);
            assertEquals(i, c.get("index").asInt());
            assertEquals(text(ours.get("choices").get(i)), c.get("text").asText());
        }
        assertEquals(ours.get("usage").get("completion_tokens"), r.get("completion").get("usage").get("completion_tokens"));
        JsonNode chat = t.postOk("/v1/chat/completions", chat(6, 5).put("n", 2));
        for (int i = 0; i < 2; i++) {
            JsonNode s = r.get("stream").get(String.valueOf(i));
            assertEquals(text(chat.get("choices").get(i)), s.get("content").asText(), "streamed choice " + i);
            assertEquals(chat.get("choices").get(i).get("finish_reason").asText(), s.get("finish").asText());
        }
        t.assertPagesConserved();
    }

    @Test
    void badNAndBestOfAre400NamingThem() throws Exception {
        // the limit: maxSamples 6 (maxRunning 8)
        for (String n : new String[] {"0", "-1", "7", "2.5", "\"2\"", "true"}) {
            HttpResponse<String> r = t.post("/v1/completions", "{\"prompt\":\"hi\",\"max_tokens\":1,\"n\":" + n + "}");
            assertEquals(400, r.statusCode(), n + ": " + r.body());
            assertEquals("n", ServerTestSupport.json(r).get("error").get("param").asText(), r.body());
        }
        HttpResponse<String> r = t.post("/v1/chat/completions",
                "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"n\":2,\"best_of\":3}");
        assertEquals(400, r.statusCode(), r.body());
        assertEquals("best_of", ServerTestSupport.json(r).get("error").get("param").asText());
        r = t.post("/v1/completions", "{\"prompt\":\"hi\",\"max_tokens\":1,\"best_of\":2}");
        assertEquals(400, r.statusCode(), r.body());
        assertEquals("best_of", ServerTestSupport.json(r).get("error").get("param").asText());
        JsonNode ok = t.postOk("/v1/completions", completion("hi", 1, 1).put("n", 2).put("best_of", 2));
        assertEquals(2, ok.get("choices").size());
        t.assertPagesConserved();
    }
}
