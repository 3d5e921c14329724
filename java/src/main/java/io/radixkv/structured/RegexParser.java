package io.radixkv.structured;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;

/**
 * Parses a regular expression into a {@link ByteRegex} over the UTF-8 bytes of the text it
 * matches. Supported: literals, escapes ({@code \d \w \s} and their negations, {@code \n \t \r
 * \f \v \xHH}, a backslash-u escape of four hex digits, escaped punctuation), {@code .} (any
 * character but a newline), classes with ranges and negation, groups ({@code (...)}, {@code (?:...)}, {@code (?<name>...)}),
 * alternation, and the quantifiers {@code * + ? {n} {n,} {n,m}} (lazy forms match the same
 * texts). The whole text must match: {@code ^} at the start and {@code $} at the end are
 * accepted and change nothing. Refused with {@link ConstraintException}: anchors elsewhere,
 * back-references, lookaround, word boundaries, Unicode property classes, possessive
 * quantifiers and counts above {@value #MAX_COUNT}.
 */
final class RegexParser {
    static final int MAX_COUNT = 1000;

    private final String src;
    private final ByteRegex rx;
    private final Function<CharSet, ByteRegex.Node> chars;
    private int pos;
    boolean anchoredStart;
    boolean anchoredEnd;

    private RegexParser(String src, ByteRegex rx, Function<CharSet, ByteRegex.Node> chars) {
        this.src = src;
        this.rx = rx;
        this.chars = chars;
    }

    /** The texts that match {@code regex} as a whole; characters encoded by {@code chars}. */
    static ByteRegex.Node parse(String regex, ByteRegex rx, Function<CharSet, ByteRegex.Node> chars) {
        return parser(regex, rx, chars).whole();
    }

    /**
     * A JSON Schema {@code pattern}: the texts that contain a match (ECMA-262 search), i.e. the
     * regex with {@code .*} added on each side that {@code ^} / {@code $} does not anchor.
     */
    static ByteRegex.Node parseSearch(String regex, ByteRegex rx, Function<CharSet, ByteRegex.Node> chars) {
        RegexParser p = parser(regex, rx, chars);
        ByteRegex.Node body = p.whole();
        ByteRegex.Node any = rx.star(chars.apply(CharSet.of(0, CharSet.MAX)));
        return rx.seq(p.anchoredStart ? rx.empty : any, body, p.anchoredEnd ? rx.empty : any);
    }

    private static RegexParser parser(String regex, ByteRegex rx, Function<CharSet, ByteRegex.Node> chars) {
        if (regex == null) {
            throw new ConstraintException("regex", "the regular expression must not be null");
        }
        return new RegexParser(regex, rx, chars);
    }

    private ByteRegex.Node whole() {
        if (src.startsWith("^")) {
            anchoredStart = true;
            pos = 1;
        }
        ByteRegex.Node n = alternation();
        if (pos < src.length()) {
            throw error("unexpected '" + src.charAt(pos) + "'");
        }
        return n;
    }

    private ConstraintException error(String what) {
        return new ConstraintException("regex", "regular expression " + quote(src) + " at " + pos + ": " + what);
    }

    private static String quote(String s) {
        return s.length() > 80 ? "'" + s.substring(0, 77) + "...'" : "'" + s + "'";
    }

    private boolean more() {
        return pos < src.length();
    }

    private char peek() {
        return src.charAt(pos);
    }

    private ByteRegex.Node alternation() {
        List<ByteRegex.Node> options = new ArrayList<>();
        options.add(concatenation());
        while (more() && peek() == '|') {
            pos++;
            options.add(concatenation());
        }
        return rx.alt(options);
    }

    private ByteRegex.Node concatenation() {
        List<ByteRegex.Node> parts = new ArrayList<>();
        while (more() && peek() != '|' && peek() != ')') {
            if (peek() == '$') {
                pos++;
                if (pos != src.length()) {
                    throw error("'$' is only supported at the end of the expression");
                }
                anchoredEnd = true;
                break;
            }
            parts.add(quantified(atom()));
        }
        return rx.seq(parts.toArray(ByteRegex.Node[]::new));
    }

    private ByteRegex.Node quantified(ByteRegex.Node atom) {
        ByteRegex.Node n = atom;
        while (more()) {
            char c = peek();
            int min;
            int max;
            if (c == '*') {
                min = 0;
                max = ByteRegex.INF;
                pos++;
            } else if (c == '+') {
                min = 1;
                max = ByteRegex.INF;
                pos++;
            } else if (c == '?') {
                min = 0;
                max = 1;
                pos++;
            } else if (c == '{' && isCount()) {
                pos++;
                min = number();
                max = min;
                if (peek() == ',') {
                    pos++;
                    max = peek() == '}' ? ByteRegex.INF : number();
                }
                pos++; // '}'
                if (max != ByteRegex.INF && max < min) {
                    throw error("{" + min + "," + max + "} has max < min");
                }
            } else {
                break;
            }
            if (more() && peek() == '?') {
                pos++; // lazy: the same texts
            } else if (more() && peek() == '+') {
                throw error("possessive quantifiers are not supported");
            }
            n = rx.rep(n, min, max);
        }
        return n;
    }

    private boolean isCount() {
        int i = pos + 1;
        int digits = 0;
        while (i < src.length() && Character.isDigit(src.charAt(i))) {
            i++;
            digits++;
        }
        if (digits == 0) {
            return false;
        }
        if (i < src.length() && src.charAt(i) == ',') {
            i++;
            while (i < src.length() && Character.isDigit(src.charAt(i))) {
                i++;
            }
        }
        return i < src.length() && src.charAt(i) == '}';
    }

    private int number() {
        int start = pos;
        while (more() && Character.isDigit(peek())) {
            pos++;
        }
        String s = src.substring(start, pos);
        if (s.length() > 6 || Integer.parseInt(s) > MAX_COUNT) {
            throw error("repetition count " + s + " is above " + MAX_COUNT);
        }
        return Integer.parseInt(s);
    }

    private ByteRegex.Node atom() {
        char c = peek();
        switch (c) {
            case '(' -> {
                pos++;
                if (src.startsWith("?:", pos)) {
                    pos += 2;
                } else if (src.startsWith("?<", pos) && pos + 2 < src.length() && src.charAt(pos + 2) != '='
                        && src.charAt(pos + 2) != '!') {
                    int close = src.indexOf('>', pos);
                    if (close < 0) {
                        throw error("unterminated group name");
                    }
                    pos = close + 1;
                } else if (more() && peek() == '?') {
                    throw error("lookaround and inline flags are not supported");
                }
                ByteRegex.Node n = alternation();
                if (!more() || peek() != ')') {
                    throw error("missing ')'");
                }
                pos++;
                return n;
            }
            case '[' -> {
                return chars.apply(charClass());
            }
            case '.' -> {
                pos++;
                return chars.apply(CharSet.of('\n').complement());
            }
            case '\\' -> {
                return chars.apply(escape(false));
            }
            case '^' -> throw error("'^' is only supported at the start of the expression");
            case '*', '+', '?' -> throw error("nothing to repeat");
            case ')' -> throw error("unbalanced ')'");
            default -> {
                int cp = src.codePointAt(pos);
                pos += Character.charCount(cp);
                return chars.apply(CharSet.of(cp));
            }
        }
    }

    private CharSet charClass() {
        pos++; // '['
        boolean negate = false;
        if (more() && peek() == '^') {
            negate = true;
            pos++;
        }
        CharSet set = CharSet.none();
        boolean first = true;
        while (true) {
            if (!more()) {
                throw error("missing ']'");
            }
            char c = peek();
            if (c == ']' && !first) {
                pos++;
                break;
            }
            first = false;
            CharSet item;
            int lo;
            if (c == '\\') {
                item = escape(true);
                lo = item.ranges().size() == 1 && item.ranges().get(0)[0] == item.ranges().get(0)[1]
                        ? item.ranges().get(0)[0] : -1;
            } else if (c == '[') {
                throw error("nested classes are not supported");
            } else {
                lo = src.codePointAt(pos);
                pos += Character.charCount(lo);
                item = CharSet.of(lo);
            }
            if (lo >= 0 && pos + 1 < src.length() && peek() == '-' && src.charAt(pos + 1) != ']') {
                pos++;
                int hi;
                if (peek() == '\\') {
                    CharSet h = escape(true);
                    if (h.ranges().size() != 1 || h.ranges().get(0)[0] != h.ranges().get(0)[1]) {
                        throw error("a class range must end in one character");
                    }
                    hi = h.ranges().get(0)[0];
                } else {
                    hi = src.codePointAt(pos);
                    pos += Character.charCount(hi);
                }
                if (hi < lo) {
                    throw error("class range out of order");
                }
                item = CharSet.of(lo, hi);
            }
            set = set.union(item);
        }
        return negate ? set.complement() : set;
    }

    private CharSet escape(boolean inClass) {
        pos++; // '\'
        if (!more()) {
            throw error("trailing backslash");
        }
        char c = src.charAt(pos++);
        return switch (c) {
            case 'd' -> digits();
            case 'D' -> digits().complement();
            case 'w' -> word();
            case 'W' -> word().complement();
            case 's' -> space();
            case 'S' -> space().complement();
            case 'n' -> CharSet.of('\n');
            case 't' -> CharSet.of('\t');
            case 'r' -> CharSet.of('\r');
            case 'f' -> CharSet.of('\f');
            case 'v' -> CharSet.of(0x0B);
            case '0' -> CharSet.of(0);
            case 'x' -> CharSet.of(hex(2));
            case 'u' -> CharSet.of(hex(4));
            case 'b' -> {
                if (inClass) {
                    yield CharSet.of('\b');
                }
                throw error("word boundaries are not supported");
            }
            case 'B', 'A', 'z', 'Z', 'G' -> throw error("anchors inside the expression are not supported");
            case 'p', 'P' -> throw error("Unicode property classes are not supported");
            case 'k' -> throw error("back-references are not supported");
            default -> {
                if (Character.isDigit(c)) {
                    throw error("back-references are not supported");
                }
                if (Character.isLetter(c)) {
                    throw error("unknown escape \\" + c);
                }
                yield CharSet.of(c);
            }
        };
    }

    private int hex(int n) {
        if (pos + n > src.length()) {
            throw error("short hex escape");
        }
        try {
            int v = Integer.parseInt(src.substring(pos, pos + n), 16);
            pos += n;
            return v;
        } catch (NumberFormatException e) {
            throw error("bad hex escape");
        }
    }

    static CharSet digits() {
        return CharSet.of('0', '9');
    }

    static CharSet word() {
        return CharSet.of('a', 'z').union(CharSet.of('A', 'Z')).union(digits()).union(CharSet.of('_'));
    }

    static CharSet space() {
        return CharSet.of(' ').union(CharSet.of('\t', '\r')); // \t \n \x0B \f \r
    }
}
