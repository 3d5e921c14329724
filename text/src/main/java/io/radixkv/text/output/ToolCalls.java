package io.radixkv.text.output;

import java.util.List;

/**
 * What a tool parser made of a whole output: the calls it found and the text left as the
 * message's content.
 *
 * @param content the text before the calls (null when there is none), or the whole output when
 *     no call was found or the calls could not be parsed
 * @param calls the calls in output order; empty when none was made
 */
public record ToolCalls(String content, List<ToolCall> calls) {
    public ToolCalls {
        calls = List.copyOf(calls);
    }

    /** The whole output as content, no call. */
    static ToolCalls none(String output) {
        return new ToolCalls(output, List.of());
    }

    public boolean called() {
        return !calls.isEmpty();
    }
}
