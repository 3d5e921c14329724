package io.radixkv.text.output;

import java.util.Optional;

/**
 * Splits a model's thinking from its answer, as vLLM's {@code --reasoning-parser qwen3}:
 * an output that starts with {@code <think>} (or whose prompt ended inside an open
 * {@code <think>}) is reasoning up to the first {@code </think>} and content after it; if
 * {@code </think>} never comes (the output was cut short) all of it is reasoning. Any other
 * output is all content, so {@code enable_thinking: false} (whose prompt already holds an empty
 * think block) gives content only.
 *
 * <p>vLLM's newer parser also accepts a {@code <think>} after leading text; radixkv decides at
 * the first characters, so the streamed split is final as soon as it is sent.
 */
public final class ReasoningParser {
    static final String START = "<think>";
    static final String END = "</think>";
    private static final ReasoningParser QWEN3 = new ReasoningParser();

    private ReasoningParser() {}

    /** The parser vLLM registers under {@code name} ({@code qwen3}), if radixkv has it. */
    public static Optional<ReasoningParser> named(String name) {
        return "qwen3".equals(name) ? Optional.of(QWEN3) : Optional.empty();
    }

    /** Whether a rendered prompt leaves the model inside an open think block. */
    public static boolean opensThinking(String prompt) {
        String p = prompt.stripTrailing();
        return p.endsWith(START);
    }

    /**
     * The split of {@code text}, a prefix of an output: {@code reasoning} is what is certainly
     * reasoning so far (a partial {@code </think>} at the end is held back), {@code content}
     * the text after the reasoning, or null while it has not started (or cannot yet be told).
     */
    Split split(String text, boolean open, boolean complete) {
        int from = 0;
        if (!open) {
            if (!complete && Markers.isPrefixOf(text, START)) {
                return new Split("", null);
            }
            if (!text.startsWith(START)) {
                return new Split(null, text);
            }
            from = START.length();
        }
        int end = text.indexOf(END, from);
        if (end >= 0) {
            return new Split(text.substring(from, end), text.substring(end + END.length()));
        }
        String rest = text.substring(from);
        return new Split(complete ? rest : rest.substring(0, Markers.before(rest, END)), null);
    }

    /** Reasoning (null when the output has none) and content (null when not started). */
    record Split(String reasoning, String content) {}
}
