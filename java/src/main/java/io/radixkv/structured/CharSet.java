package io.radixkv.structured;

import java.util.ArrayList;
import java.util.List;

/**
 * A set of Unicode code points as sorted, disjoint, non-adjacent ranges {@code [lo, hi]}
 * (surrogates are never encoded: {@link #toUtf8} leaves them out).
 */
record CharSet(List<int[]> ranges) {
    static final int MAX = 0x10FFFF;

    CharSet {
        ranges = normalize(ranges);
    }

    static CharSet of(int lo, int hi) {
        return new CharSet(List.of(new int[] {lo, hi}));
    }

    static CharSet of(int c) {
        return of(c, c);
    }

    static CharSet none() {
        return new CharSet(List.of());
    }

    boolean isEmpty() {
        return ranges.isEmpty();
    }

    boolean contains(int c) {
        for (int[] r : ranges) {
            if (c >= r[0] && c <= r[1]) {
                return true;
            }
        }
        return false;
    }

    CharSet union(CharSet o) {
        List<int[]> all = new ArrayList<>(ranges);
        all.addAll(o.ranges);
        return new CharSet(all);
    }

    CharSet complement() {
        List<int[]> out = new ArrayList<>();
        int next = 0;
        for (int[] r : ranges) {
            if (r[0] > next) {
                out.add(new int[] {next, r[0] - 1});
            }
            next = r[1] + 1;
        }
        if (next <= MAX) {
            out.add(new int[] {next, MAX});
        }
        return new CharSet(out);
    }

    CharSet minus(CharSet o) {
        return complement().union(o).complement();
    }

    private static List<int[]> normalize(List<int[]> in) {
        List<int[]> sorted = new ArrayList<>();
        for (int[] r : in) {
            if (r[0] <= r[1]) {
                sorted.add(new int[] {Math.max(0, r[0]), Math.min(MAX, r[1])});
            }
        }
        sorted.sort((p, q) -> Integer.compare(p[0], q[0]));
        List<int[]> out = new ArrayList<>();
        for (int[] r : sorted) {
            int[] last = out.isEmpty() ? null : out.get(out.size() - 1);
            if (last != null && r[0] <= last[1] + 1) {
                last[1] = Math.max(last[1], r[1]);
            } else {
                out.add(r);
            }
        }
        return List.copyOf(out);
    }

    /** The UTF-8 encodings of these code points, one byte expression (surrogates excluded). */
    ByteRegex.Node toUtf8(ByteRegex rx) {
        List<ByteRegex.Node> out = new ArrayList<>();
        for (int[] r : ranges) {
            split(rx, r[0], r[1], out);
        }
        return rx.alt(out);
    }

    // The byte sequences of [lo, hi] as ranges per byte position: split where the encoded length
    // changes and until every continuation byte but the leading one spans whole 6-bit blocks.
    private static void split(ByteRegex rx, int lo, int hi, List<ByteRegex.Node> out) {
        if (lo > hi) {
            return;
        }
        for (int max : new int[] {0x7F, 0x7FF, 0xFFFF}) {
            if (lo <= max && max < hi) {
                split(rx, lo, max, out);
                split(rx, max + 1, hi, out);
                return;
            }
        }
        if (lo <= 0xDFFF && hi >= 0xD800) {
            split(rx, lo, 0xD7FF, out);
            split(rx, 0xE000, hi, out);
            return;
        }
        if (hi < 0x80) {
            out.add(rx.range(lo, hi));
            return;
        }
        int n = hi <= 0x7FF ? 2 : hi <= 0xFFFF ? 3 : 4;
        for (int i = 1; i < n; i++) {
            int m = (1 << (6 * i)) - 1;
            if ((lo & ~m) != (hi & ~m)) {
                if ((lo & m) != 0) {
                    split(rx, lo, lo | m, out);
                    split(rx, (lo | m) + 1, hi, out);
                    return;
                }
                if ((hi & m) != m) {
                    split(rx, lo, (hi & ~m) - 1, out);
                    split(rx, hi & ~m, hi, out);
                    return;
                }
            }
        }
        byte[] a = new String(Character.toChars(lo)).getBytes(java.nio.charset.StandardCharsets.UTF_8);
        byte[] b = new String(Character.toChars(hi)).getBytes(java.nio.charset.StandardCharsets.UTF_8);
        ByteRegex.Node[] parts = new ByteRegex.Node[a.length];
        for (int j = 0; j < a.length; j++) {
            parts[j] = rx.range(a[j] & 0xFF, b[j] & 0xFF);
        }
        out.add(rx.seq(parts));
    }
}
