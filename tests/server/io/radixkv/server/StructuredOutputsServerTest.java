package io.radixkv.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.radixkv.engine.EngineConfig;
import io.radixkv.text.HfTokenizer;
import java.io.IOException;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Structured outputs through the server: a random-weight Llama with the real Llama 3.1
 * tokenizer answers {@code response_format} (json_schema) and {@code structured_outputs}
 * (json, regex, choice) on both endpoints, streamed and not, with text that the constraint
 * allows and that ends with EOS; what cannot be honoured is a 400 naming the field and keyword.
 */
class StructuredOutputsServerTest {
    @TempDir
    static Path tmp;

    private static HfTokenizer tokenizer;
    private static ServerTestSupport t;

    static final String SCHEMA = """
            {"type":"object","properties":{"answer":{"type":"string","enum":["yes","no","maybe"]},
             "n":{"type":"integer","minimum":0,"maximum":99},"why":{"type":"string","maxLength":4}},
             "required":["answer","n","why"],"additionalProperties":false}""";

    @BeforeAll
    static void start() throws IOException {
        Path model = TinyLlamaCheckpoint.withTokenizer(tmp.resolve("tiny-llama"), "llama3_1", 5);
        tokenizer = HfTokenizer.load(model);
        EngineConfig ec = EngineConfig.builder().model(model.toString()).backend("cpu").numPages(256)
                .maxRunning(8).maxBatchTokens(256).maxSeqLen(1024).build();
        t = new ServerTestSupport(ec, tokenizer, ServerConfig.local("tiny-llama"));
    }

    @AfterAll
    static void stop() {
        ServerTestSupport.close(t, tokenizer);
    }

    private static ObjectNode completion(double temperature, long seed) {
        ObjectNode b = ServerTestSupport.JSON.createObjectNode();
        b.put("prompt", "Answer in JSON:").put("max_tokens", 200).put("temperature", temperature).put("seed", seed);
        return b;
    }

    /** {@code text} is a JSON instance of {@link #SCHEMA}, checked by hand. */
    static void checkAnswer(String text) throws IOException {
        JsonNode v = ServerTestSupport.JSON.readTree(text);
        assertEquals(Set.of("answer", "n", "why"), Set.copyOf(iterable(v)), text);
        assertTrue(List.of("yes", "no", "maybe").contains(v.get("answer").asText()), text);
        assertTrue(v.get("n").isInt() && v.get("n").asInt() >= 0 && v.get("n").asInt() <= 99, text);
        assertTrue(v.get("why").asText().length() <= 4, text);
    }

    private static List<String> iterable(JsonNode v) {
        List<String> out = new java.util.ArrayList<>();
        v.fieldNames().forEachRemaining(out::add);
        return out;
    }

    @Test
    void responseFormatJsonSchemaOnBothEndpoints() throws Exception {
        JsonNode schema = ServerTestSupport.JSON.readTree(SCHEMA);
        for (long seed = 0; seed < 4; seed++) {
            ObjectNode b = completion(seed == 0 ? 0 : 1, seed);
            ObjectNode rf = b.putObject("response_format").put("type", "json_schema");
            rf.putObject("json_schema").put("name", "answer").put("strict", true).set("schema", schema);
            JsonNode c = t.postOk("/v1/completions", b).get("choices").get(0);
            assertEquals("stop", c.get("finish_reason").asText(), c.toString());
            checkAnswer(c.get("text").asText());
        }
        ObjectNode chat = ServerTestSupport.JSON.createObjectNode();
        chat.put("max_tokens", 200).put("temperature", 1).put("seed", 3).put("stream", true);
        chat.putArray("messages").addObject().put("role", "user").put("content", "Answer.");
        chat.putObject("response_format").put("type", "json_schema").putObject("json_schema").put("name", "a")
                .set("schema", schema);
        HttpResponse<String> r = t.post("/v1/chat/completions", chat.toString());
        assertEquals(200, r.statusCode(), r.body());
        StringBuilder text = new StringBuilder();
        for (JsonNode e : ServerTestSupport.sseEvents(r.body())) {
            for (JsonNode ch : e.get("choices")) {
                JsonNode piece = ch.get("delta").get("content");
                if (piece != null && !piece.isNull()) {
                    text.append(piece.asText());
                }
            }
        }
        checkAnswer(text.toString());
    }

    @Test
    void structuredOutputsJsonRegexAndChoice() throws Exception {
        ObjectNode b = completion(1, 7);
        b.putObject("structured_outputs").put("json", SCHEMA); // the schema as text, as vLLM accepts it
        checkAnswer(t.postOk("/v1/completions", b).get("choices").get(0).get("text").asText());
        String regex = "[0-9]{3}-[a-z]{2}(!|\\?)";
        for (long seed = 0; seed < 3; seed++) {
            ObjectNode r = completion(1, seed);
            r.putObject("structured_outputs").put("regex", regex);
            JsonNode c = t.postOk("/v1/completions", r).get("choices").get(0);
            assertTrue(Pattern.compile(regex).matcher(c.get("text").asText()).matches(), c.toString());
            assertEquals("stop", c.get("finish_reason").asText());
        }
        ObjectNode ch = completion(0, 1);
        ch.putObject("structured_outputs").putArray("choice").add("red").add("green").add("blue sky");
        String text = t.postOk("/v1/completions", ch).get("choices").get(0).get("text").asText();
        assertTrue(List.of("red", "green", "blue sky").contains(text), text);
    }

    @Test
    void whatCannotBeHonouredIs400NamingIt() throws Exception {
        String[][] refused = {
            {"\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"x\",\"schema\":{\"oneOf\":[{}]}}}",
                "response_format", "oneOf"},
            {"\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"schema\":{\"type\":\"object\","
                + "\"patternProperties\":{}}}}", "response_format", "patternProperties"},
            {"\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"schema\":{\"type\":\"string\","
                + "\"format\":\"ipv4\"}}}", "response_format", "format"},
            {"\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"schema\":{\"type\":\"string\","
                + "\"minLength\":3,\"maxLength\":2}}}", "response_format", "nothing matches"},
            {"\"response_format\":{\"type\":\"xml\"}", "response_format.type", "xml"},
            {"\"response_format\":{\"type\":\"json_schema\"}", "response_format.json_schema", "schema"},
            {"\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"schema\":{},\"extra\":1}}",
                "response_format.json_schema.extra", "extra"},
            {"\"structured_outputs\":{\"grammar\":\"root ::= \\\"a\\\"\"}", "structured_outputs.grammar", "grammar"},
            {"\"structured_outputs\":{\"regex\":\"a\",\"choice\":[\"b\"]}", "structured_outputs", "exactly one"},
            {"\"structured_outputs\":{\"regex\":\"(a)\\\\1\"}", "structured_outputs", "back-references"},
            {"\"structured_outputs\":{\"regex\":\"a\",\"whitespace_pattern\":\" \"}",
                "structured_outputs.whitespace_pattern", "whitespace"},
            {"\"structured_outputs\":{\"regex\":\"a\",\"frobnicate\":1}", "structured_outputs.frobnicate", "unknown"},
            {"\"structured_outputs\":{\"choice\":[]}", "structured_outputs.choice", "non-empty"},
            {"\"structured_outputs\":{\"regex\":\"a\"},\"response_format\":{\"type\":\"json_object\"}",
                "structured_outputs", "cannot both"},
        };
        for (String[] f : refused) {
            HttpResponse<String> r = t.post("/v1/completions", "{\"prompt\":\"x\"," + f[0] + "}");
            assertEquals(400, r.statusCode(), r.body());
            JsonNode e = ServerTestSupport.json(r).get("error");
            assertEquals(f[1], e.get("param").asText(), r.body());
            assertTrue(e.get("message").asText().contains(f[2]), r.body());
        }
        // the neutral response_format changes nothing
        ObjectNode b = completion(0, 1);
        b.putObject("response_format").put("type", "text");
        assertEquals(200, t.post("/v1/completions", b.toString()).statusCode());
    }
}
