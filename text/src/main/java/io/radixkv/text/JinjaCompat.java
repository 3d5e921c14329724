package io.radixkv.text;

/**
 * Rewrites the two bits of Python Jinja2 syntax that chat templates use and Jinjava's
 * expression parser reads differently, into equivalent Jinjava syntax; everything outside
 * {@code {{ }}} and {@code {% %}} tags and inside string literals is left alone:
 * <ul>
 *   <li>a reversing slice {@code x[::-1]} (Qwen: {@code messages[::-1]}) becomes
 *       {@code (x|reverse)};
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
            out.append(source, i, open + 2);
            String close = source.charAt(open + 1) == '{' ? "}}" : "%}";
            int end = tagEnd(source, open + 2, close);
            String body = source.substring(open + 2, end);
            if (source.startsWith("raw", skipSpaceAndDash(source, open + 2)) && close.equals("%}")) {
                int endraw = source.indexOf("endraw", end);
                int rawEnd = endraw < 0 ? source.length() : tagEnd(source, endraw, "%}") + 2;
                out.append(source, open + 2, Math.min(rawEnd, source.length()));
                i = rawEnd;
                continue;
            }
            out.append(keywordArguments(reverseSlices(body)));
            i = end;
        }
        return out.toString();
    }

    private static int nextTag(String s, int from) {
        for (int k = from; k + 1 < s.length(); k++) {
            if (s.charAt(k) == '{' && (s.charAt(k + 1) == '{' || s.charAt(k + 1) == '%')) {
                return k;
            }
            if (s.charAt(k) == '{' && s.charAt(k + 1) == '#') { // comment: skip whole
                int c = s.indexOf("#}", k + 2);
                k = c < 0 ? s.length() : c + 1;
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
