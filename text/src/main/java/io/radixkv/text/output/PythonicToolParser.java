package io.radixkv.text.output;

import io.radixkv.text.PyJson;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * vLLM's {@code pythonic} parser (Llama 3.2 and 4's pythonic format, Gemma 3 with vLLM's
 * pythonic template): an output that starts with {@code [} and is a Python list of calls with
 * keyword arguments, {@code [get_weather(city="Paris", days=2), get_time(tz='CET')]}, whose
 * values are literals (strings, numbers, True/False/None, lists, dicts). Then the content is
 * null; any other output is all content. Arguments become JSON as vLLM writes them.
 *
 * <p>A negative number is accepted as a literal (Python's parser sees {@code -1} as an
 * operation, which vLLM refuses); positional arguments make the output content (vLLM drops
 * them).
 */
final class PythonicToolParser implements ToolCallParser {
    static final PythonicToolParser INSTANCE = new PythonicToolParser();

    private PythonicToolParser() {}

    @Override
    public String name() {
        return "pythonic";
    }

    @Override
    public ToolCalls parse(String output) {
        if (!output.startsWith("[")) {
            return ToolCalls.none(output);
        }
        try {
            Reader r = new Reader(output);
            List<ToolCall> calls = r.calls();
            r.space();
            if (!r.atEnd()) {
                throw r.error("text after the list of calls");
            }
            return calls.isEmpty() ? ToolCalls.none(output) : new ToolCalls(null, calls);
        } catch (IllegalArgumentException e) {
            return ToolCalls.none(output);
        }
    }

    @Override
    public int contentEnd(String text) {
        return text.startsWith("[") ? 0 : text.length();
    }

    /** A cursor over Python source: the list of calls and literal values. */
    private static final class Reader {
        private final String s;
        private int k;

        Reader(String s) {
            this.s = s;
        }

        List<ToolCall> calls() {
            expect('[');
            List<ToolCall> calls = new ArrayList<>();
            items(']', () -> calls.add(call()));
            return calls;
        }

        private ToolCall call() {
            String name = identifier();
            space();
            expect('(');
            Map<String, Object> args = new LinkedHashMap<>();
            items(')', () -> {
                String key = identifier();
                space();
                expect('=');
                space();
                args.put(key, value());
            });
            return new ToolCall(name, PyJson.dumps(args));
        }

        private Object value() {
            char c = peek();
            if (c == '"' || c == '\'') {
                return string();
            } else if (c == '[') {
                k++;
                List<Object> list = new ArrayList<>();
                items(']', () -> list.add(value()));
                return list;
            } else if (c == '{') {
                k++;
                Map<String, Object> map = new LinkedHashMap<>();
                items('}', () -> {
                    Object key = value();
                    if (key instanceof List<?> || key instanceof Map<?, ?>) {
                        throw error("dict keys must be literals");
                    }
                    space();
                    expect(':');
                    space();
                    map.put(String.valueOf(key), value());
                });
                return map;
            } else if (c == '-' || c == '.' || Character.isDigit(c)) {
                return number();
            }
            String word = identifier();
            return switch (word) {
                case "True" -> true;
                case "False" -> false;
                case "None" -> null;
                default -> throw error("'" + word + "' is not a literal");
            };
        }

        /** Comma-separated items up to {@code close} (a trailing comma allowed), which is consumed. */
        private void items(char close, Runnable item) {
            space();
            while (peek() != close) {
                item.run();
                space();
                if (peek() == ',') {
                    k++;
                    space();
                } else if (peek() != close) {
                    throw error("expected ',' or '" + close + "'");
                }
            }
            k++;
        }

        private Object number() {
            int start = k;
            if (peek() == '-') {
                k++;
            }
            boolean real = false;
            while (!atEnd() && (Character.isDigit(peek()) || "._eE+-".indexOf(peek()) >= 0)) {
                char c = s.charAt(k);
                if (c == '.' || c == 'e' || c == 'E') {
                    real = true;
                } else if ((c == '+' || c == '-') && !(s.charAt(k - 1) == 'e' || s.charAt(k - 1) == 'E')) {
                    break;
                }
                k++;
            }
            String text = s.substring(start, k).replace("_", "");
            try {
                return real ? (Object) Double.parseDouble(text) : new BigInteger(text);
            } catch (NumberFormatException e) {
                throw error("bad number '" + text + "'");
            }
        }

        private String string() {
            char quote = next();
            StringBuilder sb = new StringBuilder();
            while (true) {
                if (atEnd()) {
                    throw error("unterminated string");
                }
                char c = next();
                if (c == quote) {
                    return sb.toString();
                }
                if (c == '\n') {
                    throw error("newline in a string");
                }
                if (c != '\\') {
                    sb.append(c);
                    continue;
                }
                char e = next();
                switch (e) {
                    case 'n' -> sb.append('\n');
                    case 't' -> sb.append('\t');
                    case 'r' -> sb.append('\r');
                    case 'b' -> sb.append('\b');
                    case 'f' -> sb.append('\f');
                    case '0' -> sb.append('\0');
                    case '\\', '\'', '"' -> sb.append(e);
                    case '\n' -> { } // a continued line
                    case 'x' -> sb.append((char) hex(2));
                    case 'u' -> sb.append((char) hex(4));
                    case 'U' -> sb.appendCodePoint(hex(8));
                    default -> sb.append('\\').append(e); // Python keeps unknown escapes
                }
            }
        }

        private int hex(int digits) {
            if (k + digits > s.length()) {
                throw error("short escape");
            }
            try {
                int v = Integer.parseUnsignedInt(s.substring(k, k + digits), 16);
                k += digits;
                return v;
            } catch (NumberFormatException e) {
                throw error("bad escape");
            }
        }

        private String identifier() {
            int start = k;
            while (!atEnd() && (Character.isLetterOrDigit(peek()) || peek() == '_')) {
                k++;
            }
            if (k == start || Character.isDigit(s.charAt(start))) {
                throw error("expected a name");
            }
            return s.substring(start, k);
        }

        void space() {
            while (!atEnd() && Character.isWhitespace(peek())) {
                k++;
            }
        }

        boolean atEnd() {
            return k >= s.length();
        }

        private char peek() {
            if (atEnd()) {
                throw error("unexpected end");
            }
            return s.charAt(k);
        }

        private char next() {
            char c = peek();
            k++;
            return c;
        }

        private void expect(char c) {
            if (next() != c) {
                throw error("expected '" + c + "'");
            }
        }

        IllegalArgumentException error(String what) {
            return new IllegalArgumentException(what + " at " + k);
        }
    }
}
