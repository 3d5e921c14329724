package io.radixkv.text.output;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
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
        // streamed, the call went out before its object broke: it stays a call, as in vLLM's stream
        check(tools(HERMES), out, parsed(null, out), parsed(null, "Sure.", call("get_weather", "{\"city\": \"Paris\"}")));
        String noName = "<tool_call>{\"arguments\": {}}</tool_call>";
        check(tools(HERMES), noName, parsed(null, noName));
        String plain = "No tools needed: <tool_ is not a tag.";
        check(tools(HERMES), plain, parsed(null, plain));
    }

    @Test
    void hermesArgumentsStreamAsTheyAreGenerated() {
        OutputParser.Stream s = tools(HERMES).stream();
        OutputParser.Delta before = s.append("Checking.\n<tool_call>\n{\"name\": \"get_weath");
        assertEquals(List.of(), before.calls());
        OutputParser.Delta named = s.append("er\", \"arguments\": {\"city\": \"Par");
        assertEquals(List.of(new ToolCallDelta(0, "get_weather", "{\"city\": \"Par")), named.calls());
        assertEquals(List.of(new ToolCallDelta(0, null, "is\"}")), s.append("is\"}}\n</tool_call>").calls());
        OutputParser.Delta second = s.append("\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"h24\": tr");
        assertEquals(List.of(new ToolCallDelta(1, "get_time", "{\"h24\": ")), second.calls());
        assertEquals(List.of(new ToolCallDelta(1, null, "true}")), s.append("ue}}\n</tool_call>").calls());
        assertTrue(s.finish().isEmpty());
    }

    @Test
    void llamaArgumentsStreamAsTheyAreGenerated() {
        OutputParser.Stream s = tools(LLAMA).stream();
        assertEquals(List.of(new ToolCallDelta(0, "a", "{\"x\": ")), s.append("<|python_tag|>{\"name\": \"a\", \"parameters\": {\"x\": 1").calls());
        assertEquals(List.of(new ToolCallDelta(0, null, "1}"), new ToolCallDelta(1, "b", "[")),
                s.append("}};{\"name\":\"b\",\"parameters\":[").calls());
        assertEquals(List.of(new ToolCallDelta(1, null, "]")), s.append("]}").calls());
        assertTrue(s.finish().isEmpty());
    }

    @Test
    void streamedArgumentsAreWrittenAsJsonDumpsWritesThem() {
        // escapes decoded and re-escaped, numbers and literals as Python writes them, keys in
        // order, spacing normalised, the arguments before the name held until the name is known
        String out = "<tool_call>{\"arguments\": {\"s\":\"a\\\"b\\\\c\\/d\\n\\u00e9\\ud83d\\ude00\\u0001\",\"n\":[1.0,1e5,-0,"
                + "12345678901234567890,2.5E-3],\"o\":{\"k\":null,\"t\":false,\"e\":{},\"a\":[]}}, \"name\": \"f\"}</tool_call>";
        OutputParser.Parsed want = tools(HERMES).parse(out);
        assertEquals(1, want.calls().size(), out);
        check(tools(HERMES), out, want);
        String other = "<tool_call>\n{\"name\": \"g\", \"extra\": {\"x\": [1, {\"y\": \"}\"}]}, \"arguments\": "
                + "{ \"q\" : \"Zürich ☃\" , \"list\" : [ \"a\" , \"b\" ] } }\n</tool_call>";
        check(tools(HERMES), other, parsed(null, null, call("g", "{\"q\": \"Zürich ☃\", \"list\": [\"a\", \"b\"]}")));
    }

    @Test
    void constrainedToolChoiceCallsStream() {
        OutputParser required = tools(ToolCallParser.constrainedRequired());
        String out = "[{\"name\": \"set_unit\", \"parameters\": {\"unit\":\"celsius\"}}, {\"name\":\"set_mode\","
                + "\"parameters\":{\"mode\":3}}]";
        check(required, out, parsed(null, "", call("set_unit", "{\"unit\": \"celsius\"}"), call("set_mode", "{\"mode\": 3}")));
        OutputParser named = tools(ToolCallParser.constrainedNamed("set_unit"));
        OutputParser.Stream s = named.stream();
        assertEquals(List.of(new ToolCallDelta(0, "set_unit", "{\"unit\":")), s.append("{\"unit\":").calls());
        assertEquals(List.of(new ToolCallDelta(0, null, " \"celsius\"}")), s.append(" \"celsius\"}").calls());
        assertTrue(s.finish().isEmpty());
        check(named, "{\"unit\": \"celsius\"}", parsed(null, "", call("set_unit", "{\"unit\": \"celsius\"}")));
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
        // streamed, each of these calls was named before it broke
        String malformed = "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}";
        check(tools(LLAMA), malformed, parsed(null, malformed), parsed(null, null, call("get_weather", "{\"city\": \"Paris\"}")));
        String noArgs = "{\"name\": \"get_weather\"}";
        check(tools(LLAMA), noArgs, parsed(null, noArgs), parsed(null, null, call("get_weather", "")));
        String trailing = "{\"name\": \"a\", \"parameters\": {}} and then some";
        check(tools(LLAMA), trailing, parsed(null, trailing), parsed(null, null, call("a", "{}")));
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

    /**
     * The non-streamed parse is {@code want}, and streams in pieces of 1..8 characters, at random,
     * and split in two at every character boundary give the same.
     */
    private static void check(OutputParser p, String out, OutputParser.Parsed want) {
        check(p, out, want, want);
    }

    /** As above, where the stream gives {@code streamed} (a malformed call sent before it broke). */
    private static void check(OutputParser p, String out, OutputParser.Parsed want, OutputParser.Parsed streamed) {
        assertEquals(want, p.parse(out), out);
        Random random = new Random(out.hashCode());
        for (int size = 0; size <= 8; size++) {
            List<String> pieces = new ArrayList<>();
            int k = 0;
            while (k < out.length()) {
                int n = size == 0 ? 1 + random.nextInt(12) : size;
                int end = Math.min(out.length(), k + n);
                pieces.add(out.substring(k, end));
                k = end;
            }
            StreamedOutput.assertStreams(p, pieces, streamed, out + " in pieces of " + (size == 0 ? "random size" : size));
        }
        for (int cut = 0; cut <= out.length(); cut++) {
            StreamedOutput.assertStreams(p, List.of(out.substring(0, cut), out.substring(cut)), streamed,
                    out + " cut at " + cut);
        }
        if (want.content() == null) {
            assertNull(p.parse(out).content());
        }
    }
}
