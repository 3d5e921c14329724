package io.radixkv.structured;

import java.util.HashMap;
import java.util.Map;

/**
 * A compiled constraint bound to a vocabulary: the lazily built byte automaton, and per
 * automaton state the mask of tokens that keep the text a prefix of a match, computed once by
 * walking the {@link TokenTrie} through the automaton and cached. Shared by every request of
 * the same constraint; thread-safe (its lazily filled tables are guarded by its lock).
 */
public final class Grammar {
    /** Masks kept per grammar before the cache starts over (each is vocab/8 bytes). */
    static final int MAX_CACHED_MASKS = 4096;

    private final Constraint constraint;
    private final ByteRegex rx;
    private final ByteRegex.Node start;
    private final TokenVocabulary vocab;
    private final TokenTrie trie;
    private final int words;
    private final Map<ByteRegex.Node, int[]> masks = new HashMap<>();
    private final ByteRegex.Node[] walk;
    private final int[] endIds;
    private long maskNanos;
    private long masksComputed;

    Grammar(Constraint constraint, ByteRegex rx, ByteRegex.Node start, TokenVocabulary vocab, TokenTrie trie) {
        this.constraint = constraint;
        this.rx = rx;
        this.start = start;
        this.vocab = vocab;
        this.trie = trie;
        this.words = (vocab.size() + 31) >>> 5;
        this.walk = new ByteRegex.Node[trie.maxDepth + 1];
        this.endIds = vocab.endIds();
    }

    public Constraint constraint() {
        return constraint;
    }

    public TokenVocabulary vocabulary() {
        return vocab;
    }

    /** Words of a mask: {@code ceil(vocab / 32)}. */
    public int maskWords() {
        return words;
    }

    /** A matcher at the start of the text (one request's position). */
    public GrammarMatcher newMatcher() {
        return new GrammarMatcher(this, start);
    }

    /** Automaton states and masks computed so far, and the time spent computing masks. */
    public synchronized Stats stats() {
        return new Stats(rx.size(), masksComputed, masks.size(), maskNanos);
    }

    /** @param expressions distinct expressions (automaton states and their parts) built so far */
    public record Stats(int expressions, long masksComputed, int masksCached, long maskNanos) {}

    synchronized ByteRegex.Node step(ByteRegex.Node state, byte[] bytes) {
        ByteRegex.Node q = state;
        for (int i = 0; i < bytes.length && q != rx.none; i++) {
            q = rx.step(q, bytes[i] & 0xFF);
        }
        return q;
    }

    boolean isDead(ByteRegex.Node state) {
        return state == rx.none;
    }

    /** The tokens allowed in {@code state}: bit i of word i/32 set when token i is. Shared: do not modify. */
    synchronized int[] mask(ByteRegex.Node state) {
        int[] m = masks.get(state);
        if (m == null) {
            long t0 = System.nanoTime();
            m = computeMask(state);
            maskNanos += System.nanoTime() - t0;
            masksComputed++;
            if (masks.size() >= MAX_CACHED_MASKS) {
                masks.clear();
            }
            masks.put(state, m);
        }
        return m;
    }

    private int[] computeMask(ByteRegex.Node state) {
        int[] m = new int[words];
        TokenTrie t = trie;
        ByteRegex.Node[] st = walk;
        st[0] = state;
        int i = 1;
        int n = t.size;
        while (i < n) {
            ByteRegex.Node q = rx.step(st[t.depth[i] - 1], t.edge[i] & 0xFF);
            if (q == rx.none) {
                i = t.end[i];
                continue;
            }
            st[t.depth[i]] = q;
            for (int k = t.tokenStart[i]; k < t.tokenStart[i + 1]; k++) {
                int id = t.tokens[k];
                m[id >>> 5] |= 1 << (id & 31);
            }
            i++;
        }
        if (state.nullable) {
            for (int id : endIds) {
                m[id >>> 5] |= 1 << (id & 31);
            }
        }
        return m;
    }

    boolean accepts(ByteRegex.Node state) {
        return state.nullable;
    }
}
