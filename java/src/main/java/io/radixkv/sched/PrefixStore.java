package io.radixkv.sched;

import io.radixkv.cache.Namespace;
import io.radixkv.cache.NodeRef;
import io.radixkv.cache.TokenSequence;
import java.util.Objects;

/**
 * What the scheduler needs from a prefix cache, in page terms, with the cache's own handle types.
 * {@link RadixPrefixStore} is the radix cache; {@link #disabled()} is the "prefix cache off" store
 * (no match, no insert: every page stays private). Confined to the engine thread.
 */
public interface PrefixStore {
    /** What the cache matches and inserts: a namespace's token sequence. */
    record Key(Namespace namespace, TokenSequence tokens) {
        public Key {
            Objects.requireNonNull(namespace, "namespace");
            Objects.requireNonNull(tokens, "tokens");
        }
    }

    /**
     * Result of a match: the first {@code reusableTokens / pageSize} of {@code pages} may be
     * mapped; {@code node} carries the lock taken for the caller (null when the store is off).
     */
    record Match(int[] pages, int reusableTokens, NodeRef node) {}

    /**
     * Result of inserting a sequence's full pages: {@code cachedPages[i]} is the tree's page for
     * page index {@code i} (for {@code i < cachedPages.length}); below {@code firstNewPageIdx} a
     * page that differs from the caller's is a duplicate the caller must drop; from
     * {@code firstNewPageIdx} on, {@code insertedPages} of the caller's pages now belong to
     * the cache. {@code node} is the deepest node of the inserted path (to lock).
     */
    record Insert(NodeRef node, int firstNewPageIdx, int insertedPages, int[] cachedPages) {}

    boolean enabled();

    /** The cache key for {@code tokens} in {@code namespace}. */
    default Key key(Namespace namespace, int[] tokens) {
        return new Key(namespace, TokenSequence.ofText(tokens));
    }

    /**
     * Read-only: how many of the first {@code tokenCount} tokens of {@code key} could be
     * reused now (page-aligned, with the full-match rule: never all of them).
     */
    int peekReusable(Key key, int tokenCount);

    /**
     * Longest reusable cached prefix of the first {@code tokenCount} tokens (touches LRU
     * state), with one lock taken on the returned node atomically: the caller owns that lock.
     */
    Match matchAndLock(Key key, int tokenCount);

    /**
     * Inserts the first {@code tokenCount} tokens' full pages ({@code pages} are the
     * sequence's pages) and locks the terminal node atomically: the caller owns that lock.
     */
    Insert insertAndLock(Key key, int tokenCount, int[] pages);

    /** Adds a lock on {@code node} (null: no-op). */
    void lock(NodeRef node);

    /** Removes a lock from {@code node} (null: no-op). */
    void unlock(NodeRef node);

    /** Cached pages no sequence locks (reclaimable by eviction). */
    int evictablePages();

    /** Evicts up to {@code pages} pages; returns how many were freed. */
    int evict(int pages);

    /** The "prefix cache off" store. */
    static PrefixStore disabled() {
        return Disabled.INSTANCE;
    }

    /** No caching: nothing matches, nothing is inserted. */
    final class Disabled implements PrefixStore {
        static final Disabled INSTANCE = new Disabled();

        private Disabled() {}

        @Override
        public boolean enabled() {
            return false;
        }

        @Override
        public int peekReusable(Key key, int tokenCount) {
            return 0;
        }

        @Override
        public Match matchAndLock(Key key, int tokenCount) {
            return new Match(new int[0], 0, null);
        }

        @Override
        public Insert insertAndLock(Key key, int tokenCount, int[] pages) {
            throw new IllegalStateException("the prefix cache is off");
        }

        @Override
        public void lock(NodeRef node) {}

        @Override
        public void unlock(NodeRef node) {}

        @Override
        public int evictablePages() {
            return 0;
        }

        @Override
        public int evict(int pages) {
            return 0;
        }
    }
}
