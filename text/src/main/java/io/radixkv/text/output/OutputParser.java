package io.radixkv.text.output;

import java.util.ArrayList;
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

    /**
     * What to send now: text (either part may be empty) and pieces of function calls.
     *
     * @param calls call pieces in output order, empty when none
     */
    public record Delta(String reasoning, String content, List<ToolCallDelta> calls) {
        public Delta {
            calls = List.copyOf(calls);
        }

        public boolean isEmpty() {
            return reasoning.isEmpty() && content.isEmpty() && calls.isEmpty();
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
     * text can change them. Calls of the {@code hermes} and {@code llama3_json} parsers stream as
     * vLLM streams them (name first, then the arguments as they grow), other parsers' calls come
     * whole when the output is complete ({@link #finish}). For any output whose calls parse, the
     * deltas of a stream concatenate to {@link #parse} of the output; once a call has been sent,
     * an output that stops being a call (malformed JSON) keeps the calls sent, as vLLM's stream
     * does, where {@link #parse} returns the whole output as content. Single-threaded.
     */
    public final class Stream {
        private final StringBuilder out = new StringBuilder();
        private final StreamedCalls calls = tools == null ? null : StreamedCalls.of(tools);
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
            return take(r, safe, calls == null ? List.of() : calls.feed(content));
        }

        /** The output is complete: the last reasoning, content and call pieces to send. */
        public Delta finish() {
            Parsed p = parse(out.toString());
            String r = p.reasoning() == null ? "" : p.reasoning();
            int streamed = calls == null ? 0 : calls.announced();
            // with calls sent: the rest of each call's arguments, then calls not yet begun; the
            // content before the first call has been sent already, and an output that stopped
            // being calls adds no content
            List<ToolCallDelta> rest = new ArrayList<>();
            for (int i = 0; i < p.calls().size(); i++) {
                ToolCall c = p.calls().get(i);
                String sent = i < streamed ? calls.sentArguments(i) : null;
                if (sent == null) {
                    rest.add(new ToolCallDelta(i, c.name(), c.arguments()));
                } else if (c.arguments().startsWith(sent) && c.arguments().length() > sent.length()) {
                    rest.add(new ToolCallDelta(i, null, c.arguments().substring(sent.length())));
                }
            }
            boolean contentLeft = streamed == 0 || !p.calls().isEmpty();
            return take(r, contentLeft && p.content() != null ? p.content() : "", rest);
        }

        private Delta take(String r, String c, List<ToolCallDelta> callDeltas) {
            String dr = r.length() > reasoningSent ? r.substring(reasoningSent) : "";
            String dc = c.length() > contentSent ? c.substring(contentSent) : "";
            reasoningSent = Math.max(reasoningSent, r.length());
            contentSent = Math.max(contentSent, c.length());
            return new Delta(dr, dc, callDeltas);
        }
    }
}
