package io.radixkv.text.output;

import java.util.ArrayList;
import java.util.List;

/** Splits {@code {...} ; {...}} into its objects, respecting strings and nesting. */
final class JsonObjects {
    private JsonObjects() {}

    /**
     * The top-level bracketed values of {@code text}, which must be values separated by
     * {@code separator} (whitespace around it allowed) and nothing else.
     *
     * @throws IllegalArgumentException when {@code text} is not of that shape
     */
    static List<String> split(String text, char separator) {
        List<String> out = new ArrayList<>();
        int k = skipSpace(text, 0);
        while (true) {
            int end = valueEnd(text, k);
            out.add(text.substring(k, end));
            k = skipSpace(text, end);
            if (k == text.length()) {
                return out;
            }
            if (text.charAt(k) != separator) {
                throw new IllegalArgumentException("expected '" + separator + "' at " + k);
            }
            k = skipSpace(text, k + 1);
        }
    }

    private static int skipSpace(String s, int k) {
        while (k < s.length() && Character.isWhitespace(s.charAt(k))) {
            k++;
        }
        return k;
    }

    /** End (exclusive) of the bracketed value starting at {@code k}. */
    private static int valueEnd(String s, int k) {
        if (k >= s.length() || (s.charAt(k) != '{' && s.charAt(k) != '[')) {
            throw new IllegalArgumentException("expected an object at " + k);
        }
        int depth = 0;
        boolean inString = false;
        for (int i = k; i < s.length(); i++) {
            char c = s.charAt(i);
            if (inString) {
                if (c == '\\') {
                    i++;
                } else if (c == '"') {
                    inString = false;
                }
            } else if (c == '"') {
                inString = true;
            } else if (c == '{' || c == '[') {
                depth++;
            } else if ((c == '}' || c == ']') && --depth == 0) {
                return i + 1;
            }
        }
        throw new IllegalArgumentException("unterminated value at " + k);
    }
}
