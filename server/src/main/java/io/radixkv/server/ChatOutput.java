package io.radixkv.server;

import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.radixkv.text.output.OutputParser;
import io.radixkv.text.output.ToolCall;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;

/**
 * One chat request's assistant message as vLLM's OpenAI server writes it: {@code content},
 * {@code reasoning_content} and {@code tool_calls} (ids {@code chatcmpl-tool-<32 hex>},
 * arguments as JSON strings), finish reason {@code tool_calls} when calls were made (except for
 * a named {@code tool_choice}, which finishes with the model's reason, as in vLLM and OpenAI).
 * Streamed, the same fields come as {@code delta}s; calls come when the output is complete (a
 * chunk with each call's index, id, type and name, then one with its arguments), so a stream
 * concatenates to the non-streamed message.
 *
 * @param parser how the output is split, or null: the text is the content as it is
 * @param named whether the request named its function ({@code finish_reason} stays the model's)
 * @param firstCallOnly {@code parallel_tool_calls: false}: only the first call is returned
 */
record ChatOutput(OutputParser parser, boolean named, boolean firstCallOnly) {
    /** The text is the content. */
    static final ChatOutput PLAIN = new ChatOutput(null, false, false);
    private static final JsonNodeFactory JSON = JsonNodeFactory.instance;

    /** Fills {@code message} (role set) from the whole output; returns the finish reason. */
    String message(ObjectNode message, String text, String finishReason) {
        if (parser == null) {
            message.put("content", text);
            return finishReason;
        }
        OutputParser.Parsed p = parser.parse(text);
        message.put("content", p.content());
        if (p.reasoning() != null) {
            message.put("reasoning_content", p.reasoning());
        }
        List<ToolCall> calls = calls(p);
        if (calls.isEmpty()) {
            message.putArray("tool_calls");
            return finishReason;
        }
        var array = message.putArray("tool_calls");
        for (ToolCall c : calls) {
            ObjectNode call = array.addObject().put("id", newId()).put("type", "function");
            call.putObject("function").put("name", c.name()).put("arguments", c.arguments());
        }
        return finishReason(finishReason);
    }

    /** The per-request state of a stream. */
    Stream stream() {
        return new Stream(parser == null ? null : parser.stream());
    }

    private List<ToolCall> calls(OutputParser.Parsed p) {
        return firstCallOnly && p.calls().size() > 1 ? p.calls().subList(0, 1) : p.calls();
    }

    private String finishReason(String modelReason) {
        return named || modelReason.equals("abort") || modelReason.equals("error") ? modelReason : "tool_calls";
    }

    private static String newId() {
        ThreadLocalRandom r = ThreadLocalRandom.current();
        return "chatcmpl-tool-" + HexFormat.of().toHexDigits(r.nextLong()) + HexFormat.of().toHexDigits(r.nextLong());
    }

    /** A stream's deltas. Single-threaded. */
    final class Stream {
        private final OutputParser.Stream split;
        private boolean called;

        private Stream(OutputParser.Stream split) {
            this.split = split;
        }

        /** The deltas for a piece of generated text (none while a parser holds text back). */
        List<ObjectNode> deltas(String piece) {
            if (split == null) {
                return List.of(JSON.objectNode().put("content", piece));
            }
            OutputParser.Delta d = split.append(piece);
            return d.isEmpty() ? List.of() : List.of(delta(d.reasoning(), d.content()));
        }

        /** The deltas still to send once the output is complete: held-back text, then the calls. */
        List<ObjectNode> finish() {
            if (split == null) {
                return List.of();
            }
            OutputParser.Parsed last = split.finish();
            List<ObjectNode> out = new ArrayList<>();
            if (!last.reasoning().isEmpty() || !last.content().isEmpty()) {
                out.add(delta(last.reasoning(), last.content()));
            }
            List<ToolCall> calls = calls(last);
            for (int i = 0; i < calls.size(); i++) {
                ObjectNode head = JSON.objectNode();
                ObjectNode call = head.putArray("tool_calls").addObject().put("index", i).put("id", newId())
                        .put("type", "function");
                call.putObject("function").put("name", calls.get(i).name()).put("arguments", "");
                out.add(head);
                ObjectNode args = JSON.objectNode();
                args.putArray("tool_calls").addObject().put("index", i).putObject("function")
                        .put("arguments", calls.get(i).arguments());
                out.add(args);
            }
            called = !calls.isEmpty();
            return out;
        }

        /** The finish reason of the stream's final chunk (after {@link #finish()}). */
        String finishReason(String modelReason) {
            return called ? ChatOutput.this.finishReason(modelReason) : modelReason;
        }

        private static ObjectNode delta(String reasoning, String content) {
            ObjectNode d = JSON.objectNode();
            if (!reasoning.isEmpty()) {
                d.put("reasoning_content", reasoning);
            }
            if (!content.isEmpty()) {
                d.put("content", content);
            }
            return d;
        }
    }
}
