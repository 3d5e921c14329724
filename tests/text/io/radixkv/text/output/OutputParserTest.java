package io.radixkv.text.output;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * Recorded model outputs of each family parsed as vLLM's parsers return them (content, calls
 * with arguments as Python's json.dumps writes them, malformed calls left as content), and
 * streamed in pieces of every size: the deltas concatenate to the non-streamed result.
 */
class OutputParserTest {
    private static final ToolCallParser HERMES = ToolCallParser.named("hermes").orElseThrow();
    private static final ToolCallParser LLAMA = ToolCallParser.named("llama3_json").orElseThrow();
    private static final ToolCallParser PYTHONIC = ToolCallParser.named("pythonic").orElseThrow();
    private static final ReasoningParser QWEN3 = ReasoningParser.named("qwen3").orElseThrow();

    private static OutputParser tools(ToolCallParser p) {
        return new OutputParser(null, false, p);
    }

    private static ToolCall call(String name, String args) {
        return new ToolCall(name, args);
    }

    private static OutputParser.Parsed parsed(String reasoning, String content, ToolCall... calls) {
        return new OutputParser.Parsed(reasoning, content, List.of(calls));
    }

    @Test
    void hermesSingleCall() {
        String out = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\":\"Paris\",\"unit\" : \"celsius\"}}\n</tool_call>";
        check(tools(HERMES), out, parsed(null, null,
                call("get_weather", "{\"city\": \"Paris\", \"unit\": \"celsius\"}")));
    }

    @Test
    void hermesTextBeforeAndParallelCalls() {
        String out = "Let me look both up.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Zürich\"}}\n"
                + "</tool_call>\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"tz\": \"Asia/Tokyo\", \"h24\": true, "
                + "\"n\": [1, 2.5, null]}}\n</tool_call>";
        check(tools(HERMES), out, parsed(null, "Let me look both up.\n",
                call("get_weather", "{\"city\": \"Zürich\"}"),
                call("get_time", "{\"tz\": \"Asia/Tokyo\", \"h24\": true, \"n\": [1, 2.5, null]}")));
    }

    @Test
    void hermesUnclosedLastCallIsStillACall() {
        // the output ended (EOS) before </tool_call>: vLLM's pattern takes the rest of the text
        String out = "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n";
        check(tools(HERMES), out, parsed(null, null, call("get_time", "{}")));
    }

    @Test
    void hermesMalformedJsonIsContent() {
        String out = "Sure.<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}\n</tool_call>";
        check(tools(HERMES), out, parsed(null, out));
        String noName = "<tool_call>{\"arguments\": {}}</tool_call>";
        check(tools(HERMES), noName, parsed(null, noName));
        String plain = "No tools needed: <tool_ is not a tag.";
        check(tools(HERMES), plain, parsed(null, plain));
    }

    @Test
    void llamaJsonCalls() {
        check(tools(LLAMA), "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}",
                parsed(null, null, call("get_weather", "{\"city\": \"Paris\"}")));
        check(tools(LLAMA), "<|python_tag|>{\"name\": \"a\", \"arguments\": {\"x\": 1}}; {\"name\": \"b\", \"parameters\": "
                + "{\"s\": \"semi;colon {brace}\"}}",
                parsed(null, null, call("a", "{\"x\": 1}"), call("b", "{\"s\": \"semi;colon {brace}\"}")));
    }

    @Test
    void llamaTextOrMalformedIsContent() {
        String text = "The weather is fine: {\"name\": \"x\"}";
        check(tools(LLAMA), text, parsed(null, text));
        String malformed = "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}";
        check(tools(LLAMA), malformed, parsed(null, malformed));
        String noArgs = "{\"name\": \"get_weather\"}";
        check(tools(LLAMA), noArgs, parsed(null, noArgs));
        String trailing = "{\"name\": \"a\", \"parameters\": {}} and then some";
        check(tools(LLAMA), trailing, parsed(null, trailing));
    }

    @Test
    void pythonicCalls() {
        check(tools(PYTHONIC), "[get_weather(city='Paris', unit=\"celsius\"), get_time(tz=\"Asia/Tokyo\", "
                        + "opts={'h24': True, 'n': [1, -2.5, None]}, note='it\\'s')]",
                parsed(null, null, call("get_weather", "{\"city\": \"Paris\", \"unit\": \"celsius\"}"),
                        call("get_time", "{\"tz\": \"Asia/Tokyo\", \"opts\": {\"h24\": true, \"n\": [1, -2.5, null]}, "
                                + "\"note\": \"it's\"}")));
        check(tools(PYTHONIC), "[get_time()]", parsed(null, null, call("get_time", "{}")));
    }

    @Test
    void pythonicTextOrMalformedIsContent() {
        for (String out : List.of("Here: [get_time()]", "[get_weather(city=Paris)]", "[get_weather('Paris')]",
                "[get_time()] trailing", "[get_weather(city='Paris'", "[1, 2]")) {
            check(tools(PYTHONIC), out, parsed(null, out));
        }
    }

    @Test
    void qwen3ReasoningThenCall() {
        OutputParser p = new OutputParser(QWEN3, false, HERMES);
        String out = "<think>\nThe user wants the weather.\n</think>\n\n<tool_call>\n{\"name\": \"get_weather\", "
                + "\"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";
        check(p, out, parsed("\nThe user wants the weather.\n", "\n\n", call("get_weather", "{\"city\": \"Paris\"}")));
    }

    @Test
    void qwen3ReasoningSplits() {
        OutputParser p = new OutputParser(QWEN3, false, null);
        check(p, "<think>\nhmm\n</think>\n\nParis.", parsed("\nhmm\n", "\n\nParis."));
        check(p, "<think>\ncut short", parsed("\ncut short", null));
        check(p, "<think>\nall reasoning</think>", parsed("\nall reasoning", null));
        // enable_thinking: false renders an empty think block into the prompt: the output is content
        check(p, "Paris.", parsed(null, "Paris."));
        check(p, "<thin", parsed(null, "<thin"));
        // a prompt that ends inside <think>: the output starts as reasoning
        assertTrue(ReasoningParser.opensThinking("<|im_start|>assistant\n<think>\n"));
        check(new OutputParser(QWEN3, true, null), "plan\n</think>\n\nParis.", parsed("plan\n", "\n\nParis."));
    }

    @Test
    void noParsersPassTextThrough() {
        check(new OutputParser(null, false, null), "<think>x</think><tool_call>{}", parsed(null, "<think>x</think><tool_call>{}"));
        check(new OutputParser(null, false, null), "", parsed(null, ""));
    }

    @Test
    void familyDefaults() {
        assertEquals("llama3_json", ToolCallParser.forModelType("llama").orElseThrow().name());
        assertEquals("hermes", ToolCallParser.forModelType("qwen2").orElseThrow().name());
        assertEquals("hermes", ToolCallParser.forModelType("qwen3").orElseThrow().name());
        assertEquals("pythonic", ToolCallParser.forModelType("gemma3_text").orElseThrow().name());
        assertTrue(ToolCallParser.forModelType("mistral").isEmpty());
        assertTrue(ToolCallParser.named("mistral").isEmpty());
        assertTrue(ReasoningParser.named("deepseek_r1").isEmpty());
    }

    /** The non-streamed parse is {@code want}, and streams in pieces of 1..8 characters and at random give the same. */
    private static void check(OutputParser p, String out, OutputParser.Parsed want) {
        assertEquals(want, p.parse(out), out);
        Random random = new Random(out.hashCode());
        for (int size = 0; size <= 8; size++) {
            OutputParser.Stream s = p.stream();
            StringBuilder reasoning = new StringBuilder();
            StringBuilder content = new StringBuilder();
            int k = 0;
            while (k < out.length()) {
                int n = size == 0 ? 1 + random.nextInt(12) : size;
                int end = Math.min(out.length(), k + n);
                OutputParser.Delta d = s.append(out.substring(k, end));
                reasoning.append(d.reasoning());
                content.append(d.content());
                k = end;
            }
            OutputParser.Parsed last = s.finish();
            reasoning.append(last.reasoning());
            content.append(last.content());
            String label = out + " in pieces of " + (size == 0 ? "random size" : size);
            assertEquals(want.reasoning() == null ? "" : want.reasoning(), reasoning.toString(), label);
            assertEquals(want.content() == null ? "" : want.content(), content.toString(), label);
            assertEquals(want.calls(), last.calls(), label);
        }
        if (want.content() == null) {
            assertNull(p.parse(out).content());
        }
    }
}
