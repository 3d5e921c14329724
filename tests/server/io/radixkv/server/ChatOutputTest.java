package io.radixkv.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.radixkv.text.output.OutputParser;
import io.radixkv.text.output.ReasoningParser;
import io.radixkv.text.output.ToolCallParser;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The assistant message and stream deltas of recorded outputs, in vLLM's OpenAI shapes:
 * {@code tool_calls} with {@code chatcmpl-tool-} ids and JSON-string arguments,
 * {@code reasoning_content}, finish reason {@code tool_calls}; streamed deltas (index, id, type
 * and name first, then argument pieces) concatenate to the non-streamed message.
 */
class ChatOutputTest {
    private static final ToolCallParser HERMES = ToolCallParser.named("hermes").orElseThrow();

    private static ChatOutput output(ToolCallParser tools, boolean reasoning, boolean named, boolean firstOnly) {
        return new ChatOutput(new OutputParser(reasoning ? ReasoningParser.named("qwen3").orElseThrow() : null, false,
                tools), named, firstOnly);
    }

    private static final String QWEN3_PARALLEL = "<think>\nTwo lookups.\n</think>\n\nChecking.\n<tool_call>\n"
            + "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\n<tool_call>\n"
            + "{\"name\": \"get_time\", \"arguments\": {\"tz\": \"Asia/Tokyo\"}}\n</tool_call>";

    @Test
    void messageWithReasoningTextAndParallelCalls() {
        ObjectNode m = ServerTestSupport.JSON.createObjectNode().put("role", "assistant");
        String reason = output(HERMES, true, false, false).message(m, QWEN3_PARALLEL, "stop");
        assertEquals("tool_calls", reason);
        assertEquals("\nTwo lookups.\n", m.get("reasoning_content").asText());
        assertEquals("\n\nChecking.\n", m.get("content").asText());
        JsonNode calls = m.get("tool_calls");
        assertEquals(2, calls.size());
        assertTrue(calls.get(0).get("id").asText().matches("chatcmpl-tool-[0-9a-f]{32}"), calls.toString());
        assertEquals("function", calls.get(0).get("type").asText());
        assertEquals("get_weather", calls.get(0).get("function").get("name").asText());
        assertEquals("{\"city\": \"Paris\"}", calls.get(0).get("function").get("arguments").asText());
        assertEquals("{\"tz\": \"Asia/Tokyo\"}", calls.get(1).get("function").get("arguments").asText());
    }

    @Test
    void onlyACallGivesNullContent() {
        ObjectNode m = ServerTestSupport.JSON.createObjectNode();
        output(HERMES, false, false, false).message(m, "<tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call>",
                "stop");
        assertTrue(m.get("content").isNull());
        assertEquals("{}", m.get("tool_calls").get(0).get("function").get("arguments").asText());
    }

    @Test
    void malformedCallIsContentAndFinishesAsTheModel() {
        String out = "<tool_call>{\"name\": \"f\", \"arguments\": {</tool_call>";
        ObjectNode m = ServerTestSupport.JSON.createObjectNode();
        assertEquals("length", output(HERMES, false, false, false).message(m, out, "length"));
        assertEquals(out, m.get("content").asText());
        assertEquals(0, m.get("tool_calls").size());
    }

    @Test
    void parallelToolCallsFalseKeepsTheFirst() {
        ObjectNode m = ServerTestSupport.JSON.createObjectNode();
        output(HERMES, true, false, true).message(m, QWEN3_PARALLEL, "stop");
        assertEquals(1, m.get("tool_calls").size());
        assertEquals("get_weather", m.get("tool_calls").get(0).get("function").get("name").asText());
    }

    @Test
    void namedChoiceFinishesWithTheModelsReason() {
        ObjectNode m = ServerTestSupport.JSON.createObjectNode();
        assertEquals("stop", output(HERMES, false, true, false).message(m, QWEN3_PARALLEL.substring(
                QWEN3_PARALLEL.indexOf("<tool_call>")), "stop"));
        assertEquals(2, m.get("tool_calls").size());
    }

    @Test
    void plainIsTheTextAsItIs() {
        ObjectNode m = ServerTestSupport.JSON.createObjectNode();
        assertEquals("stop", ChatOutput.PLAIN.message(m, QWEN3_PARALLEL, "stop"));
        assertEquals(QWEN3_PARALLEL, m.get("content").asText());
        assertEquals(List.of(ServerTestSupport.JSON.createObjectNode().put("content", "<tool_call>")),
                ChatOutput.PLAIN.stream().deltas("<tool_call>"));
    }

    @Test
    void streamConcatenatesToTheMessage() {
        for (ChatOutput o : List.of(output(HERMES, true, false, false), output(HERMES, true, false, true))) {
            ObjectNode m = ServerTestSupport.JSON.createObjectNode();
            String reason = o.message(m, QWEN3_PARALLEL, "stop");
            ChatOutput.Stream s = o.stream();
            List<ObjectNode> deltas = new ArrayList<>();
            for (int k = 0; k < QWEN3_PARALLEL.length(); k += 3) {
                deltas.addAll(s.deltas(QWEN3_PARALLEL.substring(k, Math.min(QWEN3_PARALLEL.length(), k + 3))));
            }
            deltas.addAll(s.finish());
            assertEquals(reason, s.finishReason("stop"));
            StringBuilder reasoning = new StringBuilder();
            StringBuilder content = new StringBuilder();
            List<ObjectNode> calls = new ArrayList<>();
            for (ObjectNode d : deltas) {
                reasoning.append(d.path("reasoning_content").asText(""));
                content.append(d.path("content").asText(""));
                for (JsonNode c : d.path("tool_calls")) {
                    int index = c.get("index").asInt();
                    if (index == calls.size()) {
                        // a call's first chunk: index, id, type and name
                        assertTrue(c.has("id") && c.has("type") && c.get("function").has("name"), c.toString());
                        assertEquals("", c.get("function").get("arguments").asText(), c.toString());
                        calls.add(ServerTestSupport.JSON.createObjectNode().put("name", c.get("function").get("name")
                                .asText()).put("arguments", "").put("id", c.get("id").asText()));
                    } else {
                        // later chunks carry argument pieces only: the name and id are not repeated
                        assertTrue(!c.has("id") && !c.get("function").has("name"), c.toString());
                    }
                    ObjectNode call = calls.get(index);
                    call.put("arguments", call.get("arguments").asText() + c.get("function").get("arguments").asText());
                }
            }
            assertEquals(m.get("reasoning_content").asText(), reasoning.toString());
            assertEquals(m.get("content").asText(), content.toString());
            assertEquals(m.get("tool_calls").size(), calls.size());
            for (int i = 0; i < calls.size(); i++) {
                assertEquals(m.get("tool_calls").get(i).get("function").get("name"), calls.get(i).get("name"));
                assertEquals(m.get("tool_calls").get(i).get("function").get("arguments"), calls.get(i).get("arguments"));
            }
        }
    }
}
