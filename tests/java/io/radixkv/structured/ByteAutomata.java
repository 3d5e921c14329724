package io.radixkv.structured;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

/** Test helpers over a constraint's byte automaton. */
final class ByteAutomata {
    private ByteAutomata() {}

    static ByteRegex.Node start(Constraint c, ByteRegex rx) {
        return c.compile(rx);
    }

    /** The state after {@code text}'s UTF-8 bytes (none when it leaves the language). */
    static ByteRegex.Node walk(ByteRegex rx, ByteRegex.Node q, String text) {
        for (byte b : text.getBytes(StandardCharsets.UTF_8)) {
            q = rx.step(q, b & 0xFF);
        }
        return q;
    }

    static boolean matches(ByteRegex rx, ByteRegex.Node start, String text) {
        return walk(rx, start, text).nullable;
    }

    /**
     * A random text of the language: from each state a uniformly drawn live byte, stopping with
     * probability {@code stop} where the state accepts (always where nothing can follow), giving
     * up after {@code maxBytes} (null then). The bytes are decoded as UTF-8.
     */
    static String sample(ByteRegex rx, ByteRegex.Node start, SplittableRandom rnd, double stop, int maxBytes) {
        ByteRegex.Node q = start;
        byte[] out = new byte[maxBytes];
        for (int n = 0; n < maxBytes; n++) {
            List<Integer> live = new ArrayList<>();
            for (int b = 0; b < 256; b++) {
                if (rx.step(q, b) != rx.none) {
                    live.add(b);
                }
            }
            if (q.nullable && (live.isEmpty() || rnd.nextDouble() < stop)) {
                return new String(out, 0, n, StandardCharsets.UTF_8);
            }
            if (live.isEmpty()) {
                throw new AssertionError("a live state with no byte and no end");
            }
            // lean towards closing strings, objects and arrays so random texts stay short
            List<Integer> closing = live.stream().filter(x -> x == '"' || x == '}' || x == ']').toList();
            int b = !closing.isEmpty() && rnd.nextDouble() < 0.25 ? closing.get(rnd.nextInt(closing.size()))
                    : live.get(rnd.nextInt(live.size()));
            out[n] = (byte) b;
            q = rx.step(q, b);
        }
        return null;
    }
}
