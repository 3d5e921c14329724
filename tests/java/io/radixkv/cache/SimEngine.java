package io.radixkv.cache;

import java.util.Arrays;

/**
 * The engine-side protocol around the cache, as the real engine runs it (start_sequence /
 * release_sequence): matchAndLock, reuse per the full-prompt rule, private pages for the rest,
 * insertAndLock, lock transfer (new before old), duplicate pages freed, exactly one lock held.
 */
final class SimEngine {
    final RadixCache cache;
    final TestPool pool;

    SimEngine(RadixCache cache, TestPool pool) {
        this.cache = cache;
        this.pool = pool;
        pool.cache = cache;
    }

    /** An active sequence: its page table, the one node it locks, how many leading pages the cache owns. */
    static final class Seq {
        final Namespace ns;
        TokenSequence tokens;
        int[] pageTable;
        NodeRef lockNode;
        int cacheOwned;
        int reused;
        int computed;

        Seq(Namespace ns, TokenSequence tokens) {
            this.ns = ns;
            this.tokens = tokens;
        }
    }

    Seq start(Namespace ns, TokenSequence prompt) {
        int p = cache.pageSize();
        Seq s = new Seq(ns, prompt);
        MatchResult m = cache.matchAndLock(ns, prompt);
        int promptKv = prompt.kvLength();
        int reuse = RadixCache.reusableKvLength(m.matchedKvLen(), promptKv, p);
        int reusedPages = reuse / p;
        int totalPages = (promptKv + p - 1) / p;
        int[] priv;
        try {
            priv = pool.allocate(totalPages - reusedPages);
        } catch (IllegalStateException e) {
            cache.unlock(m.node());
            throw e;
        }
        s.pageTable = new int[totalPages];
        System.arraycopy(m.pages(), 0, s.pageTable, 0, reusedPages);
        System.arraycopy(priv, 0, s.pageTable, reusedPages, priv.length);
        s.reused = reuse;
        s.computed = promptKv - reuse;
        // prefill done: insert what is not cached yet, lock new before unlocking old
        InsertResult ins = cache.insertAndLock(ns, prompt, prompt.size(), s.pageTable);
        cache.unlock(m.node());
        s.lockNode = ins.node();
        adoptTreePages(s, ins);
        return s;
    }

    /** Frees private duplicates of pages the tree already holds and maps the tree's pages. */
    void adoptTreePages(Seq s, InsertResult ins) {
        for (int i = 0; i < ins.pageCount(); i++) {
            if (s.pageTable[i] != ins.cachedPages()[i]) {
                if (i >= ins.firstNewPageIdx()) {
                    throw new AssertionError("tree page differs at new index " + i);
                }
                if (i < s.cacheOwned) {
                    throw new AssertionError("cache-owned page " + s.pageTable[i] + " at index " + i
                            + " changed to " + ins.cachedPages()[i] + " while locked");
                }
                pool.release(s.pageTable[i]);
                s.pageTable[i] = ins.cachedPages()[i];
            }
        }
        s.cacheOwned = Math.max(s.cacheOwned, ins.pageCount());
    }

    /** Appends decoded tokens (private pages), then caches the whole conversation (multi-turn). */
    void decodeAndCache(Seq s, int[] outputIds) {
        int p = cache.pageSize();
        TokenSequence full = TokenSequence.builder().append(s.tokens).text(outputIds).build();
        int totalPages = (full.kvLength() + p - 1) / p;
        if (totalPages > s.pageTable.length) {
            int[] more = pool.allocate(totalPages - s.pageTable.length);
            int old = s.pageTable.length;
            s.pageTable = Arrays.copyOf(s.pageTable, totalPages);
            System.arraycopy(more, 0, s.pageTable, old, more.length);
        }
        s.tokens = full;
        InsertResult ins = cache.insertAndLock(s.ns, full, full.size(), s.pageTable);
        cache.unlock(s.lockNode);
        s.lockNode = ins.node();
        adoptTreePages(s, ins);
    }

    void release(Seq s) {
        cache.unlock(s.lockNode);
        int[] priv = Arrays.copyOfRange(s.pageTable, s.cacheOwned, s.pageTable.length);
        pool.release(priv);
        s.lockNode = null;
    }

    /** free + cache-owned + private == total. */
    long conservation(long privatePages) {
        return pool.freeCount() + cache.cachedPages() + privatePages;
    }
}
