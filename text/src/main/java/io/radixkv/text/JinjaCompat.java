package io.radixkv.text;

/**
 * Rewrites what Python's Jinja2 (as transformers configures it) and Jinjava read differently
 * into equivalent Jinjava source; text outside tags, comments, raw blocks and string literals
 * are left alone:
 * <ul>
 *   <li>{@code lstrip_blocks} as Jinja2 has it: only the spaces and tabs that start a line
 *       before a block or comment tag go ({@code {%+} keeps them). Jinjava's own option also
 *       strips the space in {@code {% endif %} {% endfor %}}, so it is off;
 *   <li>a reversing slice {@code x[::-1]} (Qwen: {@code messages[::-1]}) becomes
 *       {@code (x|reverse)};
 *   <li>{@code not x is test} is {@code not (x is test)}, as Jinja2 binds it; Jinjava reads
 *       {@code (not x) is test} (tool templates: {@code not tools is defined},
 *       {@code not tools is none});
 *   <li>a keyword argument's value is parenthesised: {@code namespace(i=messages|length - 1)}
 *       would otherwise bind as {@code (i=messages|length) - 1}.
 * </ul>
 */
final class JinjaCompat {
    private JinjaCompat() {}

    static String rewrite(String source) {
        StringBuilder out = new StringBuilder(source.length() + 64);
        int i = 0;
        while (i < source.length()) {
            int open = nextTag(source, i);
            if (open < 0) {
                out.append(source, i, source.length());
                break;
            }
            char kind = source.charAt(open + 1);
            boolean plus = open + 2 < source.length() && source.charAt(open + 2) == '+';
            out.append(source, i, kind == '{' || plus ? open : lstrip(source, i, open));
            if (kind == '#') {
                int end = source.indexOf("#}", open + 2);
                end = end < 0 ? source.length() : end + 2;
                out.append(source, open, end);
                i = end;
                continue;
            }
            out.append(source, open, open + 2);
            int bodyStart = plus ? open + 3 : open + 2; // Jinjava has no {%+: its lstrip is ours
            String close = kind == '{' ? "}}" : "%}";
            int end = tagEnd(source, bodyStart, close);
            if (kind == '%' && source.startsWith("raw", skipSpaceAndDash(source, bodyStart))) {
                int endraw = source.indexOf("endraw", end);
                int rawEnd = endraw < 0 ? source.length() : Math.min(source.length(), tagEnd(source, endraw, "%}") + 2);
                out.append(source, bodyStart, rawEnd);
                i = rawEnd;
                continue;
            }
            out.append(keywordArguments(notIs(reverseSlices(source.substring(bodyStart, end)))));
            i = end;
        }
        return out.toString();
    }

    /**
     * Jinja2's lstrip_blocks: the spaces and tabs between a line's start and a block or
     * comment tag are dropped. Returns where the text {@code [from, tag)} is to be cut.
     */
    private static int lstrip(String s, int from, int tag) {
        int ws = tag;
        while (ws > from && (s.charAt(ws - 1) == ' ' || s.charAt(ws - 1) == '\t')) {
            ws--;
        }
        return ws == 0 || s.charAt(ws - 1) == '\n' || s.charAt(ws - 1) == '\r' ? ws : tag;
    }

    private static int nextTag(String s, int from) {
        for (int k = from; k + 1 < s.length(); k++) {
            char c = s.charAt(k + 1);
            if (s.charAt(k) == '{' && (c == '{' || c == '%' || c == '#')) {
                return k;
            }
        }
        return -1;
    }

    private static int skipSpaceAndDash(String s, int k) {
        while (k < s.length() && (s.charAt(k) == '-' || s.charAt(k) == '+' || Character.isWhitespace(s.charAt(k)))) {
            k++;
        }
        return k;
    }

    /** Index of the tag's closing delimiter, skipping string literals. */
    private static int tagEnd(String s, int from, String close) {
        for (int k = from; k < s.length(); k++) {
            char c = s.charAt(k);
            if (c == '\'' || c == '"') {
                k = stringEnd(s, k);
            } else if (s.startsWith(close, k)) {
                return k;
            }
        }
        return s.length();
    }

    /** Index of the quote closing the literal that opens at {@code start}. */
    private static int stringEnd(String s, int start) {
        char q = s.charAt(start);
        for (int k = start + 1; k < s.length(); k++) {
            if (s.charAt(k) == '\\') {
                k++;
            } else if (s.charAt(k) == q) {
                return k;
            }
        }
        return s.length() - 1;
    }

    private static final java.util.regex.Pattern NOT_IS = java.util.regex.Pattern.compile(
            "\\bnot\\s+([A-Za-z_][\\w.]*(?:\\[[^\\]]*\\])*\\s+is\\s+(?:not\\s+)?[A-Za-z_]\\w*(?:\\([^)]*\\))?)");

    /** {@code not x is test} as {@code not (x is test)}; string literals are only copied. */
    static String notIs(String e) {
        if (!e.contains("not") || !e.contains(" is ")) {
            return e;
        }
        // match on a copy whose literals are blanked, so a quoted "not x is y" is left alone
        StringBuilder masked = new StringBuilder(e);
        for (int k = 0; k < masked.length(); k++) {
            char c = masked.charAt(k);
            if (c == '\'' || c == '"') {
                int end = stringEnd(e, k);
                for (int j = k + 1; j < end; j++) {
                    masked.setCharAt(j, '_');
                }
                k = end;
            }
        }
        java.util.regex.Matcher m = NOT_IS.matcher(masked);
        StringBuilder out = new StringBuilder(e.length() + 8);
        int copied = 0;
        while (m.find()) {
            out.append(e, copied, m.start(1)).append('(').append(e, m.start(1), m.end(1)).append(')');
            copied = m.end(1);
        }
        return out.append(e, copied, e.length()).toString();
    }

    static String reverseSlices(String e) {
        StringBuilder out = new StringBuilder(e);
        for (int k = 0; k < out.length(); k++) {
            char c = out.charAt(k);
            if (c == '\'' || c == '"') {
                k = stringEnd(out.toString(), k);
                continue;
            }
            if (c == '[' && out.substring(k + 1).replace(" ", "").startsWith("::-1]")) {
                int close = out.indexOf("]", k);
                int start = primaryStart(out, k);
                if (start < k) {
                    out.replace(k, close + 1, "|reverse)");
                    out.insert(start, '(');
                }
            }
        }
        return out.toString();
    }

    /** Start of the primary expression (name, attribute and subscript chain) ending before {@code at}. */
    private static int primaryStart(CharSequence s, int at) {
        int k = at - 1;
        while (k >= 0) {
            char c = s.charAt(k);
            if (c == ']' || c == ')') {
                char open = c == ']' ? '[' : '(';
                int depth = 0;
                for (; k >= 0; k--) {
                    char d = s.charAt(k);
                    if (d == c) {
                        depth++;
                    } else if (d == open && --depth == 0) {
                        break;
                    }
                }
                k--;
            } else if (Character.isLetterOrDigit(c) || c == '_' || c == '.') {
                k--;
            } else {
                break;
            }
        }
        return k + 1;
    }

    /** Wraps each keyword argument's value of a call in parentheses. */
    static String keywordArguments(String e) {
        StringBuilder out = new StringBuilder(e.length() + 16);
        java.util.ArrayDeque<Boolean> wrapped = new java.util.ArrayDeque<>(); // per open paren: inside a kwarg value
        int k = 0;
        while (k < e.length()) {
            char c = e.charAt(k);
            if (c == '\'' || c == '"') {
                int end = stringEnd(e, k);
                out.append(e, k, end + 1);
                k = end + 1;
                continue;
            }
            if (c == '(' || c == '[' || c == '{') {
                wrapped.push(false);
                out.append(c);
                k++;
                if (c == '(') {
                    k = kwargStart(e, k, out, wrapped);
                }
                continue;
            }
            if (c == ',' && !wrapped.isEmpty()) {
                if (wrapped.peek()) {
                    out.append(')');
                    wrapped.pop();
                    wrapped.push(false);
                }
                out.append(c);
                k++;
                if (isCallParen(out)) {
                    k = kwargStart(e, k, out, wrapped);
                }
                continue;
            }
            if (c == ')' || c == ']' || c == '}') {
                if (!wrapped.isEmpty() && wrapped.pop()) {
                    out.append(')');
                }
                out.append(c);
                k++;
                continue;
            }
            out.append(c);
            k++;
        }
        return out.toString();
    }

    /** Whether the innermost open bracket in {@code out} is a parenthesis. */
    private static boolean isCallParen(CharSequence out) {
        int depth = 0;
        for (int k = out.length() - 1; k >= 0; k--) {
            char c = out.charAt(k);
            if (c == ')' || c == ']' || c == '}') {
                depth++;
            } else if (c == '(' || c == '[' || c == '{') {
                if (depth == 0) {
                    return c == '(';
                }
                depth--;
            }
        }
        return false;
    }

    /** At an argument's start: if it is {@code name=value}, copy {@code name=(} and mark the paren. */
    private static int kwargStart(String e, int k, StringBuilder out, java.util.ArrayDeque<Boolean> wrapped) {
        int j = k;
        while (j < e.length() && Character.isWhitespace(e.charAt(j))) {
            j++;
        }
        int nameStart = j;
        while (j < e.length() && (Character.isLetterOrDigit(e.charAt(j)) || e.charAt(j) == '_')) {
            j++;
        }
        if (j == nameStart || Character.isDigit(e.charAt(nameStart))) {
            return k;
        }
        int n = j;
        while (n < e.length() && Character.isWhitespace(e.charAt(n))) {
            n++;
        }
        if (n < e.length() && e.charAt(n) == '=' && (n + 1 >= e.length() || e.charAt(n + 1) != '=')) {
            out.append(e, k, n + 1).append('(');
            wrapped.pop();
            wrapped.push(true);
            return n + 1;
        }
        return k;
    }
}
