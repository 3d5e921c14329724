package io.radixkv.text.output;

import com.fasterxml.jackson.core.JsonProcessingException;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/**
 * The output of a generation constrained to a tool schema, read as vLLM reads it: for a named
 * {@code tool_choice} the output is the function's arguments object, for {@code required} it is a
 * JSON array of {@code {"name": ..., "parameters": {...}}}. The content is empty ({@code ""}), as
 * in vLLM's response; an output that does not parse (a constraint cut short by
 * {@code max_tokens}) is content.
 */
final class ConstrainedToolParser implements ToolCallParser {
    private final String function;

    private ConstrainedToolParser(String function) {
        this.function = function;
    }

    /** For {@code tool_choice: {"type": "function", "function": {"name": function}}}. */
    static ToolCallParser named(String function) {
        return new ConstrainedToolParser(function);
    }

    /** For {@code tool_choice: "required"}. */
    static ToolCallParser required() {
        return new ConstrainedToolParser(null);
    }

    @Override
    public String name() {
        return function == null ? "required" : "named";
    }

    @Override
    public ToolCalls parse(String output) {
        try {
            Object parsed = Json.loads(output);
            if (function != null) {
                // vLLM passes the constrained text on as the arguments
                return new ToolCalls("", List.of(new ToolCall(function, output)));
            }
            if (!(parsed instanceof List<?> list) || list.isEmpty()) {
                return ToolCalls.none(output);
            }
            List<ToolCall> calls = new ArrayList<>();
            for (Object o : list) {
                calls.add(Json.call(o, "parameters"));
            }
            return new ToolCalls("", calls);
        } catch (JsonProcessingException e) {
            return ToolCalls.none(output);
        }
    }

    /**
     * For {@code required}, each object of the array is a call; for a named function the whole
     * output is its arguments, sent as it comes (the first piece names the function).
     */
    StreamedCalls streamed() {
        if (function != null) {
            return StreamedCalls.whole(function);
        }
        return new StreamedCalls((content, from, calls) -> StreamedCalls.after(calls == 0 ? '[' : ',', content, from),
                Set.of("parameters"));
    }

    @Override
    public int contentEnd(String text) {
        return 0;
    }
}
