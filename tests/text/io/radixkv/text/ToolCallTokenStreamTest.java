package io.radixkv.text;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.radixkv.text.output.OutputParser;
import io.radixkv.text.output.ReasoningParser;
import io.radixkv.text.output.StreamedOutput;
import io.radixkv.text.output.ToolCallParser;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Recorded tool-calling outputs of each family tokenized by the family's real tokenizer and
 * streamed one detokenized token at a time, as the server streams them: the reassembled
 * deltas equal the non-streamed parse, and every call was parsed.
 */
class ToolCallTokenStreamTest {

    private static void check(String tokenizer, OutputParser parser, String out, int calls) {
        HfTokenizer tok = TestData.tokenizer(tokenizer);
        int[] ids = tok.encode(out, false);
        IncrementalDetokenizer d = tok.detokenizer(new int[0], false);
        List<String> pieces = new ArrayList<>();
        for (int id : ids) {
            pieces.add(d.next(id));
        }
        pieces.add(d.flush());
        assertEquals(out, String.join("", pieces), "the pieces spell the output");
        OutputParser.Parsed want = parser.parse(out);
        assertEquals(calls, want.calls().size(), out);
        StreamedOutput.assertStreams(parser, pieces, want, tokenizer + " tokens of " + out);
    }

    @Test
    void llama3JsonCallsAtTokenBoundaries() {
        OutputParser p = new OutputParser(null, false, ToolCallParser.named("llama3_json").orElseThrow());
        check("llama3_1", p, "<|python_tag|>{\"name\": \"get_weather\", \"parameters\": {\"city\": \"San Francisco, CA\", "
                + "\"unit\": \"fahrenheit\", \"days\": 3}}; {\"name\": \"get_time\", \"parameters\": {\"tz\": \"America/Los_Angeles\"}}", 2);
        check("llama3_1", p, "{\"name\": \"search\", \"parameters\": {\"query\": \"caf\\u00e9 \\\"menu\\\"\\nprices\", \"limit\": 1.5e1}}", 1);
    }

    @Test
    void hermesCallsAtTokenBoundaries() {
        OutputParser p = new OutputParser(ReasoningParser.named("qwen3").orElseThrow(), false,
                ToolCallParser.named("hermes").orElseThrow());
        check("qwen3", p, "<think>\nTwo cities, two calls.\n</think>\n\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
                + "{\"city\": \"Zürich\", \"unit\": \"celsius\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"get_weather\", "
                + "\"arguments\": {\"city\": \"東京\", \"unit\": \"celsius\", \"hours\": [6, 12, 18]}}\n</tool_call>", 2);
    }

    @Test
    void pythonicCallsAtTokenBoundaries() {
        OutputParser p = new OutputParser(null, false, ToolCallParser.named("pythonic").orElseThrow());
        check("gemma3", p, "[get_weather(city='Paris', unit='celsius'), get_time(tz='Europe/Paris')]", 2);
    }
}
