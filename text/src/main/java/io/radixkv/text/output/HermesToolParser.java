package io.radixkv.text.output;

import com.fasterxml.jackson.core.JsonProcessingException;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/**
 * vLLM's {@code hermes} parser (Hermes 2 Pro, Qwen2.5, Qwen3): each call is
 * {@code <tool_call>{"name": ..., "arguments": {...}}</tool_call>}; the last may lack its
 * closing tag (the output ended). The content is the text before the first
 * {@code <tool_call>}, null when empty. If any call is not such a JSON object, the whole output
 * is the content, as in vLLM.
 */
final class HermesToolParser implements ToolCallParser {
    static final HermesToolParser INSTANCE = new HermesToolParser();
    static final String START = "<tool_call>";
    static final String END = "</tool_call>";

    private HermesToolParser() {}

    @Override
    public String name() {
        return "hermes";
    }

    @Override
    public ToolCalls parse(String output) {
        int first = output.indexOf(START);
        if (first < 0) {
            return ToolCalls.none(output);
        }
        List<ToolCall> calls = new ArrayList<>();
        int at = first;
        try {
            while (at >= 0) {
                int body = at + START.length();
                int end = output.indexOf(END, body);
                String json = end < 0 ? output.substring(body) : output.substring(body, end);
                calls.add(Json.call(Json.loads(json), "arguments"));
                at = end < 0 ? -1 : output.indexOf(START, end + END.length());
            }
        } catch (JsonProcessingException e) {
            return ToolCalls.none(output);
        }
        return new ToolCalls(first == 0 ? null : output.substring(0, first), calls);
    }

    /** Each call starts after a {@code <tool_call>}; text between calls is skipped, as in {@link #parse}. */
    StreamedCalls streamed() {
        return new StreamedCalls((content, from, calls) -> {
            int at = content.indexOf(START, from);
            return at < 0 ? StreamedCalls.WAIT : at + START.length();
        }, Set.of("arguments"));
    }

    @Override
    public int contentEnd(String text) {
        return Markers.before(text, START);
    }
}
