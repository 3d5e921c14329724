package io.radixkv.server;

import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.radixkv.text.output.OutputParser;
import io.radixkv.text.output.ToolCall;
import io.radixkv.text.output.ToolCallDelta;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;

/**
 * One chat request's assistant message as vLLM's OpenAI server writes it: {@code content},
 * {@code reasoning_content} and {@code tool_calls} (ids {@code chatcmpl-tool-<32 hex>},
 * arguments as JSON strings), finish reason {@code tool_calls} when calls were made (except for
 * a named {@code tool_choice}, which finishes with the model's reason, as in vLLM and OpenAI).
 * Streamed, the same fields come as {@code delta}s, calls as vLLM streams them: a chunk with a
 * call's index, id, type and name (arguments {@code ""}) as soon as the name is known, then
 * chunks with pieces of its arguments ({@code hermes}, {@code llama3_json}; other parsers' calls
 * come whole when the output is complete), so a stream concatenates to the non-streamed message.
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
            return deltas(split.append(piece));
        }

        /** The deltas still to send once the output is complete: held-back text, the rest of the calls. */
        List<ObjectNode> finish() {
            return split == null ? List.of() : deltas(split.finish());
        }

        /** The finish reason of the stream's final chunk (after {@link #finish()}). */
        String finishReason(String modelReason) {
            return called ? ChatOutput.this.finishReason(modelReason) : modelReason;
        }

        private List<ObjectNode> deltas(OutputParser.Delta d) {
            List<ObjectNode> out = new ArrayList<>();
            if (!d.reasoning().isEmpty() || !d.content().isEmpty()) {
                ObjectNode text = JSON.objectNode();
                if (!d.reasoning().isEmpty()) {
                    text.put("reasoning_content", d.reasoning());
                }
                if (!d.content().isEmpty()) {
                    text.put("content", d.content());
                }
                out.add(text);
            }
            for (ToolCallDelta c : d.calls()) {
                if (firstCallOnly && c.index() > 0) {
                    continue;
                }
                if (c.name() != null) {
                    called = true;
                    ObjectNode head = JSON.objectNode();
                    head.putArray("tool_calls").addObject().put("index", c.index()).put("id", newId())
                            .put("type", "function").putObject("function").put("name", c.name()).put("arguments", "");
                    out.add(head);
                }
                if (!c.arguments().isEmpty()) {
                    ObjectNode args = JSON.objectNode();
                    args.putArray("tool_calls").addObject().put("index", c.index()).putObject("function")
                            .put("arguments", c.arguments());
                    out.add(args);
                }
            }
            return out;
        }
    }
}
