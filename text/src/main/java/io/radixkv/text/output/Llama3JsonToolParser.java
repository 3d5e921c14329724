package io.radixkv.text.output;

import com.fasterxml.jackson.core.JsonProcessingException;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/**
 * vLLM's {@code llama3_json} parser (Llama 3.1, 3.2 and 3.3 with JSON tool calling): an output
 * that starts with {@code <|python_tag|>} or {@code {} is one or more objects
 * {@code {"name": ..., "parameters": {...}}} (or {@code "arguments"}) separated by {@code ;};
 * then the content is null. Any other output, or one whose objects do not parse, is all content.
 *
 * <p>vLLM's non-streamed path also finds an object after leading text (and drops that text),
 * while its streamed path does not; radixkv follows the streamed rule in both, so the two
 * agree.
 */
final class Llama3JsonToolParser implements ToolCallParser {
    static final Llama3JsonToolParser INSTANCE = new Llama3JsonToolParser();
    static final String PYTHON_TAG = "<|python_tag|>";

    private Llama3JsonToolParser() {}

    @Override
    public String name() {
        return "llama3_json";
    }

    @Override
    public ToolCalls parse(String output) {
        String body = output.startsWith(PYTHON_TAG) ? output.substring(PYTHON_TAG.length()) : output;
        if (!body.startsWith("{")) {
            return ToolCalls.none(output);
        }
        List<ToolCall> calls = new ArrayList<>();
        try {
            for (String object : JsonObjects.split(body, ';')) {
                Object parsed = Json.loads(object);
                boolean hasArguments = parsed instanceof java.util.Map<?, ?> m && m.containsKey("arguments");
                calls.add(Json.call(parsed, hasArguments ? "arguments" : "parameters"));
            }
        } catch (JsonProcessingException | IllegalArgumentException e) {
            return ToolCalls.none(output);
        }
        return new ToolCalls(null, calls);
    }

    /**
     * The first call starts the output (after {@code <|python_tag|>}), each later one after a
     * {@code ;}. A call streams the first of {@code parameters} and {@code arguments} it holds.
     */
    StreamedCalls streamed() {
        return new StreamedCalls((content, from, calls) -> {
            if (calls == 0 && from == 0) {
                if (Markers.isPrefixOf(content, PYTHON_TAG)) {
                    return StreamedCalls.WAIT;
                }
                int at = content.startsWith(PYTHON_TAG) ? PYTHON_TAG.length() : 0;
                if (content.length() == at) {
                    return StreamedCalls.WAIT;
                }
                return content.charAt(at) == '{' ? at : StreamedCalls.NONE;
            }
            return StreamedCalls.after(';', content, from);
        }, Set.of("parameters", "arguments"));
    }

    @Override
    public int contentEnd(String text) {
        return Markers.isPrefixOf(text, PYTHON_TAG) || text.startsWith(PYTHON_TAG) || text.startsWith("{")
                ? 0 : text.length();
    }
}
