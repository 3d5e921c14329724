package io.radixkv.text.output;

import java.util.List;

/**
 * A chat model's output as vLLM's OpenAI server returns it: reasoning first
 * ({@code --reasoning-parser}), then the function calls in the rest ({@code --tool-call-parser}).
 * Either part may be off. Immutable and thread-safe; {@link #stream()} gives a per-request
 * state.
 *
 * @param reasoning the reasoning parser, or null
 * @param thinkingOpen whether the prompt left the model inside a think block
 * @param tools the tool parser, or null when calls are not parsed ({@code tool_choice: none},
 *     no tools)
 */
public record OutputParser(ReasoningParser reasoning, boolean thinkingOpen, ToolCallParser tools) {

    /**
     * The whole output split up.
     *
     * @param reasoning the reasoning text, or null when there is none
     * @param content the message content, or null when there is none (only calls, only reasoning)
     * @param calls the function calls, empty when none
     */
    public record Parsed(String reasoning, String content, List<ToolCall> calls) {
        public Parsed {
            calls = List.copyOf(calls);
        }
    }

    /** Text to send now: either part may be empty. */
    public record Delta(String reasoning, String content) {
        public boolean isEmpty() {
            return reasoning.isEmpty() && content.isEmpty();
        }
    }

    /** Parses a whole output. */
    public Parsed parse(String output) {
        String r = null;
        String content = output;
        if (reasoning != null) {
            ReasoningParser.Split s = reasoning.split(output, thinkingOpen, true);
            r = s.reasoning();
            content = s.content() == null || s.content().isEmpty() && r != null ? null : s.content();
        }
        if (tools == null || content == null) {
            return new Parsed(r, content, List.of());
        }
        ToolCalls t = tools.parse(content);
        return new Parsed(r, t.content(), t.calls());
    }

    public Stream stream() {
        return new Stream();
    }

    /**
     * One output as it is generated. Reasoning and content are passed on as soon as no later
     * text can change them; calls are decided on the whole output ({@link #finish}), so the
     * deltas of a stream concatenate to {@link #parse} of the output. Single-threaded.
     */
    public final class Stream {
        private final StringBuilder out = new StringBuilder();
        private int reasoningSent;
        private int contentSent;

        private Stream() {}

        /** Adds generated text; returns what can be sent now. */
        public Delta append(String piece) {
            out.append(piece);
            String text = out.toString();
            String r = "";
            String content = text;
            if (reasoning != null) {
                ReasoningParser.Split s = reasoning.split(text, thinkingOpen, false);
                r = s.reasoning() == null ? "" : s.reasoning();
                content = s.content() == null ? "" : s.content();
            }
            String safe = tools == null ? content : content.substring(0, tools.contentEnd(content));
            return take(r, safe);
        }

        /** The output is complete: the last reasoning and content to send, and the calls. */
        public Parsed finish() {
            Parsed p = parse(out.toString());
            Delta last = take(p.reasoning() == null ? "" : p.reasoning(), p.content() == null ? "" : p.content());
            return new Parsed(last.reasoning(), last.content(), p.calls());
        }

        private Delta take(String r, String c) {
            String dr = r.length() > reasoningSent ? r.substring(reasoningSent) : "";
            String dc = c.length() > contentSent ? c.substring(contentSent) : "";
            reasoningSent = Math.max(reasoningSent, r.length());
            contentSent = Math.max(contentSent, c.length());
            return new Delta(dr, dc);
        }
    }
}
