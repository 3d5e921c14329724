package io.radixkv.text.output;

import java.util.Objects;

/**
 * A piece of a streamed function call, as vLLM streams {@code delta.tool_calls[i]}: the first
 * piece of each call carries its name, later ones only argument text; a call's argument pieces
 * concatenate to its {@link ToolCall#arguments()}.
 *
 * @param index the call's position in the output (0 for the first call)
 * @param name the function's name on the call's first piece, null on the others
 * @param arguments the next argument characters (may be empty on a first piece)
 */
public record ToolCallDelta(int index, String name, String arguments) {
    public ToolCallDelta {
        Objects.requireNonNull(arguments, "arguments");
    }
}
