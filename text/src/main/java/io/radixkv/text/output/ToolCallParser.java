package io.radixkv.text.output;

import java.util.Locale;
import java.util.Optional;

/**
 * Finds the function calls in a model's output, as one of vLLM's {@code --tool-call-parser}s
 * does. Implementations are stateless and thread-safe.
 *
 * <p>Streaming contract: {@link #contentEnd} of any prefix of an output never decreases as the
 * prefix grows, and the text before it is a prefix of {@link #parse}'s content for the whole
 * output. {@link OutputParser.Stream} relies on both, so a streamed response concatenates to the
 * non-streamed one.
 */
public interface ToolCallParser {
    /** vLLM's name for this parser ({@code hermes}, {@code llama3_json}, {@code pythonic}). */
    String name();

    /** The calls in a whole output; malformed calls leave the whole output as content. */
    ToolCalls parse(String output);

    /**
     * How many leading characters of {@code text}, a prefix of an output still being generated,
     * are content whatever follows: they can be streamed before the output is complete.
     */
    int contentEnd(String text);

    /** The parser vLLM registers under {@code name}, if radixkv has it. */
    static Optional<ToolCallParser> named(String name) {
        return Optional.ofNullable(switch (name) {
            case "hermes" -> HermesToolParser.INSTANCE;
            case "llama3_json" -> Llama3JsonToolParser.INSTANCE;
            case "pythonic" -> PythonicToolParser.INSTANCE;
            default -> null;
        });
    }

    /**
     * The output of a generation constrained to the arguments schema of {@code function} (a
     * named {@code tool_choice}): the output is the arguments object.
     */
    static ToolCallParser constrainedNamed(String function) {
        return ConstrainedToolParser.named(function);
    }

    /**
     * The output of a generation constrained to vLLM's {@code tool_choice: "required"} schema: a
     * JSON array of {@code {"name", "parameters"}} objects.
     */
    static ToolCallParser constrainedRequired() {
        return ConstrainedToolParser.required();
    }

    /**
     * The parser for a model family (Hugging Face {@code model_type}): {@code llama3_json} for
     * Llama, {@code hermes} for Qwen2/2.5 and Qwen3, {@code pythonic} for Gemma 3.
     */
    static Optional<ToolCallParser> forModelType(String modelType) {
        String t = modelType == null ? "" : modelType.toLowerCase(Locale.ROOT);
        if (t.equals("llama")) {
            return named("llama3_json");
        } else if (t.startsWith("qwen2") || t.startsWith("qwen3")) {
            return named("hermes");
        } else if (t.startsWith("gemma3")) {
            return named("pythonic");
        }
        return Optional.empty();
    }
}
