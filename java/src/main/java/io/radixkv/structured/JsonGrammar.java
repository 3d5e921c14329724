package io.radixkv.structured;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * JSON's lexical and structural rules as {@link ByteRegex} expressions over UTF-8 bytes.
 *
 * <p>Whitespace: at most {@value #MAX_WHITESPACE} bytes of space, newline or tab wherever JSON
 * allows whitespace between tokens, and none before or after the top-level value, so a
 * finished value is followed only by the end of the text (the end token is then forced). A
 * generic value nests objects and arrays at most {@value #ANY_DEPTH} deep; numbers have at
 * most {@value #MAX_INT_DIGITS} integer digits, {@value #MAX_FRACTION_DIGITS} fraction digits
 * and a three-digit exponent. Each bound only narrows what is generated (every text
 * generated is valid JSON) and keeps a small model from looping in one token kind.
 */
final class JsonGrammar {
    static final int MAX_WHITESPACE = 2;
    static final int ANY_DEPTH = 5;
    static final int MAX_INT_DIGITS = 19;
    static final int MAX_FRACTION_DIGITS = 16;
    private static final ObjectMapper JSON = new ObjectMapper();

    final ByteRegex rx;
    final ByteRegex.Node ws;
    final ByteRegex.Node comma;
    final ByteRegex.Node colon;
    /** One character of a string's content: an unescaped UTF-8 character or an escape. */
    final ByteRegex.Node stringChar;
    final ByteRegex.Node string;
    final ByteRegex.Node integer;
    final ByteRegex.Node number;
    final ByteRegex.Node nonNegativeNumber;
    final ByteRegex.Node scalar;
    private final Map<Integer, ByteRegex.Node> values = new HashMap<>();

    JsonGrammar(ByteRegex rx) {
        this.rx = rx;
        ws = rx.rep(rx.oneOf(" \n\t"), 0, MAX_WHITESPACE);
        comma = rx.seq(ws, rx.literal(","), ws);
        colon = rx.seq(ws, rx.literal(":"), ws);
        ByteRegex.Node hex = rx.alt(rx.range('0', '9'), rx.range('a', 'f'), rx.range('A', 'F'));
        // \\uXXXX but never a surrogate (D800-DFFF): an unpaired one is not valid UTF-8 text
        ByteRegex.Node u = rx.seq(rx.literal("u"), rx.alt(
                rx.seq(rx.alt(rx.range('0', '9'), rx.oneOf("abcefABCEF")), hex, hex, hex),
                rx.seq(rx.oneOf("dD"), rx.range('0', '7'), hex, hex)));
        ByteRegex.Node escape = rx.seq(rx.literal("\\"), rx.alt(rx.oneOf("\"\\/bfnrt"), u));
        stringChar = rx.alt(plainChars(CharSet.of(0, CharSet.MAX)), escape);
        string = quoted(rx.star(stringChar));
        ByteRegex.Node digit = rx.range('0', '9');
        ByteRegex.Node natural = rx.alt(rx.literal("0"), rx.seq(rx.range('1', '9'), rx.rep(digit, 0, MAX_INT_DIGITS - 1)));
        integer = rx.seq(rx.opt(rx.literal("-")), natural);
        ByteRegex.Node fraction = rx.opt(rx.seq(rx.literal("."), rx.rep(digit, 1, MAX_FRACTION_DIGITS)));
        ByteRegex.Node exponent = rx.opt(rx.seq(rx.oneOf("eE"), rx.opt(rx.oneOf("+-")), rx.rep(digit, 1, 3)));
        number = rx.seq(integer, fraction, exponent);
        nonNegativeNumber = rx.seq(natural, fraction, exponent);
        scalar = rx.alt(string, number, rx.literal("true"), rx.literal("false"), rx.literal("null"));
    }

    /** Characters of {@code set} as they appear unescaped in a JSON string (no quote, backslash or control). */
    ByteRegex.Node plainChars(CharSet set) {
        return set.minus(CharSet.of(0, 0x1F).union(CharSet.of('"')).union(CharSet.of('\\'))).toUtf8(rx);
    }

    /**
     * Characters of {@code set} as JSON string content: unescaped where JSON allows, a quote or
     * backslash escaped, control characters as their short or {@code \\u00XX} escapes.
     */
    ByteRegex.Node jsonChars(CharSet set) {
        List<ByteRegex.Node> options = new java.util.ArrayList<>();
        options.add(plainChars(set));
        if (set.contains('"')) {
            options.add(rx.literal("\\\""));
        }
        if (set.contains('\\')) {
            options.add(rx.literal("\\\\"));
        }
        for (int c = 0; c < 0x20; c++) {
            if (set.contains(c)) {
                String hex = String.format("%04x", c);
                options.add(rx.literal("\\u" + hex));
                options.add(rx.literal("\\u" + hex.toUpperCase(java.util.Locale.ROOT)));
                String shortForm = switch (c) {
                    case '\n' -> "\\n";
                    case '\t' -> "\\t";
                    case '\r' -> "\\r";
                    case '\b' -> "\\b";
                    case '\f' -> "\\f";
                    default -> null;
                };
                if (shortForm != null) {
                    options.add(rx.literal(shortForm));
                }
            }
        }
        return rx.alt(options);
    }

    ByteRegex.Node quoted(ByteRegex.Node content) {
        return rx.seq(rx.literal("\""), content, rx.literal("\""));
    }

    /** Any JSON value whose objects and arrays nest at most {@code depth} deep. */
    ByteRegex.Node value(int depth) {
        if (depth <= 0) {
            return scalar;
        }
        ByteRegex.Node v = values.get(depth);
        if (v == null) {
            v = rx.alt(scalar, object(depth), array(value(depth - 1), 0, ByteRegex.INF));
            values.put(depth, v);
        }
        return v;
    }

    /** An object of any keys whose values are generic values nesting below {@code depth}. */
    ByteRegex.Node object(int depth) {
        return map(value(depth - 1));
    }

    /** An object of any string keys, each value matching {@code value}. */
    ByteRegex.Node map(ByteRegex.Node value) {
        ByteRegex.Node member = rx.seq(string, colon, value);
        return rx.seq(rx.literal("{"), ws, rx.alt(rx.literal("}"),
                rx.seq(member, rx.star(rx.seq(comma, member)), ws, rx.literal("}"))));
    }

    /** An array of {@code min} to {@code max} items, each matching {@code item}. */
    ByteRegex.Node array(ByteRegex.Node item, int min, int max) {
        ByteRegex.Node open = rx.seq(rx.literal("["), ws);
        ByteRegex.Node close = rx.seq(ws, rx.literal("]"));
        ByteRegex.Node rest = rx.rep(rx.seq(comma, item), Math.max(min - 1, 0), max == ByteRegex.INF ? ByteRegex.INF : max - 1);
        ByteRegex.Node nonEmpty = max == 0 ? rx.none : rx.seq(item, rest, close);
        return rx.seq(open, min == 0 ? rx.alt(rx.literal("]"), nonEmpty) : nonEmpty);
    }

    /** The compact JSON text of {@code value} (Jackson's serialization), literally. */
    ByteRegex.Node literal(JsonNode value) {
        try {
            return rx.literal(JSON.writeValueAsString(value));
        } catch (JsonProcessingException e) {
            throw new ConstraintException("enum", "cannot serialize " + value + ": " + e.getOriginalMessage());
        }
    }
}
