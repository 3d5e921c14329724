package io.radixkv.structured;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * The regex automaton against java.util.regex, by brute force: random small regexes over a
 * three-letter alphabet (one letter two bytes long in UTF-8), every text up to five letters
 * (full match), and every prefix up to three letters (a live prefix must have a completion that
 * java.util.regex matches, found through the automaton; a dead one must have none among the
 * texts up to seven letters).
 */
class RegexConstraintTest {
    private static final String[] ALPHABET = {"a", "b", "é"};

    @Test
    void randomRegexesMatchExactlyWhatJavaRegexMatches() {
        SplittableRandom rnd = new SplittableRandom(42);
        List<String> texts = texts(7);
        for (int k = 0; k < 150; k++) {
            String regex = randomRegex(rnd, 2);
            Pattern p = Pattern.compile(regex, Pattern.UNIX_LINES);
            ByteRegex rx = new ByteRegex();
            ByteRegex.Node start = ByteAutomata.start(Constraint.regex(regex), rx);
            for (String t : texts) {
                if (t.codePointCount(0, t.length()) <= 5) {
                    assertEquals(p.matcher(t).matches(), ByteAutomata.matches(rx, start, t), regex + " on '" + t + "'");
                }
            }
            for (String prefix : texts) {
                if (prefix.codePointCount(0, prefix.length()) > 3) {
                    continue;
                }
                ByteRegex.Node q = ByteAutomata.walk(rx, start, prefix);
                if (q != rx.none) {
                    String completion = ByteAutomata.sample(rx, q, new SplittableRandom(k), 0.5, 400);
                    assertNotNull(completion, regex);
                    assertTrue(p.matcher(prefix + completion).matches(),
                            regex + ": live prefix '" + prefix + "' completed to '" + prefix + completion + "'");
                } else {
                    for (String t : texts) {
                        assertFalse(t.startsWith(prefix) && p.matcher(t).matches(),
                                regex + ": dead prefix '" + prefix + "' but '" + t + "' matches");
                    }
                }
            }
        }
    }

    @Test
    void classesEscapesAndCountsMatchLikeJavaRegex() {
        String[] regexes = {"\\d{3}-\\d{2,4}", "[A-Za-z_][\\w]*", "(?:ab|c)+x?", "[^a-c]{2}", "\\s\\S", "a{2,}",
            "(?<g>x|y)z", "[\\-.]+", "\\x41\\u00e9", "colou?r|gr[ae]y", "^abc$", ".é."};
        String[] probes = {"123-45", "123-4567", "12-45", "_a9", "9a", "abcab", "abcx", "d!", "ab", " x", "  ",
            "aa", "a", "aaaa", "xz", "yz", "-.-", "Aé", "color", "grey", "gray", "abc", "aéb", "a\né"};
        for (String regex : regexes) {
            Pattern p = Pattern.compile(regex, Pattern.UNIX_LINES);
            ByteRegex rx = new ByteRegex();
            ByteRegex.Node start = ByteAutomata.start(Constraint.regex(regex), rx);
            for (String t : probes) {
                assertEquals(p.matcher(t).matches(), ByteAutomata.matches(rx, start, t), regex + " on '" + t + "'");
            }
        }
    }

    @Test
    void unsupportedFeaturesAreRefusedNamingThem() {
        String[][] refused = {{"(a)\\1", "back-references"}, {"a(?=b)", "lookaround"}, {"a\\bb", "word boundaries"},
            {"a^b", "'^'"}, {"a$b", "'$'"}, {"\\p{L}", "Unicode property"}, {"a++", "possessive"}, {"(ab", "missing ')'"},
            {"a{2000}", "above"}, {"*a", "nothing to repeat"}};
        for (String[] r : refused) {
            ConstraintException e = assertThrows(ConstraintException.class,
                    () -> Constraint.regex(r[0]).compile(new ByteRegex()), r[0]);
            assertEquals("regex", e.keyword());
            assertTrue(e.getMessage().contains(r[1]), r[0] + ": " + e.getMessage());
        }
    }

    @Test
    void aChoiceMatchesExactlyItsStrings() {
        ByteRegex rx = new ByteRegex();
        ByteRegex.Node start = ByteAutomata.start(Constraint.choice(List.of("yes", "no", "not sure")), rx);
        assertTrue(ByteAutomata.matches(rx, start, "yes"));
        assertTrue(ByteAutomata.matches(rx, start, "not sure"));
        assertTrue(ByteAutomata.matches(rx, start, "no"));
        assertFalse(ByteAutomata.matches(rx, start, "not"));
        assertFalse(ByteAutomata.matches(rx, start, "yess"));
        assertNotEquals(rx.none, ByteAutomata.walk(rx, start, "not "));
        assertEquals(rx.none, ByteAutomata.walk(rx, start, "x"));
    }

    private static List<String> texts(int maxLetters) {
        List<String> out = new ArrayList<>();
        out.add("");
        List<String> level = List.of("");
        for (int n = 1; n <= maxLetters; n++) {
            List<String> next = new ArrayList<>();
            for (String s : level) {
                for (String a : ALPHABET) {
                    next.add(s + a);
                }
            }
            out.addAll(next);
            level = next;
        }
        return out;
    }

    private static String randomRegex(SplittableRandom rnd, int depth) {
        int kind = depth == 0 ? rnd.nextInt(3) : rnd.nextInt(7);
        return switch (kind) {
            case 0 -> ALPHABET[rnd.nextInt(ALPHABET.length)];
            case 1 -> rnd.nextBoolean() ? "[aé]" : "[^b]";
            case 2 -> ".";
            case 3 -> "(?:" + randomRegex(rnd, depth - 1) + "|" + randomRegex(rnd, depth - 1) + ")";
            case 4 -> randomRegex(rnd, depth - 1) + randomRegex(rnd, depth - 1);
            case 5 -> "(?:" + randomRegex(rnd, depth - 1) + ")" + new String[] {"*", "+", "?", "{2}", "{1,2}", "{0,}"}[rnd.nextInt(6)];
            default -> "(" + randomRegex(rnd, depth - 1) + ")" + randomRegex(rnd, depth - 1);
        };
    }
}
