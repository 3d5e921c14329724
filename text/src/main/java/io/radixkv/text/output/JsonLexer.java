package io.radixkv.text.output;

/**
 * Reads JSON text one character at a time, as a model generates it, and reports its tokens as
 * soon as they are certain: structural characters at once, strings in decoded pieces, a number
 * or literal when the character after it arrives. Single-threaded.
 */
final class JsonLexer {
    /** A token kind; {@code STRING_PART} carries decoded characters, {@code SCALAR} the raw text. */
    enum Kind { BEGIN_OBJECT, END_OBJECT, BEGIN_ARRAY, END_ARRAY, COLON, COMMA, STRING_START, STRING_PART, STRING_END, SCALAR }

    /** Receives tokens; returns false to report the token does not fit where it stands. */
    interface Sink {
        boolean token(Kind kind, String text);
    }

    private final StringBuilder scalar = new StringBuilder();
    private boolean inString;
    private boolean escape;
    private int unicodeLeft = -1;
    private int unicode;

    /**
     * Reads one character; returns false when it is not valid JSON here (or the sink refused a
     * token), after which the lexer must not be fed again.
     */
    boolean feed(char c, Sink sink) {
        if (inString) {
            return string(c, sink);
        }
        if (isScalarChar(c)) {
            scalar.append(c);
            return true;
        }
        if (!scalar.isEmpty()) {
            String text = scalar.toString();
            scalar.setLength(0);
            if (!sink.token(Kind.SCALAR, text)) {
                return false;
            }
        }
        return switch (c) {
            case '{' -> sink.token(Kind.BEGIN_OBJECT, "{");
            case '}' -> sink.token(Kind.END_OBJECT, "}");
            case '[' -> sink.token(Kind.BEGIN_ARRAY, "[");
            case ']' -> sink.token(Kind.END_ARRAY, "]");
            case ':' -> sink.token(Kind.COLON, ":");
            case ',' -> sink.token(Kind.COMMA, ",");
            case '"' -> {
                inString = true;
                yield sink.token(Kind.STRING_START, "\"");
            }
            case ' ', '\t', '\n', '\r' -> true;
            default -> false;
        };
    }

    private boolean string(char c, Sink sink) {
        if (unicodeLeft > 0) {
            int d = Character.digit(c, 16);
            if (d < 0) {
                return false;
            }
            unicode = unicode * 16 + d;
            if (--unicodeLeft == 0) {
                unicodeLeft = -1;
                return sink.token(Kind.STRING_PART, String.valueOf((char) unicode));
            }
            return true;
        }
        if (escape) {
            escape = false;
            String decoded = switch (c) {
                case '"' -> "\"";
                case '\\' -> "\\";
                case '/' -> "/";
                case 'b' -> "\b";
                case 'f' -> "\f";
                case 'n' -> "\n";
                case 'r' -> "\r";
                case 't' -> "\t";
                case 'u' -> "";
                default -> null;
            };
            if (decoded == null) {
                return false;
            }
            if (c == 'u') {
                unicodeLeft = 4;
                unicode = 0;
                return true;
            }
            return sink.token(Kind.STRING_PART, decoded);
        }
        if (c == '\\') {
            escape = true;
            return true;
        }
        if (c == '"') {
            inString = false;
            return sink.token(Kind.STRING_END, "\"");
        }
        if (c < 0x20) {
            return false;
        }
        return sink.token(Kind.STRING_PART, String.valueOf(c));
    }

    private static boolean isScalarChar(char c) {
        return c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z';
    }
}
