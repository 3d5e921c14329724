package io.radixkv.server;

import io.radixkv.text.output.ReasoningParser;
import io.radixkv.text.output.ToolCallParser;

/**
 * How chat completions read tool calls and reasoning out of the generated text: vLLM's serve
 * flags of the same names.
 *
 * @param toolCallParser {@code --tool-call-parser} ({@code hermes}, {@code llama3_json},
 *     {@code pythonic}); null picks the served model's family's parser (Llama: llama3_json;
 *     Qwen2/2.5, Qwen3: hermes; Gemma 3: pythonic), if it has one
 * @param enableAutoToolChoice {@code --enable-auto-tool-choice}: {@code tool_choice: auto} (the
 *     default when a request has tools) is served; without it such a request gets vLLM's 400
 * @param excludeToolsWhenToolChoiceNone {@code --exclude-tools-when-tool-choice-none}: with
 *     {@code tool_choice: none} the template gets no tools (by default it gets them and the output
 *     is not parsed for calls)
 * @param reasoningParser {@code --reasoning-parser} ({@code qwen3}), or null for none
 */
public record ChatOutputConfig(String toolCallParser, boolean enableAutoToolChoice,
                               boolean excludeToolsWhenToolChoiceNone, String reasoningParser) {
    /** No parser named, auto tool choice off, no reasoning parser: vLLM's defaults. */
    public static final ChatOutputConfig DEFAULT = new ChatOutputConfig(null, false, false, null);

    public ChatOutputConfig {
        if (toolCallParser != null && ToolCallParser.named(toolCallParser).isEmpty()) {
            throw new IllegalArgumentException("unknown tool call parser '" + toolCallParser
                    + "' (hermes, llama3_json, pythonic)");
        }
        if (reasoningParser != null && ReasoningParser.named(reasoningParser).isEmpty()) {
            throw new IllegalArgumentException("unknown reasoning parser '" + reasoningParser + "' (qwen3)");
        }
    }
}
