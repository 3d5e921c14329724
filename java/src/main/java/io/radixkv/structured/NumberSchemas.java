package io.radixkv.structured;

import com.fasterxml.jackson.databind.JsonNode;
import java.math.BigDecimal;
import java.math.RoundingMode;
import java.util.ArrayList;
import java.util.List;

/**
 * Number schemas. Integers honour {@code minimum}, {@code maximum}, {@code exclusiveMinimum} and
 * {@code exclusiveMaximum} (numbers) as a digit-by-digit pattern of the range; numbers honour
 * only {@code minimum: 0} (no sign); any other bound on a number is refused.
 */
final class NumberSchemas {
    /** Magnitudes up to 18 digits: what an unbounded side of a range allows. */
    private static final long MAX_MAGNITUDE = 999_999_999_999_999_999L;

    private NumberSchemas() {}

    static ByteRegex.Node number(JsonGrammar json, JsonNode s, String path) {
        for (String k : new String[] {"maximum", "exclusiveMinimum", "exclusiveMaximum"}) {
            if (s.has(k)) {
                throw new ConstraintException(k, "JSON schema keyword '" + k + "' at " + path
                        + ": bounds on a number are not supported (on an integer they are)");
            }
        }
        JsonNode min = s.get("minimum");
        if (min == null) {
            return json.number;
        }
        if (!min.isNumber() || min.asDouble() != 0.0) {
            throw new ConstraintException("minimum", "JSON schema keyword 'minimum' at " + path
                    + ": on a number only 0 is supported, got " + min);
        }
        return json.nonNegativeNumber;
    }

    static ByteRegex.Node integer(JsonGrammar json, JsonNode s, String path) {
        if (!s.has("minimum") && !s.has("maximum") && !s.has("exclusiveMinimum") && !s.has("exclusiveMaximum")) {
            return json.integer;
        }
        long lo = -MAX_MAGNITUDE;
        long hi = MAX_MAGNITUDE;
        lo = Math.max(lo, bound(s, "minimum", path, RoundingMode.CEILING, 0));
        lo = Math.max(lo, bound(s, "exclusiveMinimum", path, RoundingMode.FLOOR, 1));
        hi = Math.min(hi, bound(s, "maximum", path, RoundingMode.FLOOR, 0));
        hi = Math.min(hi, bound(s, "exclusiveMaximum", path, RoundingMode.CEILING, -1));
        if (lo > hi) {
            throw new ConstraintException("minimum", "JSON schema keyword 'minimum' at " + path
                    + ": the integer range is empty, so nothing matches");
        }
        return range(json.rx, lo, hi);
    }

    /** The bound as an inclusive integer; absent: no bound on that side. */
    private static long bound(JsonNode s, String k, String path, RoundingMode mode, int shift) {
        JsonNode n = s.get(k);
        boolean lower = k.contains("inimum");
        if (n == null) {
            return lower ? -MAX_MAGNITUDE : MAX_MAGNITUDE;
        }
        if (!n.isNumber()) {
            throw new ConstraintException(k, "JSON schema keyword '" + k + "' at " + path + ": must be a number, got " + n);
        }
        BigDecimal v = n.decimalValue().setScale(0, mode);
        v = v.add(BigDecimal.valueOf(shift)); // exclusive: the next integer past floor / ceiling
        BigDecimal cap = BigDecimal.valueOf(MAX_MAGNITUDE);
        return v.max(cap.negate()).min(cap).longValueExact();
    }

    /** Integers in {@code [lo, hi]} written as JSON does (no leading zeros, no "-0"). */
    static ByteRegex.Node range(ByteRegex rx, long lo, long hi) {
        List<ByteRegex.Node> alts = new ArrayList<>();
        if (hi >= 0) {
            alts.add(magnitudes(rx, Math.max(lo, 0), hi));
        }
        if (lo < 0) {
            alts.add(rx.seq(rx.literal("-"), magnitudes(rx, Math.max(-hi, 1), -lo)));
        }
        return rx.alt(alts);
    }

    private static ByteRegex.Node magnitudes(ByteRegex rx, long lo, long hi) {
        List<ByteRegex.Node> alts = new ArrayList<>();
        String a = Long.toString(lo);
        String b = Long.toString(hi);
        for (int len = a.length(); len <= b.length(); len++) {
            String from = len == a.length() ? a : "1" + "0".repeat(len - 1);
            String to = len == b.length() ? b : "9".repeat(len);
            alts.add(sameLength(rx, from, to));
        }
        return rx.alt(alts);
    }

    // Digit strings of one length between from and to inclusive (from <= to).
    private static ByteRegex.Node sameLength(ByteRegex rx, String from, String to) {
        if (from.isEmpty()) {
            return rx.empty;
        }
        int x = from.charAt(0);
        int y = to.charAt(0);
        String fr = from.substring(1);
        String tr = to.substring(1);
        if (x == y) {
            return rx.seq(rx.range(x, x), sameLength(rx, fr, tr));
        }
        ByteRegex.Node digits = rx.rep(rx.range('0', '9'), fr.length(), fr.length());
        List<ByteRegex.Node> alts = new ArrayList<>();
        alts.add(rx.seq(rx.range(x, x), sameLength(rx, fr, "9".repeat(fr.length()))));
        if (y - x > 1) {
            alts.add(rx.seq(rx.range(x + 1, y - 1), digits));
        }
        alts.add(rx.seq(rx.range(y, y), sameLength(rx, "0".repeat(tr.length()), tr)));
        return rx.alt(alts);
    }
}
