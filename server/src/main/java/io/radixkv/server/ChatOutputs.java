package io.radixkv.server;

import com.fasterxml.jackson.databind.JsonNode;
import io.radixkv.text.output.OutputParser;
import io.radixkv.text.output.ReasoningParser;
import io.radixkv.text.output.ToolCallParser;
import java.util.Optional;

/**
 * Decides, per chat request, how its output is read ({@link ChatOutput}): the server's
 * {@link ChatOutputConfig}, the served model's family and the request's tool fields, with vLLM's
 * rules: {@code tool_choice: auto} needs {@code --enable-auto-tool-choice} and a parser,
 * {@code none} parses no calls, {@code required} and a named function are read from the
 * constrained JSON when the request's generation follows the tool schema ({@code constrained}), and by the tool parser
 * otherwise. Thread-safe.
 */
final class ChatOutputs {
    private final ChatOutputConfig config;
    private final Optional<ToolCallParser> toolParser;
    private final Optional<ReasoningParser> reasoning;

    /**
     * @param modelType the served model's Hugging Face {@code model_type}, which picks the tool
     *     parser when the config names none
     */
    ChatOutputs(ChatOutputConfig config, String modelType) {
        this.config = config;
        this.toolParser = config.toolCallParser() != null ? ToolCallParser.named(config.toolCallParser())
                : ToolCallParser.forModelType(modelType);
        this.reasoning = config.reasoningParser() == null ? Optional.empty()
                : ReasoningParser.named(config.reasoningParser());
    }

    boolean excludeToolsWhenNone() {
        return config.excludeToolsWhenToolChoiceNone();
    }

    /**
     * How the output of {@code body} (rendered as {@code prompt}) is read; 400 for a tool choice
     * the server cannot serve.
     */
    ChatOutput of(JsonNode body, ToolRequest tools, String prompt, boolean constrained) {
        ToolCallParser parser = switch (tools.choice()) {
            case NONE -> null;
            case AUTO -> {
                if (!config.enableAutoToolChoice() || toolParser.isEmpty()) {
                    throw ApiException.badRequest("tool_choice", "\"auto\" tool choice requires "
                            + "--enable-auto-tool-choice and --tool-call-parser to be set");
                }
                yield toolParser.get();
            }
            case REQUIRED, NAMED -> {
                JsonNode schema = tools.schema();
                if (schema != null && constrained) {
                    yield tools.choice() == ToolRequest.Choice.NAMED ? ToolCallParser.constrainedNamed(tools.function())
                            : ToolCallParser.constrainedRequired();
                }
                if (toolParser.isEmpty()) {
                    throw ApiException.badRequest("tool_choice", "tool_choice "
                            + (tools.function() != null ? "naming a function" : "\"required\"")
                            + " needs a tool call parser for this model: start the server with --tool-call-parser");
                }
                yield toolParser.get();
            }
        };
        if (parser == null && reasoning.isEmpty()) {
            return ChatOutput.PLAIN;
        }
        ReasoningParser r = reasoning.orElse(null);
        return new ChatOutput(new OutputParser(r, r != null && ReasoningParser.opensThinking(prompt), parser),
                tools.choice() == ToolRequest.Choice.NAMED, !tools.parallel());
    }
}
