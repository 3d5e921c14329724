package io.radixkv.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

/** Stop strings on streamed text: cut before the first match, never release text past it. */
class StopStringsTest {

    /** Feeds the pieces and returns everything released (plus the drain when no stop matched). */
    private static String run(List<String> stops, String... pieces) {
        StopStrings s = new StopStrings(stops);
        StringBuilder out = new StringBuilder();
        for (String p : pieces) {
            out.append(s.accept(p));
            if (s.matched()) {
                return out.toString();
            }
        }
        return out.append(s.drain()).toString();
    }

    @Test
    void stopSpanningPiecesIsCutAndNeverReleased() {
        StopStrings s = new StopStrings(List.of("END"));
        assertEquals("abc", s.accept("abcE"), "a possible stop start is held back");
        assertEquals("", s.accept("N"));
        assertFalse(s.matched());
        assertEquals("", s.accept("Dxyz"), "the stop string and what follows never show");
        assertTrue(s.matched());
        assertEquals("", s.accept("more"));
    }

    @Test
    void earliestOfSeveralStopsWins() {
        assertEquals("one ", run(List.of("three", "two"), "one two three"));
        assertEquals("a", run(List.of("bc", "b"), "a", "b", "c"));
    }

    @Test
    void heldTextIsReleasedWhenNoStopComes() {
        assertEquals("hello world", new StopStrings(List.of("wxyz")).accept("hello world"), "nothing to hold");
        assertEquals("hello ", new StopStrings(List.of("wxyz")).accept("hello w"), "only a possible stop start");
        assertEquals("hello world", run(List.of("wxyz"), "hello ", "world"));
        assertEquals("plain", run(List.of(), "pl", "ain"));
    }

    @Test
    void surrogatePairsAreNotSplit() {
        String emoji = "\uD83D\uDE00"; // one code point, two chars
        StopStrings s = new StopStrings(List.of(emoji + "!"));
        assertEquals("x", s.accept("x" + emoji), "the whole code point is held");
        assertEquals(emoji + "?", s.accept("?"));
        assertEquals("ok", run(List.of(emoji + "!"), "ok" + emoji, "!", "tail"));
    }

    @Test
    void includeStopStringKeepsTheFirstMatchAndNothingAfter() {
        StopStrings s = new StopStrings(List.of("xyz", "EN"), true);
        assertEquals("ab", s.accept("abE"));
        assertEquals("EN", s.accept("ND and more xyz"), "the held start and the rest of the stop, nothing after");
        assertTrue(s.matched());
        assertEquals("", s.accept("later"));
    }

    @Test
    void beforeMinTokensStopsAreNotMatchedButTheirStartIsHeld() {
        StopStrings s = new StopStrings(List.of("END"));
        assertEquals("a END b", s.accept("a END b", false), "a complete stop string passes");
        assertEquals("x ", s.accept("x EN", false), "its possible start is held");
        assertEquals("", s.accept("D y", true), "a stop string ending past min_tokens matches");
        assertTrue(s.matched());
    }
}
