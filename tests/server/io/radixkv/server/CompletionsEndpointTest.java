package io.radixkv.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** /v1/completions with token-id prompts against the tiny preset: JSON and SSE. */
class CompletionsEndpointTest {
    private static ServerTestSupport t;

    @BeforeAll
    static void start() {
        t = ServerTestSupport.tinyPreset(256, 8, 16);
    }

    @AfterAll
    static void stop() {
        t.close();
    }

    private static List<Integer> ids(JsonNode arr) {
        List<Integer> l = new ArrayList<>();
        arr.forEach(n -> l.add(n.asInt()));
        return l;
    }

    @Test
    void nonStreamingCompletion() throws Exception {
        HttpResponse<String> r = t.post("/v1/completions",
                "{\"model\":\"tiny\",\"prompt\":[1,2,3,4,5],\"max_tokens\":7,\"temperature\":0}");
        assertEquals(200, r.statusCode(), r.body());
        assertTrue(r.headers().firstValue("content-type").orElse("").startsWith("application/json"));
        JsonNode j = ServerTestSupport.json(r);
        assertEquals("text_completion", j.get("object").asText());
        assertEquals("tiny", j.get("model").asText());
        JsonNode c = j.get("choices").get(0);
        assertEquals(0, c.get("index").asInt());
        assertEquals("length", c.get("finish_reason").asText());
        assertEquals(7, c.get("token_ids").size());
        assertEquals("", c.get("text").asText(), "a preset has no tokenizer: no text");
        JsonNode u = j.get("usage");
        assertEquals(5, u.get("prompt_tokens").asInt());
        assertEquals(7, u.get("completion_tokens").asInt());
        assertEquals(12, u.get("total_tokens").asInt());
        assertTrue(u.get("prompt_tokens_details").has("cached_tokens"));
        t.assertPagesConserved();
    }

    /** temperature, top_p and seed reach the sampler: a seed repeats its tokens, another seed differs. */
    @Test
    void sampledCompletionsRepeatForTheirSeed() throws Exception {
        String body = "{\"model\":\"tiny\",\"prompt\":[1,2,3,4,5],\"max_tokens\":8,\"temperature\":0.7,"
                + "\"top_p\":0.9,\"seed\":";
        List<Integer> a = ids(ServerTestSupport.json(t.post("/v1/completions", body + "42}")).get("choices").get(0)
                .get("token_ids"));
        List<Integer> again = ids(ServerTestSupport.json(t.post("/v1/completions", body + "42}")).get("choices")
                .get(0).get("token_ids"));
        List<Integer> other = ids(ServerTestSupport.json(t.post("/v1/completions", body + "7}")).get("choices").get(0)
                .get("token_ids"));
        List<Integer> greedy = ids(ServerTestSupport.json(t.post("/v1/completions",
                "{\"model\":\"tiny\",\"prompt\":[1,2,3,4,5],\"max_tokens\":8,\"temperature\":0}"))
                .get("choices").get(0).get("token_ids"));
        assertEquals(8, a.size());
        assertEquals(a, again, "the same seed drew other tokens");
        assertTrue(!a.equals(other), "another seed drew the same 8 tokens");
        assertTrue(!a.equals(greedy), "the sampled request drew the greedy tokens");
        t.assertPagesConserved();
    }

    @Test
    void streamingMatchesNonStreaming() throws Exception {
        String body = "{\"prompt\":[9,8,7,6,5,4,3,2,1],\"max_tokens\":6,\"temperature\":0";
        JsonNode plain = ServerTestSupport.json(t.post("/v1/completions", body + "}"));
        HttpResponse<String> r = t.post("/v1/completions",
                body + ",\"stream\":true,\"stream_options\":{\"include_usage\":true}}");
        assertEquals(200, r.statusCode(), r.body());
        assertTrue(r.headers().firstValue("content-type").orElse("").startsWith("text/event-stream"),
                r.headers().toString());
        List<JsonNode> events = ServerTestSupport.sseEvents(r.body());
        List<Integer> streamed = new ArrayList<>();
        String finish = null;
        JsonNode usage = null;
        for (JsonNode e : events) {
            assertEquals("text_completion", e.get("object").asText());
            if (e.get("choices").isEmpty()) {
                usage = e.get("usage");
                continue;
            }
            JsonNode c = e.get("choices").get(0);
            if (c.has("token_ids")) {
                streamed.addAll(ids(c.get("token_ids")));
            }
            if (!c.get("finish_reason").isNull()) {
                finish = c.get("finish_reason").asText();
            }
        }
        assertEquals(ids(plain.get("choices").get(0).get("token_ids")), streamed, "greedy: same tokens streamed");
        assertEquals("length", finish);
        assertTrue(usage != null, "include_usage adds a usage chunk");
        assertEquals(9, usage.get("prompt_tokens").asInt());
        assertEquals(6, usage.get("completion_tokens").asInt());
        assertTrue(events.get(events.size() - 1).get("choices").isEmpty(), "the usage chunk is last before [DONE]");
        t.assertPagesConserved();
    }
}
