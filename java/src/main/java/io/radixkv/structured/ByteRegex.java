package io.radixkv.structured;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Regular expressions over bytes, hash-consed, matched by Brzozowski derivatives: a state of
 * the automaton is an expression, and the state after byte b is its derivative by b. The
 * constructors normalize (alternatives flattened, sorted and deduplicated, byte sets merged,
 * concatenation right-nested), so an expression has finitely many distinct derivatives and the
 * lazily built automaton is a DFA whose states are the interned nodes.
 *
 * <p>Nested structure (JSON objects inside arrays inside objects) is a concatenation chain whose
 * tail is the continuation after the inner value: a stack, held in the expression. Shared
 * sub-expressions (a schema's {@code $defs}, JSON's value rule at each depth) are shared nodes,
 * so a grammar's size is linear in its nesting depth.
 *
 * <p>Not thread-safe: the owner ({@link Grammar}) serializes access.
 */
final class ByteRegex {
    static final int INF = -1;

    enum Kind { NONE, EMPTY, BYTES, CAT, ALT, REP }

    /** One interned expression; also a DFA state (its transitions memoized in {@code next}). */
    static final class Node {
        final int id;
        final Kind kind;
        final long[] bytes; // BYTES: 256-bit set
        final Node a; // CAT head, REP body
        final Node b; // CAT tail
        final Node[] alts; // ALT, sorted by id
        final int min;
        final int max; // REP; INF unbounded
        final boolean nullable;
        Node[] next; // derivative by each byte, filled lazily
        int stateIndex = -1; // the grammar's index of this node as a DFA state

        Node(int id, Kind kind, long[] bytes, Node a, Node b, Node[] alts, int min, int max, boolean nullable) {
            this.id = id;
            this.kind = kind;
            this.bytes = bytes;
            this.a = a;
            this.b = b;
            this.alts = alts;
            this.min = min;
            this.max = max;
            this.nullable = nullable;
        }

        boolean has(int b) {
            return (bytes[b >>> 6] >>> (b & 63) & 1L) != 0;
        }

        @Override
        public String toString() {
            return switch (kind) {
                case NONE -> "∅";
                case EMPTY -> "ε";
                case BYTES -> "[" + id + "]";
                case CAT -> "(" + a + b + ")";
                case ALT -> Arrays.toString(alts);
                case REP -> a + "{" + min + "," + (max == INF ? "" : max) + "}";
            };
        }
    }

    private record Key(Kind kind, long x0, long x1, long x2, long x3, int a, int b, int min, int max, String alts) {}

    private final Map<Key, Node> interned = new HashMap<>();
    private final List<Node> nodes = new ArrayList<>();
    final Node none;
    final Node empty;

    ByteRegex() {
        none = intern(new Key(Kind.NONE, 0, 0, 0, 0, 0, 0, 0, 0, ""), id -> new Node(id, Kind.NONE, null, null, null, null, 0, 0, false));
        empty = intern(new Key(Kind.EMPTY, 0, 0, 0, 0, 0, 0, 0, 0, ""), id -> new Node(id, Kind.EMPTY, null, null, null, null, 0, 0, true));
    }

    private interface Maker {
        Node make(int id);
    }

    private Node intern(Key k, Maker m) {
        Node n = interned.get(k);
        if (n == null) {
            n = m.make(nodes.size());
            nodes.add(n);
            interned.put(k, n);
        }
        return n;
    }

    /** Number of distinct expressions built so far. */
    int size() {
        return nodes.size();
    }

    /** One byte out of {@code set} (256 bits). */
    Node bytes(long[] set) {
        if ((set[0] | set[1] | set[2] | set[3]) == 0) {
            return none;
        }
        long[] s = set.clone();
        return intern(new Key(Kind.BYTES, s[0], s[1], s[2], s[3], 0, 0, 0, 0, ""),
                id -> new Node(id, Kind.BYTES, s, null, null, null, 0, 0, false));
    }

    /** One byte in {@code [lo, hi]}. */
    Node range(int lo, int hi) {
        long[] s = new long[4];
        for (int c = lo; c <= hi; c++) {
            s[c >>> 6] |= 1L << (c & 63);
        }
        return bytes(s);
    }

    Node oneOf(String asciiChars) {
        long[] s = new long[4];
        for (int i = 0; i < asciiChars.length(); i++) {
            int c = asciiChars.charAt(i);
            s[c >>> 6] |= 1L << (c & 63);
        }
        return bytes(s);
    }

    Node bytesLiteral(byte[] lit) {
        Node n = empty;
        for (int i = lit.length - 1; i >= 0; i--) {
            n = cat(range(lit[i] & 0xFF, lit[i] & 0xFF), n);
        }
        return n;
    }

    /** The UTF-8 bytes of {@code s}, literally. */
    Node literal(String s) {
        return bytesLiteral(s.getBytes(java.nio.charset.StandardCharsets.UTF_8));
    }

    Node cat(Node x, Node y) {
        if (x == none || y == none) {
            return none;
        }
        if (x == empty) {
            return y;
        }
        if (y == empty) {
            return x;
        }
        if (x.kind == Kind.CAT) {
            return cat(x.a, cat(x.b, y)); // right-nested: the head is always a non-CAT
        }
        return intern(new Key(Kind.CAT, 0, 0, 0, 0, x.id, y.id, 0, 0, ""),
                id -> new Node(id, Kind.CAT, null, x, y, null, 0, 0, x.nullable && y.nullable));
    }

    Node seq(Node... parts) {
        Node n = empty;
        for (int i = parts.length - 1; i >= 0; i--) {
            n = cat(parts[i], n);
        }
        return n;
    }

    Node alt(Node... options) {
        return alt(Arrays.asList(options));
    }

    Node alt(List<Node> options) {
        List<Node> flat = new ArrayList<>();
        long[] set = null;
        for (Node o : options) {
            collect(o, flat);
        }
        List<Node> kept = new ArrayList<>();
        for (Node o : flat) {
            if (o.kind == Kind.BYTES) {
                if (set == null) {
                    set = new long[4];
                }
                for (int i = 0; i < 4; i++) {
                    set[i] |= o.bytes[i];
                }
            } else if (o != none) {
                kept.add(o);
            }
        }
        if (set != null) {
            kept.add(bytes(set));
        }
        kept.sort((p, q) -> Integer.compare(p.id, q.id));
        List<Node> uniq = new ArrayList<>();
        for (Node o : kept) {
            if (uniq.isEmpty() || uniq.get(uniq.size() - 1) != o) {
                uniq.add(o);
            }
        }
        if (uniq.isEmpty()) {
            return none;
        }
        if (uniq.size() == 1) {
            return uniq.get(0);
        }
        Node[] arr = uniq.toArray(Node[]::new);
        StringBuilder ids = new StringBuilder();
        boolean nullable = false;
        for (Node o : arr) {
            ids.append(o.id).append(',');
            nullable |= o.nullable;
        }
        boolean n = nullable;
        return intern(new Key(Kind.ALT, 0, 0, 0, 0, 0, 0, 0, 0, ids.toString()),
                id -> new Node(id, Kind.ALT, null, null, null, arr, 0, 0, n));
    }

    private static void collect(Node o, List<Node> out) {
        if (o.kind == Kind.ALT) {
            out.addAll(Arrays.asList(o.alts));
        } else {
            out.add(o);
        }
    }

    Node opt(Node x) {
        return alt(x, empty);
    }

    Node star(Node x) {
        return rep(x, 0, INF);
    }

    /** {@code x} repeated {@code min} to {@code max} ({@link #INF}: unbounded) times. */
    Node rep(Node x, int min, int max) {
        if (min < 0 || (max != INF && max < min)) {
            return none;
        }
        if (max == 0 || x == empty) {
            return empty;
        }
        if (x == none) {
            return min == 0 ? empty : none;
        }
        if (min == 1 && max == 1) {
            return x;
        }
        return intern(new Key(Kind.REP, 0, 0, 0, 0, x.id, 0, min, max, ""),
                id -> new Node(id, Kind.REP, null, x, null, null, min, max, min == 0 || x.nullable));
    }

    /** The derivative of {@code n} by byte {@code b}: what must follow once {@code b} is consumed. */
    Node step(Node n, int b) {
        Node[] next = n.next;
        if (next == null) {
            next = n.next = new Node[256];
        }
        Node d = next[b];
        if (d == null) {
            d = next[b] = derive(n, b);
        }
        return d;
    }

    private Node derive(Node n, int b) {
        return switch (n.kind) {
            case NONE, EMPTY -> none;
            case BYTES -> n.has(b) ? empty : none;
            case CAT -> {
                Node head = cat(step(n.a, b), n.b);
                yield n.a.nullable ? alt(head, step(n.b, b)) : head;
            }
            case ALT -> {
                List<Node> ds = new ArrayList<>(n.alts.length);
                for (Node o : n.alts) {
                    ds.add(step(o, b));
                }
                yield alt(ds);
            }
            case REP -> cat(step(n.a, b), rep(n.a, Math.max(n.min - 1, 0), n.max == INF ? INF : n.max - 1));
        };
    }

    /** True when some byte continues {@code n} (it is not only the end). */
    boolean canContinue(Node n) {
        for (int b = 0; b < 256; b++) {
            if (step(n, b) != none) {
                return true;
            }
        }
        return false;
    }
}
