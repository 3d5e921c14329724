package io.radixkv.text;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Locale;

/**
 * Python's {@code str} methods that chat templates call ({@code message.content.strip()},
 * {@code .split('</think>')}, {@code .startswith(...)}), with Python's semantics: whitespace
 * is {@code str.isspace()}, {@code split()} without a separator drops empty fields, with one
 * it keeps them, and so on. Java's String has none of these under these names.
 */
final class PyStr {
    private PyStr() {}

    /** Calls method {@code name} of Python's str on {@code s}; throws when it is not one we provide. */
    static Object call(String s, String name, Object[] args) {
        return switch (name) {
            case "strip" -> strip(s, chars(args, 0), true, true);
            case "lstrip" -> strip(s, chars(args, 0), true, false);
            case "rstrip" -> strip(s, chars(args, 0), false, true);
            case "split" -> split(s, chars(args, 0), maxsplit(args));
            case "rsplit" -> rsplit(s, chars(args, 0), maxsplit(args));
            case "splitlines" -> s.lines().toList();
            case "startswith" -> affix(s, arg(args, 0), true);
            case "endswith" -> affix(s, arg(args, 0), false);
            case "upper" -> s.toUpperCase(Locale.ROOT);
            case "lower" -> s.toLowerCase(Locale.ROOT);
            case "capitalize" -> s.isEmpty() ? s
                    : s.substring(0, 1).toUpperCase(Locale.ROOT) + s.substring(1).toLowerCase(Locale.ROOT);
            case "title" -> title(s);
            case "replace" -> replace(s, str(args, 0), str(args, 1), args.length > 2 ? ((Number) args[2]).intValue() : -1);
            case "find" -> s.indexOf(str(args, 0));
            case "rfind" -> s.lastIndexOf(str(args, 0));
            case "count" -> count(s, str(args, 0));
            case "join" -> join(s, arg(args, 0));
            case "isspace" -> !s.isEmpty() && s.codePoints().allMatch(PyStr::isSpace);
            case "isdigit" -> !s.isEmpty() && s.codePoints().allMatch(Character::isDigit);
            case "isalpha" -> !s.isEmpty() && s.codePoints().allMatch(Character::isLetter);
            case "isalnum" -> !s.isEmpty() && s.codePoints().allMatch(Character::isLetterOrDigit);
            case "islower" -> s.chars().anyMatch(Character::isLetter) && s.equals(s.toLowerCase(Locale.ROOT));
            case "isupper" -> s.chars().anyMatch(Character::isLetter) && s.equals(s.toUpperCase(Locale.ROOT));
            default -> throw new UnsupportedOperationException("str has no method " + name + " here");
        };
    }

    static boolean supports(String name) {
        return switch (name) {
            case "strip", "lstrip", "rstrip", "split", "rsplit", "splitlines", "startswith", "endswith",
                    "upper", "lower", "capitalize", "title", "replace", "find", "rfind", "count", "join",
                    "isspace", "isdigit", "isalpha", "isalnum", "islower", "isupper" -> true;
            default -> false;
        };
    }

    /** Python's str.isspace() for one code point. */
    static boolean isSpace(int cp) {
        return Character.isWhitespace(cp) || Character.isSpaceChar(cp) || cp == 0x85;
    }

    /** str.strip / lstrip / rstrip: {@code chars} null means whitespace. */
    static String strip(String s, String chars, boolean left, boolean right) {
        int start = 0;
        int end = s.length();
        while (left && start < end && strippable(s.codePointAt(start), chars)) {
            start += Character.charCount(s.codePointAt(start));
        }
        while (right && end > start && strippable(s.codePointBefore(end), chars)) {
            end -= Character.charCount(s.codePointBefore(end));
        }
        return s.substring(start, end);
    }

    private static boolean strippable(int cp, String chars) {
        return chars == null ? isSpace(cp) : chars.indexOf(cp) >= 0;
    }

    static List<String> split(String s, String sep, int maxsplit) {
        List<String> out = new ArrayList<>();
        if (sep == null) {
            int i = 0;
            int n = s.length();
            while (true) {
                while (i < n && isSpace(s.codePointAt(i))) {
                    i += Character.charCount(s.codePointAt(i));
                }
                if (i >= n) {
                    return out;
                }
                if (maxsplit >= 0 && out.size() == maxsplit) {
                    out.add(strip(s.substring(i), null, false, true));
                    return out;
                }
                int j = i;
                while (j < n && !isSpace(s.codePointAt(j))) {
                    j += Character.charCount(s.codePointAt(j));
                }
                out.add(s.substring(i, j));
                i = j;
            }
        }
        if (sep.isEmpty()) {
            throw new IllegalArgumentException("empty separator");
        }
        int from = 0;
        int at;
        while ((maxsplit < 0 || out.size() < maxsplit) && (at = s.indexOf(sep, from)) >= 0) {
            out.add(s.substring(from, at));
            from = at + sep.length();
        }
        out.add(s.substring(from));
        return out;
    }

    static List<String> rsplit(String s, String sep, int maxsplit) {
        if (maxsplit < 0) {
            return split(s, sep, -1);
        }
        if (sep == null) {
            throw new UnsupportedOperationException("rsplit(None, maxsplit) is not provided");
        }
        if (sep.isEmpty()) {
            throw new IllegalArgumentException("empty separator");
        }
        List<String> out = new ArrayList<>();
        int end = s.length();
        int at;
        while (out.size() < maxsplit && (at = s.lastIndexOf(sep, end - sep.length())) >= 0) {
            out.add(0, s.substring(at + sep.length(), end));
            end = at;
        }
        out.add(0, s.substring(0, end));
        return out;
    }

    private static boolean affix(String s, Object prefixes, boolean start) {
        if (prefixes instanceof Collection<?> c) {
            for (Object p : c) {
                if (affix(s, p, start)) {
                    return true;
                }
            }
            return false;
        }
        String p = String.valueOf(prefixes);
        return start ? s.startsWith(p) : s.endsWith(p);
    }

    private static String title(String s) {
        StringBuilder sb = new StringBuilder(s.length());
        boolean prevCased = false;
        for (int i = 0; i < s.length(); ) {
            int cp = s.codePointAt(i);
            sb.appendCodePoint(prevCased ? Character.toLowerCase(cp) : Character.toTitleCase(cp));
            prevCased = Character.isLetter(cp);
            i += Character.charCount(cp);
        }
        return sb.toString();
    }

    private static String replace(String s, String old, String now, int count) {
        if (count < 0) {
            return s.replace(old, now);
        }
        StringBuilder sb = new StringBuilder();
        int from = 0;
        int at;
        int done = 0;
        while (done < count && (at = s.indexOf(old, from)) >= 0 && !old.isEmpty()) {
            sb.append(s, from, at).append(now);
            from = at + old.length();
            done++;
        }
        return sb.append(s.substring(from)).toString();
    }

    private static int count(String s, String sub) {
        if (sub.isEmpty()) {
            return s.codePointCount(0, s.length()) + 1;
        }
        int n = 0;
        for (int at = s.indexOf(sub); at >= 0; at = s.indexOf(sub, at + sub.length())) {
            n++;
        }
        return n;
    }

    private static String join(String sep, Object items) {
        if (!(items instanceof Iterable<?> it)) {
            throw new IllegalArgumentException("join expects a list, got " + items);
        }
        StringBuilder sb = new StringBuilder();
        boolean first = true;
        for (Object o : it) {
            if (!first) {
                sb.append(sep);
            }
            sb.append(o);
            first = false;
        }
        return sb.toString();
    }

    private static Object arg(Object[] args, int i) {
        if (args == null || args.length <= i) {
            throw new IllegalArgumentException("missing argument " + (i + 1));
        }
        return args[i];
    }

    private static String str(Object[] args, int i) {
        return String.valueOf(arg(args, i));
    }

    /** Optional string argument; None / absent is null. */
    private static String chars(Object[] args, int i) {
        return args == null || args.length <= i || args[i] == null ? null : String.valueOf(args[i]);
    }

    private static int maxsplit(Object[] args) {
        return args != null && args.length > 1 && args[1] instanceof Number n ? n.intValue() : -1;
    }
}
