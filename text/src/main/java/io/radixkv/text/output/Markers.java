package io.radixkv.text.output;

/** Text markers that arrive piece by piece ({@code <tool_call>}, {@code </think>}). */
final class Markers {
    private Markers() {}

    /**
     * Where {@code text} stops being safe to pass on before {@code marker}: the index of the
     * marker, or, without one, the start of the longest suffix that could still become it.
     */
    static int before(String text, String marker) {
        int at = text.indexOf(marker);
        if (at >= 0) {
            return at;
        }
        for (int k = Math.min(marker.length() - 1, text.length()); k > 0; k--) {
            if (text.endsWith(marker.substring(0, k))) {
                return text.length() - k;
            }
        }
        return text.length();
    }

    /** Whether {@code text} is {@code marker} cut short (empty included). */
    static boolean isPrefixOf(String text, String marker) {
        return text.length() < marker.length() && marker.startsWith(text);
    }
}
