package io.radixkv.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.radixkv.engine.EngineConfig;
import io.radixkv.text.ChatMessage;
import io.radixkv.text.HfTokenizer;
import java.io.IOException;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Text in, text out: a random-weight Llama checkpoint directory with the real Llama 3.1
 * tokenizer and chat template, served end to end (string prompts, stop strings, chat, SSE
 * deltas), and driven by the official OpenAI client through node.
 */
class TextServerTest {
    @TempDir
    static Path tmp;

    private static HfTokenizer tokenizer;
    private static ServerTestSupport t;

    @BeforeAll
    static void start() throws IOException {
        Path model = TinyLlamaCheckpoint.withTokenizer(tmp.resolve("tiny-llama"), "llama3_1", 42);
        tokenizer = HfTokenizer.load(model);
        EngineConfig ec = EngineConfig.builder().model(model.toString()).backend("cpu").numPages(256)
                .maxRunning(8).maxBatchTokens(256).maxSeqLen(1024).build();
        t = new ServerTestSupport(ec, tokenizer, ServerConfig.local("tiny-llama"));
    }

    @AfterAll
    static void stop() {
        ServerTestSupport.close(t, tokenizer);
    }

    private static JsonNode post(String path, ObjectNode body) throws Exception {
        return t.postOk(path, body);
    }

    private static ObjectNode completion(String prompt, int maxTokens) {
        ObjectNode b = ServerTestSupport.JSON.createObjectNode();
        b.put("model", "tiny-llama").put("prompt", prompt).put("max_tokens", maxTokens).put("temperature", 0);
        return b;
    }

    private static ObjectNode chat(int maxTokens) {
        ObjectNode b = ServerTestSupport.JSON.createObjectNode();
        b.put("model", "tiny-llama").put("max_tokens", maxTokens).put("temperature", 0);
        var msgs = b.putArray("messages");
        msgs.addObject().put("role", "system").put("content", "You are terse.");
        msgs.addObject().put("role", "user").put("content", "Name a prime number.");
        return b;
    }

    /** The concatenated {@code text} (completions) or {@code delta.content} (chat) of a stream. */
    private static String streamedText(String sse, boolean chat) throws IOException {
        StringBuilder sb = new StringBuilder();
        for (JsonNode e : ServerTestSupport.sseEvents(sse)) {
            for (JsonNode c : e.get("choices")) {
                JsonNode piece = chat ? c.get("delta").get("content") : c.get("text");
                if (piece != null && !piece.isNull()) {
                    sb.append(piece.asText());
                }
            }
        }
        return sb.toString();
    }

    @Test
    void textCompletionStreamsTheSameText() throws Exception {
        String prompt = "The capital of France is";
        JsonNode j = post("/v1/completions", completion(prompt, 16));
        String text = j.get("choices").get(0).get("text").asText();
        assertFalse(text.isEmpty(), "random weights still produce text");
        assertEquals(tokenizer.encode(prompt, true).length, j.get("usage").get("prompt_tokens").asInt());
        assertEquals(16, j.get("usage").get("completion_tokens").asInt());
        int[] ids = j.get("choices").get(0).get("token_ids").traverse(ServerTestSupport.JSON)
                .readValueAs(int[].class);
        assertEquals(tokenizer.decode(ids, true), text, "the text is the decode of the generated ids");
        HttpResponse<String> s = t.post("/v1/completions", completion(prompt, 16).put("stream", true).toString());
        assertEquals(200, s.statusCode());
        assertEquals(text, streamedText(s.body(), false), "greedy: the stream concatenates to the same text");
    }

    @Test
    void stopStringEndsTheTextBeforeIt() throws Exception {
        String prompt = "Once upon a time";
        String full = post("/v1/completions", completion(prompt, 24)).get("choices").get(0).get("text").asText();
        assertTrue(full.length() >= 8, "need some text to cut: '" + full + "'");
        int at = full.length() / 2;
        if (Character.isLowSurrogate(full.charAt(at))) {
            at++;
        }
        String stop = full.substring(at, Math.min(full.length(), at + 2));
        if (Character.isHighSurrogate(stop.charAt(stop.length() - 1))) {
            stop = full.substring(at, at + 3);
        }
        String expected = full.substring(0, full.indexOf(stop));
        ObjectNode b = completion(prompt, 24);
        b.putArray("stop").add(stop).add("\u0000never");
        JsonNode j = post("/v1/completions", b);
        assertEquals(expected, j.get("choices").get(0).get("text").asText(), "text up to the stop string '" + stop + "'");
        assertEquals("stop", j.get("choices").get(0).get("finish_reason").asText());
        HttpResponse<String> s = t.post("/v1/completions", b.put("stream", true).toString());
        assertEquals(expected, streamedText(s.body(), false), "the stream never shows text past the stop string");
        assertTrue(s.body().contains("\"finish_reason\":\"stop\""));
        t.assertPagesConserved();
    }

    @Test
    void chatCompletionThroughTheTemplate() throws Exception {
        JsonNode j = post("/v1/chat/completions", chat(10));
        assertEquals("chat.completion", j.get("object").asText());
        JsonNode c = j.get("choices").get(0);
        assertEquals("assistant", c.get("message").get("role").asText());
        assertEquals("length", c.get("finish_reason").asText());
        String rendered = tokenizer.chatTemplate().orElseThrow().render(List.of(
                new ChatMessage("system", "You are terse."), new ChatMessage("user", "Name a prime number.")), true);
        assertEquals(tokenizer.encode(rendered, false).length, j.get("usage").get("prompt_tokens").asInt(),
                "the prompt is the rendered template, BOS once");
        String content = c.get("message").get("content").asText();

        HttpResponse<String> s = t.post("/v1/chat/completions", chat(10).put("stream", true).toString());
        assertEquals(200, s.statusCode());
        List<JsonNode> events = ServerTestSupport.sseEvents(s.body());
        assertEquals("chat.completion.chunk", events.get(0).get("object").asText());
        assertEquals("assistant", events.get(0).get("choices").get(0).get("delta").get("role").asText(),
                "the first delta carries the role");
        JsonNode last = events.get(events.size() - 1).get("choices").get(0);
        assertEquals("length", last.get("finish_reason").asText());
        assertTrue(last.get("delta").isEmpty(), "the finishing chunk has an empty delta");
        assertEquals(content, streamedText(s.body(), true));

        // the same conversation again: its prompt comes from the prefix cache
        JsonNode again = post("/v1/chat/completions", chat(10));
        assertTrue(again.get("usage").get("prompt_tokens_details").get("cached_tokens").asInt() > 0);
    }

    @Test
    void officialOpenAiClient() throws Exception {
        JsonNode r = t.runOpenAiClient("smoke.mjs", "tiny-llama");

        JsonNode ours = post("/v1/completions", completion("Hello, my name is", 8));
        assertEquals(ours.get("choices").get(0).get("text").asText(), r.get("completion").get("text").asText());
        assertEquals("length", r.get("completion").get("finish").asText());
        assertEquals(8, r.get("completion").get("usage").get("completion_tokens").asInt());

        String chatText = post("/v1/chat/completions", chat(8)).get("choices").get(0).get("message").get("content")
                .asText();
        assertEquals("assistant", r.get("chat").get("role").asText());
        assertEquals(chatText, r.get("chat").get("content").asText());
        assertEquals(chatText, r.get("stream").get("content").asText(), "the client's streamed deltas");
        assertEquals("assistant", r.get("stream").get("role").asText());
        assertEquals("length", r.get("stream").get("finish").asText());
        assertEquals(8, r.get("stream").get("usage").get("completion_tokens").asInt());
        assertTrue(r.get("stream").get("usage").get("prompt_tokens_details").get("cached_tokens").asInt() > 0,
                "the streamed chat repeats the chat's prompt");
        assertEquals(404, r.get("unknownModel").get("status").asInt(), r.toString());
    }
}
