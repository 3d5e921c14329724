package io.radixkv.text.output;

import com.fasterxml.jackson.core.JsonProcessingException;
import io.radixkv.text.PyJson;
import java.util.Set;

/**
 * Reads one call object ({@code {"name": ..., "arguments": {...}}}) as it is generated: the name
 * once its string is closed, the arguments value re-written as {@link Json#call} writes it
 * (Python's {@code json.dumps}: {@code ", "} and {@code ": "}, strings escaped alike) piece by
 * piece, so the pieces concatenate to the non-streamed call's arguments. Keys other than the
 * name and the arguments are skipped. Single-threaded.
 */
final class CallReader implements JsonLexer.Sink {
    private enum Phase { START, KEY, COLON, VALUE, IN_VALUE, AFTER_VALUE, DONE }

    private enum Capture { NAME, ARGUMENTS, SKIP }

    private final Set<String> argumentKeys;
    private final JsonLexer lexer = new JsonLexer();
    private final StringBuilder key = new StringBuilder();
    private final StringBuilder nameText = new StringBuilder();
    private final StringBuilder arguments = new StringBuilder();
    private final StringBuilder pendingString = new StringBuilder();
    private Phase phase = Phase.START;
    private Capture capture;
    private boolean inKey;
    private boolean inValueString;
    private int depth;
    private String name;
    private boolean argumentsSeen;

    /** @param argumentKeys the keys whose value is the arguments ({@code arguments}, {@code parameters}) */
    CallReader(Set<String> argumentKeys) {
        this.argumentKeys = argumentKeys;
    }

    /** Reads one character; false when the text is no longer a call object (stop feeding). */
    boolean feed(char c) {
        return phase != Phase.DONE && lexer.feed(c, this);
    }

    /** Whether the call object has been closed. */
    boolean done() {
        return phase == Phase.DONE;
    }

    /** The function's name, null until its string is closed. */
    String name() {
        return name;
    }

    /** Arguments text written since the last call. */
    String takeArguments() {
        flushString();
        String out = arguments.toString();
        arguments.setLength(0);
        return out;
    }

    @Override
    public boolean token(JsonLexer.Kind kind, String text) {
        return switch (phase) {
            case START -> {
                phase = Phase.KEY;
                depth = 1;
                yield kind == JsonLexer.Kind.BEGIN_OBJECT;
            }
            case KEY -> key(kind, text);
            case COLON -> {
                phase = Phase.VALUE;
                yield kind == JsonLexer.Kind.COLON;
            }
            case VALUE -> startValue(kind, text);
            case IN_VALUE -> inValue(kind, text);
            case AFTER_VALUE -> {
                if (kind == JsonLexer.Kind.COMMA) {
                    phase = Phase.KEY;
                    yield true;
                }
                phase = Phase.DONE;
                yield kind == JsonLexer.Kind.END_OBJECT;
            }
            case DONE -> false;
        };
    }

    private boolean key(JsonLexer.Kind kind, String text) {
        switch (kind) {
            case STRING_START -> {
                inKey = true;
                key.setLength(0);
            }
            case STRING_PART -> key.append(text);
            case STRING_END -> {
                inKey = false;
                phase = Phase.COLON;
            }
            case END_OBJECT -> {
                if (inKey) {
                    return false;
                }
                phase = Phase.DONE;
            }
            default -> {
                return false;
            }
        }
        return true;
    }

    private boolean startValue(JsonLexer.Kind kind, String text) {
        String k = key.toString();
        if (k.equals("name")) {
            capture = Capture.NAME;
            nameText.setLength(0);
            if (kind != JsonLexer.Kind.STRING_START) {
                return false; // a call's name is a string
            }
        } else if (argumentKeys.contains(k) && !argumentsSeen) {
            capture = Capture.ARGUMENTS;
            argumentsSeen = true;
        } else {
            capture = Capture.SKIP;
        }
        phase = Phase.IN_VALUE;
        depth = 1;
        return inValue(kind, text);
    }

    /** A token of the current value; {@code depth} counts the value's open brackets plus one. */
    private boolean inValue(JsonLexer.Kind kind, String text) {
        switch (kind) {
            case BEGIN_OBJECT, BEGIN_ARRAY -> depth++;
            case END_OBJECT, END_ARRAY -> depth--;
            case STRING_START -> inValueString = true;
            case STRING_END -> inValueString = false;
            default -> { }
        }
        if (depth < 1) {
            return false;
        }
        if (capture == Capture.NAME) {
            if (kind == JsonLexer.Kind.STRING_PART) {
                nameText.append(text);
            } else if (kind == JsonLexer.Kind.STRING_END) {
                name = nameText.toString();
            }
        } else if (capture == Capture.ARGUMENTS && !write(kind, text)) {
            return false;
        }
        if (depth == 1 && !inValueString) {
            phase = Phase.AFTER_VALUE;
        }
        return true;
    }

    /** Appends a token of the arguments as {@code json.dumps} lays it out. */
    private boolean write(JsonLexer.Kind kind, String text) {
        if (kind == JsonLexer.Kind.STRING_PART) {
            pendingString.append(text);
            return true;
        }
        flushString();
        switch (kind) {
            case COLON -> arguments.append(": ");
            case COMMA -> arguments.append(", ");
            case SCALAR -> {
                try {
                    arguments.append(PyJson.dumps(Json.loads(text)));
                } catch (JsonProcessingException e) {
                    return false;
                }
            }
            default -> arguments.append(text);
        }
        return true;
    }

    /** Decoded string characters re-escaped as Python's json.dumps (ensure_ascii off) writes them. */
    private void flushString() {
        if (!pendingString.isEmpty()) {
            String quoted = PyJson.dumps(pendingString.toString());
            arguments.append(quoted, 1, quoted.length() - 1);
            pendingString.setLength(0);
        }
    }
}
