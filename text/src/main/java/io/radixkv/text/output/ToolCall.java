package io.radixkv.text.output;

import java.util.Objects;

/**
 * One function call found in a model's output.
 *
 * @param name the function's name
 * @param arguments its arguments as a JSON string, written as vLLM writes them (Python's
 *     {@code json.dumps(arguments, ensure_ascii=False)}: {@code ", "} and {@code ": "} separators)
 */
public record ToolCall(String name, String arguments) {
    public ToolCall {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(arguments, "arguments");
    }
}
