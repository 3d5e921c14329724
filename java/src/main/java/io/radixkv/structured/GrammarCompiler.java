package io.radixkv.structured;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;

/**
 * Compiles constraints for one vocabulary (its token trie is built once) and keeps the most
 * recently used grammars, so requests with the same schema share one automaton and its cached
 * masks. Thread-safe; a compile runs on the caller's thread (the server's request thread),
 * cheap next to the masks, which the engine thread computes lazily per automaton state.
 */
public final class GrammarCompiler {
    private final TokenVocabulary vocab;
    private final TokenTrie trie;
    private final Map<Constraint, Grammar> cache;

    /** @param cacheCapacity grammars kept (least recently used dropped first) */
    public GrammarCompiler(TokenVocabulary vocab, int cacheCapacity) {
        this.vocab = Objects.requireNonNull(vocab, "vocab");
        this.trie = new TokenTrie(vocab);
        this.cache = new LinkedHashMap<>(16, 0.75f, true) {
            @Override
            protected boolean removeEldestEntry(Map.Entry<Constraint, Grammar> eldest) {
                return size() > cacheCapacity;
            }
        };
    }

    public TokenVocabulary vocabulary() {
        return vocab;
    }

    /**
     * The grammar of {@code c}, from the cache when it was compiled before.
     *
     * @throws ConstraintException when the constraint uses what is not supported or matches nothing
     */
    public Grammar compile(Constraint c) {
        Objects.requireNonNull(c, "constraint");
        synchronized (cache) {
            Grammar g = cache.get(c);
            if (g != null) {
                return g;
            }
        }
        ByteRegex rx = new ByteRegex();
        Grammar g = new Grammar(c, rx, c.compile(rx), vocab, trie);
        synchronized (cache) {
            Grammar raced = cache.putIfAbsent(c, g);
            return raced != null ? raced : g;
        }
    }
}
