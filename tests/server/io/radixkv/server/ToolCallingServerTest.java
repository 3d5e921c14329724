package io.radixkv.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.radixkv.engine.EngineConfig;
import io.radixkv.text.HfTokenizer;
import java.io.IOException;
import java.io.InputStream;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Tool calling end to end on a random-weight checkpoint with the real Qwen3 tokenizer and chat
 * template, served with {@code --tool-call-parser hermes --enable-auto-tool-choice
 * --reasoning-parser qwen3}: an OpenAI request with tools and a tool-call history renders to the
 * prompt Python's Jinja2 renders (arguments JSON parsed into a dict, tools dumped as vLLM dumps
 * them); bad tool fields are 400s naming the field; streamed and non-streamed responses agree;
 * and the official OpenAI client sends and reads all of it.
 */
class ToolCallingServerTest {
    @TempDir
    static Path tmp;

    private static HfTokenizer tokenizer;
    private static ServerTestSupport t;

    private static final String TOOLS = """
            [{"type": "function", "function": {"name": "get_weather", "description": "Current weather in a city",
              "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "City name"},
              "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}}, "required": ["city"]}}},
             {"type": "function", "function": {"name": "get_time",
              "parameters": {"type": "object", "properties": {"tz": {"type": "string"}}}}}]""";
    /**
     * chat/tool-cases.json's "tool-result-gen" as an OpenAI client sends it; the arguments string
     * is compact, so only arguments parsed into a dict (printed by tojson) render as Jinja2 does.
     */
    private static final String HISTORY = """
            [{"role": "user", "content": "What is the weather in Paris?"},
             {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
               "function": {"name": "get_weather", "arguments": "{\\"city\\":\\"Paris\\",\\"unit\\":\\"celsius\\"}"}}]},
             {"role": "tool", "content": "22 degrees, sunny", "tool_call_id": "call_1"}]""";

    @BeforeAll
    static void start() throws IOException {
        Path model = TinyLlamaCheckpoint.withTokenizer(tmp.resolve("tiny-qwen3"), "qwen3", 7);
        tokenizer = HfTokenizer.load(model);
        EngineConfig ec = EngineConfig.builder().model(model.toString()).backend("cpu").numPages(256)
                .maxRunning(4).maxBatchTokens(512).maxSeqLen(2048).build();
        t = new ServerTestSupport(ec, tokenizer, ServerConfig.local("tiny-qwen3")
                .withChatOutput(new ChatOutputConfig("hermes", true, false, "qwen3")));
    }

    @AfterAll
    static void stop() {
        ServerTestSupport.close(t, tokenizer);
    }

    private static ObjectNode chat(int maxTokens) throws IOException {
        ObjectNode b = ServerTestSupport.JSON.createObjectNode();
        b.put("model", "tiny-qwen3").put("max_tokens", maxTokens).put("temperature", 0);
        b.set("messages", ServerTestSupport.JSON.readTree(HISTORY));
        b.set("tools", ServerTestSupport.JSON.readTree(TOOLS));
        return b;
    }

    private static String resource(String name) throws IOException {
        try (InputStream in = ToolCallingServerTest.class.getResourceAsStream("/io/radixkv/text/chat/" + name)) {
            assertTrue(in != null, name + " is a test resource");
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
    }

    @Test
    void toolsAndToolHistoryRenderAsJinja2() throws Exception {
        ObjectNode body = chat(1);
        body.remove(java.util.List.of("model", "max_tokens", "temperature"));
        JsonNode r = t.postOk("/tokenize", body);
        int[] want = tokenizer.encode(resource("tools/qwen3/tool-result-gen.txt"), false);
        int[] got = new int[r.get("tokens").size()];
        for (int i = 0; i < got.length; i++) {
            got[i] = r.get("tokens").get(i).asInt();
        }
        assertEquals(tokenizer.decode(want, false), tokenizer.decode(got, false));
        assertTrue(java.util.Arrays.equals(want, got));
    }

    @Test
    void badToolFieldsAre400sNamingTheField() throws Exception {
        ObjectNode unknown = chat(1);
        unknown.set("tool_choice", ServerTestSupport.JSON.readTree(
                "{\"type\": \"function\", \"function\": {\"name\": \"no_such_function\"}}"));
        assertParam(unknown, "tool_choice.function.name");
        ObjectNode badArgs = chat(1);
        ((ObjectNode) badArgs.get("messages").get(1).get("tool_calls").get(0).get("function"))
                .put("arguments", "{\"city\": ");
        assertParam(badArgs, "messages[1].tool_calls[0].function.arguments");
        ObjectNode badTool = chat(1);
        ((ObjectNode) badTool.get("tools").get(1).get("function")).remove("name");
        assertParam(badTool, "tools[1].function.name");
        ObjectNode completion = ServerTestSupport.JSON.createObjectNode().put("prompt", "x");
        completion.set("tools", ServerTestSupport.JSON.readTree(TOOLS));
        HttpResponse<String> r = t.post("/v1/completions", completion.toString());
        assertEquals(400, r.statusCode());
        assertEquals("tools", ServerTestSupport.json(r).get("error").get("param").asText());
    }

    private static void assertParam(ObjectNode body, String param) throws Exception {
        HttpResponse<String> r = t.post("/v1/chat/completions", body.toString());
        assertEquals(400, r.statusCode(), r.body());
        assertEquals(param, ServerTestSupport.json(r).get("error").get("param").asText(), r.body());
    }

    @Test
    void streamedAndWholeResponsesAgree() throws Exception {
        JsonNode whole = t.postOk("/v1/chat/completions", chat(16));
        JsonNode message = whole.get("choices").get(0).get("message");
        assertTrue(message.get("tool_calls").isArray(), message.toString());
        ObjectNode streamed = chat(16).put("stream", true);
        HttpResponse<String> r = t.post("/v1/chat/completions", streamed.toString());
        assertEquals(200, r.statusCode());
        StringBuilder content = new StringBuilder();
        StringBuilder reasoning = new StringBuilder();
        String finish = null;
        for (JsonNode e : ServerTestSupport.sseEvents(r.body())) {
            for (JsonNode c : e.get("choices")) {
                content.append(c.get("delta").path("content").asText(""));
                reasoning.append(c.get("delta").path("reasoning_content").asText(""));
                finish = c.get("finish_reason").isNull() ? finish : c.get("finish_reason").asText();
            }
        }
        assertEquals(message.path("content").asText(""), content.toString());
        assertEquals(message.path("reasoning_content").asText(""), reasoning.toString());
        assertEquals(whole.get("choices").get(0).get("finish_reason").asText(), finish);
    }

    @Test
    void officialOpenAiClient() throws Exception {
        JsonNode r = t.runOpenAiClient("tools.mjs", "tiny-qwen3");
        String out = r.toString();
        JsonNode chat = r.get("chat");
        JsonNode stream = r.get("stream");
        assertEquals(chat.get("content").asText(""), stream.get("content").asText(), out);
        assertEquals(chat.get("reasoning").asText(""), stream.get("reasoning").asText(), out);
        assertEquals(chat.get("toolCalls").size(), stream.get("calls").size(), out);
        assertEquals(chat.get("finish").asText(), stream.get("finish").asText(), out);
        for (String mode : List.of("required", "named")) {
            JsonNode m = r.get(mode);
            assertEquals("ok", m.get("order").asText(), out);
            assertEquals(1, m.get("whole").size(), out);
            assertEquals(1, m.get("stream").size(), out);
            JsonNode whole = m.get("whole").get(0);
            JsonNode streamed = m.get("stream").get(0);
            assertEquals("set_unit", streamed.get("name").asText(), out);
            assertEquals(whole.get("name").asText(), streamed.get("name").asText(), out);
            assertEquals(whole.get("arguments").asText(), streamed.get("arguments").asText(), out);
            assertTrue(ServerTestSupport.JSON.readTree(streamed.get("arguments").asText()).path("unit").asText()
                    .matches("celsius|fahrenheit"), out);
            // the arguments arrive as they are generated, not in one piece at the end
            assertTrue(streamed.get("pieces").asInt() > 1, out);
            assertEquals(m.get("wholeFinish").asText(), m.get("finish").asText(), out);
        }
        assertEquals("tool_calls", r.get("required").get("finish").asText(), out);
        assertEquals(400, r.get("unknownFunction").get("status").asInt(), out);
        assertTrue(r.get("unknownFunction").get("message").asText().contains("tool_choice"), out);
    }

    /** Tools whose arguments a random-weight model can finish within a few dozen tokens (enums only). */
    private static final String ENUM_TOOLS = """
            [{"type": "function", "function": {"name": "set_unit", "parameters": {"type": "object",
              "properties": {"unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}}, "required": ["unit"],
              "additionalProperties": false}}},
             {"type": "function", "function": {"name": "set_mode", "parameters": {"type": "object",
              "properties": {"mode": {"enum": ["fast", "slow", 3]}}, "required": ["mode"],
              "additionalProperties": false}}}]""";

    private static ObjectNode toolChoiceRequest(JsonNode toolChoice, long seed) throws IOException {
        ObjectNode b = ServerTestSupport.JSON.createObjectNode();
        b.put("model", "tiny-qwen3").put("max_tokens", 160).put("temperature", 1.0).put("seed", seed);
        b.putArray("messages").addObject().put("role", "user").put("content", "Set it up.");
        b.set("tools", ServerTestSupport.JSON.readTree(ENUM_TOOLS));
        b.set("tool_choice", toolChoice);
        return b;
    }

    /** The arguments of one call, checked against its tool's schema by hand (enum values, required, no others). */
    static void assertValidCall(JsonNode call) throws IOException {
        String name = call.get("function").get("name").asText();
        JsonNode args = ServerTestSupport.JSON.readTree(call.get("function").get("arguments").asText());
        assertEquals(1, args.size(), args.toString());
        switch (name) {
            case "set_unit" -> assertTrue(args.path("unit").asText("").matches("celsius|fahrenheit"), args.toString());
            case "set_mode" -> assertTrue(args.get("mode") != null && (args.get("mode").asText().matches("fast|slow")
                    || args.get("mode").isInt() && args.get("mode").asInt() == 3), args.toString());
            default -> throw new AssertionError("no such tool: " + name);
        }
    }

    @Test
    void requiredToolChoiceAlwaysGivesValidCalls() throws Exception {
        JsonNode required = ServerTestSupport.JSON.getNodeFactory().textNode("required");
        for (long seed = 1; seed <= 12; seed++) {
            // one call (maxItems 1): a random-weight model would rarely close an open-ended array in time
            ObjectNode req = toolChoiceRequest(required, seed).put("parallel_tool_calls", false);
            JsonNode r = t.postOk("/v1/chat/completions", req);
            JsonNode choice = r.get("choices").get(0);
            assertEquals("tool_calls", choice.get("finish_reason").asText(), r.toString());
            JsonNode calls = choice.get("message").get("tool_calls");
            assertEquals(1, calls.size(), r.toString());
            for (JsonNode c : calls) {
                assertValidCall(c);
            }
        }
    }

    @Test
    void namedToolChoiceGivesThatFunctionsArguments() throws Exception {
        JsonNode named = ServerTestSupport.JSON.readTree("{\"type\": \"function\", \"function\": {\"name\": \"set_mode\"}}");
        for (long seed = 1; seed <= 8; seed++) {
            JsonNode r = t.postOk("/v1/chat/completions", toolChoiceRequest(named, seed));
            JsonNode calls = r.get("choices").get(0).get("message").get("tool_calls");
            assertEquals(1, calls.size(), r.toString());
            assertEquals("set_mode", calls.get(0).get("function").get("name").asText());
            assertValidCall(calls.get(0));
        }
        ObjectNode both = toolChoiceRequest(named, 1);
        both.set("response_format", ServerTestSupport.JSON.readTree("{\"type\": \"json_object\"}"));
        HttpResponse<String> r = t.post("/v1/chat/completions", both.toString());
        assertEquals(400, r.statusCode(), r.body());
        assertTrue(r.body().contains("tool_choice"), r.body());
    }
}
