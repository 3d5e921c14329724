package io.radixkv.text.output;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.util.ArrayList;
import java.util.List;

/**
 * Streams an output through an {@link OutputParser.Stream} in given pieces and puts the deltas
 * back together as an OpenAI client does ({@code delta.tool_calls[i]} by index, arguments
 * concatenated), checking the order vLLM streams in: each call's first piece names it and no
 * later piece does, calls begin in index order.
 */
public final class StreamedOutput {
    private StreamedOutput() {}

    /** The reassembled message: reasoning and content as "" when none, the calls. */
    public static OutputParser.Parsed reassemble(OutputParser parser, List<String> pieces) {
        OutputParser.Stream s = parser.stream();
        StringBuilder reasoning = new StringBuilder();
        StringBuilder content = new StringBuilder();
        List<String> names = new ArrayList<>();
        List<StringBuilder> args = new ArrayList<>();
        List<OutputParser.Delta> deltas = new ArrayList<>();
        for (String piece : pieces) {
            deltas.add(s.append(piece));
        }
        deltas.add(s.finish());
        for (OutputParser.Delta d : deltas) {
            reasoning.append(d.reasoning());
            content.append(d.content());
            for (ToolCallDelta c : d.calls()) {
                if (c.index() == names.size()) {
                    assertNotNull(c.name(), "a call's first piece names it: " + c);
                    names.add(c.name());
                    args.add(new StringBuilder());
                } else {
                    assertNull(c.name(), "only a call's first piece names it: " + c);
                }
                args.get(c.index()).append(c.arguments());
            }
        }
        List<ToolCall> calls = new ArrayList<>();
        for (int i = 0; i < names.size(); i++) {
            calls.add(new ToolCall(names.get(i), args.get(i).toString()));
        }
        return new OutputParser.Parsed(reasoning.toString(), content.toString(), calls);
    }

    /** {@code want} as {@link #reassemble} writes it: null text as "". */
    public static OutputParser.Parsed asStreamed(OutputParser.Parsed want) {
        return new OutputParser.Parsed(want.reasoning() == null ? "" : want.reasoning(),
                want.content() == null ? "" : want.content(), want.calls());
    }

    /** Asserts that streaming {@code pieces} gives {@code want}. */
    public static void assertStreams(OutputParser parser, List<String> pieces, OutputParser.Parsed want, String label) {
        assertEquals(asStreamed(want), reassemble(parser, pieces), label);
    }
}
