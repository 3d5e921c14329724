package io.radixkv.text.output;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/**
 * The calls of an output read while it is generated, as vLLM's streaming tool parsers send them:
 * a call's name as soon as its string is closed, then its arguments as they grow (re-written as
 * the non-streamed parse writes them), each call under its own index. Where the calls start is a
 * parser's {@link Framing}. Once a call has been announced the stream keeps to calls: text that
 * turns out not to be a call ends the streaming (vLLM's streamed path likewise never takes a
 * sent call back). Single-threaded.
 */
final class StreamedCalls {
    /** {@link Framing#nextCall}: no call starts yet, more text may tell. */
    static final int WAIT = -1;
    /** {@link Framing#nextCall}: no further call comes. */
    static final int NONE = -2;

    /** Where a parser's calls begin in the content text. */
    interface Framing {
        /**
         * Where the next call object's text starts (the reader skips leading whitespace), given
         * the content so far, the index just past the previous call (0 before the first) and how
         * many calls came before; or {@link #WAIT} or {@link #NONE}.
         */
        int nextCall(String content, int from, int calls);
    }

    private final Framing framing;
    private final Set<String> argumentKeys;
    private final List<StringBuilder> sent = new ArrayList<>();
    private CallReader reader;
    private int pos;
    private boolean over;
    private String wholeName;
    private boolean announcedCurrent;
    private boolean firstSent;

    StreamedCalls(Framing framing, Set<String> argumentKeys) {
        this.framing = framing;
        this.argumentKeys = argumentKeys;
    }

    /** One call of {@code function} whose arguments are the whole content, passed on as it comes. */
    static StreamedCalls whole(String function) {
        StreamedCalls s = new StreamedCalls((content, from, calls) -> calls == 0 ? 0 : NONE, Set.of());
        s.wholeName = function;
        return s;
    }

    /**
     * A {@link Framing} step between calls: past whitespace, {@code separator} starts the next
     * call; anything else ends the calls.
     */
    static int after(char separator, String content, int from) {
        int k = from;
        while (k < content.length() && Character.isWhitespace(content.charAt(k))) {
            k++;
        }
        if (k == content.length()) {
            return WAIT;
        }
        return content.charAt(k) == separator ? k + 1 : NONE;
    }

    /** A new stream of {@code parser}'s calls, or null when its calls come whole at the end. */
    static StreamedCalls of(ToolCallParser parser) {
        return switch (parser) {
            case HermesToolParser h -> h.streamed();
            case Llama3JsonToolParser l -> l.streamed();
            case ConstrainedToolParser c -> c.streamed();
            default -> null;
        };
    }

    /** Reads {@code content}, the whole content text so far (each call extends the last); returns the new pieces. */
    List<ToolCallDelta> feed(String content) {
        List<ToolCallDelta> out = new ArrayList<>();
        if (wholeName != null) {
            if (content.length() > pos) {
                String piece = content.substring(pos);
                pos = content.length();
                if (sent.isEmpty()) {
                    sent.add(new StringBuilder());
                }
                sent.getFirst().append(piece);
                out.add(new ToolCallDelta(0, sent.getFirst().length() == piece.length() ? wholeName : null, piece));
            }
            return out;
        }
        while (!over && pos < content.length()) {
            if (reader == null) {
                int start = framing.nextCall(content, pos, sent.size());
                if (start == WAIT) {
                    break;
                }
                if (start == NONE) {
                    over = true;
                    break;
                }
                reader = new CallReader(argumentKeys);
                announcedCurrent = false;
                firstSent = false;
                pos = start;
                continue;
            }
            if (!reader.feed(content.charAt(pos++))) {
                over = true;
            } else if (reader.done()) {
                collect(out);
                over = reader.name() == null; // a call without a name ends the calls
                reader = null;
            }
        }
        if (reader != null) {
            collect(out);
        }
        return out;
    }

    /** How many calls have been announced. */
    int announced() {
        return sent.size();
    }

    /** The argument text sent so far for call {@code index}. */
    String sentArguments(int index) {
        return sent.get(index).toString();
    }

    private void collect(List<ToolCallDelta> out) {
        if (!announcedCurrent) {
            if (reader.name() == null) {
                return; // arguments wait for the name: a call's first piece names it
            }
            announcedCurrent = true;
            sent.add(new StringBuilder());
        }
        String args = reader.takeArguments();
        sent.getLast().append(args);
        boolean first = !firstSent;
        if (first || !args.isEmpty()) {
            out.add(new ToolCallDelta(sent.size() - 1, first ? reader.name() : null, args));
        }
        firstSent = true;
    }
}
