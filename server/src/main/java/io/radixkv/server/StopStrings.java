package io.radixkv.server;

import java.util.List;

/**
 * Stop strings matched on the generated text, as vLLM does: the output ends just before the
 * first stop string (or just after it, with {@code include_stop_str_in_output}), and no text
 * past it is ever released. The end of
 * the text that could still be the start of a stop string is held back until it cannot.
 */
final class StopStrings {
    private final List<String> stops;
    private final int holdBack;
    private final StringBuilder pending = new StringBuilder();
    private final boolean includeStop;
    private boolean matched;

    StopStrings(List<String> stops) {
        this(stops, false);
    }

    StopStrings(List<String> stops, boolean includeStop) {
        this.stops = List.copyOf(stops);
        this.includeStop = includeStop;
        this.holdBack = stops.stream().mapToInt(String::length).max().orElse(1) - 1;
    }

    /** Adds generated text; returns the text that is now safe to emit. */
    String accept(String text) {
        return accept(text, true);
    }

    /**
     * Adds generated text; returns the text that is now safe to emit. {@code match} false (the
     * tokens before {@code min_tokens}, which vLLM does not check) only holds back the end that
     * a stop string may start with: a stop string ending in later text may begin in it, but one
     * complete in it is released.
     */
    String accept(String text, boolean match) {
        if (matched) {
            return "";
        }
        pending.append(text);
        if (stops.isEmpty()) {
            return drain();
        }
        int cut = -1;
        int end = -1;
        for (String s : stops) {
            int i = match ? pending.indexOf(s) : -1;
            if (i >= 0 && (cut < 0 || i < cut)) {
                cut = i;
                end = i + s.length();
            }
        }
        if (cut >= 0) {
            matched = true;
            String out = pending.substring(0, includeStop ? end : cut);
            pending.setLength(0);
            return out;
        }
        int safe = pending.length() - heldSuffix();
        // never split a surrogate pair between what is emitted and what is held
        if (safe > 0 && safe < pending.length() && Character.isHighSurrogate(pending.charAt(safe - 1))) {
            safe--;
        }
        if (safe <= 0) {
            return "";
        }
        String out = pending.substring(0, safe);
        pending.delete(0, safe);
        return out;
    }

    /** Length of the longest end of the pending text that a stop string starts with. */
    private int heldSuffix() {
        int n = pending.length();
        for (int k = Math.min(holdBack, n); k > 0; k--) {
            for (String s : stops) {
                if (k < s.length() && CharSequence.compare(s.subSequence(0, k), pending.subSequence(n - k, n)) == 0) {
                    return k;
                }
            }
        }
        return 0;
    }

    /** True once a stop string has been seen: generation must end. */
    boolean matched() {
        return matched;
    }

    /** At the end of generation without a match: everything still held back. */
    String drain() {
        String out = pending.toString();
        pending.setLength(0);
        return out;
    }
}
