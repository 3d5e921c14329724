package io.radixkv.sched;

import io.radixkv.cache.NodeRef;
import io.radixkv.paging.BlockAllocator;
import io.radixkv.paging.KvSequences;
import io.radixkv.paging.PageCopier;
import java.util.Objects;

/**
 * Puts sequences' KV pages together from the prefix cache and the page pool, and keeps the
 * two consistent (the ownership rules):
 * <ul>
 *   <li>admission: match → lock the matched node → map its pages → allocate private pages
 *       for the uncached rest, all or nothing (eviction is the allocator's reclaimer);</li>
 *   <li>after every prefill chunk: insert the sequence's full pages at once, so another
 *       request with the same prefix reuses them mid-prefill; a page the tree already held
 *       (someone inserted it first) replaces our private duplicate, which is freed;</li>
 *   <li>exactly one locked node per sequence: the new node is locked before the old is
 *       unlocked;</li>
 *   <li>fork (the samples of one request): a new sequence maps the prompt's full pages of the
 *       one that prefilled it (cached pages under the same cache lock, private ones by
 *       reference) and gets a copy of its partial last page;</li>
 *   <li>release: unlock, free exactly the private pages (a shared one with its last sequence).</li>
 * </ul>
 * Confined to the engine thread.
 */
public final class KvManager {
    private final KvSequences seqs;
    private final BlockAllocator allocator;
    private final PrefixStore store;
    private final int pageSize;
    private long reusedTokens;
    private long computedTokens;
    private long duplicatePagesDropped;
    private PageCopier copier;

    public KvManager(KvSequences seqs, PrefixStore store) {
        this.seqs = Objects.requireNonNull(seqs, "seqs");
        this.allocator = seqs.allocator();
        this.store = Objects.requireNonNull(store, "store");
        this.pageSize = seqs.pageSize();
        if (store.enabled()) {
            // out of free pages: evict unlocked cached pages before failing an allocation
            allocator.setReclaimer(store::evict);
        }
    }

    /** How a forked sequence gets its copy of a partial page; without one, forks need a page-aligned prompt. */
    public void setPageCopier(PageCopier copier) {
        this.copier = copier;
    }

    public KvSequences sequences() {
        return seqs;
    }

    public PrefixStore store() {
        return store;
    }

    public int pageSize() {
        return pageSize;
    }

    public int numPages() {
        return allocator.numPages();
    }

    /** Pages an admission could get now: free plus evictable cached pages. */
    public int capacityPages() {
        return allocator.freePages() + store.evictablePages();
    }

    /** Pages pinned by admitted sequences (allocated and not evictable). */
    public int pinnedPages() {
        return allocator.allocatedPages() - store.evictablePages();
    }

    /** True when {@code s} reuses and inserts cached pages: the store is on and the sequence does not bypass it. */
    public boolean caches(Sequence s) {
        return store.enabled() && s.usesPrefixCache();
    }

    public int pagesFor(long tokens) {
        return (int) Math.min((tokens + pageSize - 1) / pageSize, Integer.MAX_VALUE);
    }

    /** Builds the attempt's token snapshot and cache key once per attempt. */
    private void ensureKey(Sequence s) {
        if (s.attemptTokens == null || s.attemptTokens.length != s.totalTokens()) {
            s.attemptTokens = s.allTokens();
            s.cacheKey = caches(s) ? store.key(s.namespace(), s.attemptTokens) : null;
        }
    }

    /** Tokens of a waiting sequence the cache would supply now (read-only). */
    public int peekReusable(Sequence s) {
        if (!caches(s)) {
            return 0;
        }
        ensureKey(s);
        return store.peekReusable(s.cacheKey, s.attemptTokens.length);
    }

    /**
     * Admission cost in pages: only the uncached suffix of the tokens to prefill (a
     * prompt that is mostly cached costs little to admit), not the whole prompt.
     */
    public int admissionCostPages(Sequence s) {
        int total = s.totalTokens();
        return pagesFor(total) - peekReusable(s) / pageSize;
    }

    /**
     * Admits a waiting sequence: maps its cached prefix and allocates private pages for the
     * rest of {@code prompt ++ output}. All or nothing: false (nothing changed) when the pages
     * cannot be had even after eviction.
     *
     * @throws IllegalStateException if no sequence slot is free
     */
    public boolean admit(Sequence s, long nowNanos) {
        if (s.status() != Sequence.Status.WAITING) {
            throw new IllegalStateException("admit: " + s + " is not waiting");
        }
        ensureKey(s);
        int total = s.attemptTokens.length;
        // match and lock atomically: the reclaimer must not evict the pages we are about to map
        PrefixStore.Match m = caches(s) ? store.matchAndLock(s.cacheKey, total) : null;
        NodeRef node = m == null ? null : m.node();
        int reuse = m == null ? 0 : m.reusableTokens();
        int slot = -1;
        boolean ok = false;
        try {
            if (reuse % pageSize != 0 || reuse >= total) {
                throw new IllegalStateException("prefix store returned " + reuse + " reusable tokens for " + total
                        + " tokens at page size " + pageSize + " (must be page-aligned and below the total)");
            }
            slot = seqs.open(ownerId(s));
            if (reuse > 0) {
                seqs.mapShared(slot, m.pages(), 0, reuse / pageSize);
            }
            ok = seqs.reserve(slot, total);
        } finally {
            if (!ok) {
                if (slot >= 0) {
                    seqs.release(slot); // nothing private yet: only forgets the mapped cached pages
                }
                store.unlock(node);
            }
        }
        if (!ok) {
            return false;
        }
        s.slot = slot;
        s.lockedNode = node;
        s.kvLen = reuse;
        s.prefillTarget = total;
        s.setStatus(Sequence.Status.PREFILL);
        s.noteAdmitted(nowNanos);
        s.noteCached(0, reuse);
        reusedTokens += reuse;
        return true;
    }

    /**
     * Before a prefill chunk: adopts whatever of the rest of the prompt another sequence has
     * inserted since (online prefix sharing): our not-yet-computed private
     * pages are freed and the cache's mapped instead. Returns the tokens gained.
     */
    public int catchUp(Sequence s) {
        if (!caches(s) || s.status() != Sequence.Status.PREFILL) {
            return 0;
        }
        int target = s.prefillTarget;
        if (store.peekReusable(s.cacheKey, target) <= s.kvLen) {
            return 0;
        }
        PrefixStore.Match m = store.matchAndLock(s.cacheKey, target);
        int reuse = m.reusableTokens();
        int[] cached = m.pages();
        String bad = null;
        if (reuse % pageSize != 0 || reuse >= target) {
            bad = "prefix store returned " + reuse + " reusable tokens for " + target + " tokens at page size "
                    + pageSize;
        } else {
            // pages we already computed must be the cache's (checked before changing anything)
            for (int i = s.kvLen / pageSize; i < reuse / pageSize && bad == null; i++) {
                int ours = seqs.pageAt(s.slot, i);
                if (ours != cached[i] && !allocator.isPrivate(ours)) {
                    bad = "sequence " + s.id() + " page index " + i + " maps cached page " + ours
                            + " but the cache holds page " + cached[i] + " for those tokens";
                }
            }
        }
        if (bad != null || reuse <= s.kvLen) {
            store.unlock(m.node());
            if (bad != null) {
                throw new IllegalStateException(bad);
            }
            return 0;
        }
        for (int i = s.kvLen / pageSize; i < reuse / pageSize; i++) {
            if (seqs.pageAt(s.slot, i) != cached[i]) {
                seqs.replaceWithCached(s.slot, i, cached[i]);
            }
        }
        store.unlock(s.lockedNode);
        s.lockedNode = m.node();
        int gained = reuse - s.kvLen;
        s.noteCached(s.kvLen, reuse);
        reusedTokens += gained;
        s.kvLen = reuse;
        seqs.setLength(s.slot, reuse);
        return gained;
    }

    /**
     * After a prefill chunk's forward pass wrote KV for {@code [kvLen, end)}: advances the
     * sequence and inserts its full pages into the cache at once.
     */
    public void commitPrefill(Sequence s, int end) {
        if (s.status() != Sequence.Status.PREFILL || end <= s.kvLen || end > s.prefillTarget) {
            throw new IllegalStateException("commitPrefill(" + end + ") on " + s);
        }
        seqs.setLength(s.slot, end);
        s.noteComputed(s.kvLen, end);
        computedTokens += end - s.kvLen;
        boolean newFullPage = end / pageSize > s.kvLen / pageSize;
        s.kvLen = end;
        if (caches(s) && newFullPage) {
            insertFullPages(s, end);
        }
    }

    /**
     * When a request ends normally: inserts the full pages of everything whose KV it computed
     * (prompt and generated tokens), so a follow-up turn that extends the conversation reuses
     * the answer too (decoded tokens are inserted, not only prompts). Call before
     * {@link #release}.
     */
    public void cacheFinished(Sequence s) {
        if (!caches(s) || s.slot < 0 || s.kvLen / pageSize <= 0) {
            return;
        }
        int[] all = s.allTokens();
        insertFullPages(s, store.key(s.namespace(), all), s.kvLen);
    }

    private void insertFullPages(Sequence s, int tokens) {
        insertFullPages(s, s.cacheKey, tokens);
    }

    private void insertFullPages(Sequence s, PrefixStore.Key key, int tokens) {
        int[] pages = seqs.pages(s.slot);
        PrefixStore.Insert ins = store.insertAndLock(key, tokens, pages);
        int[] tree = ins.cachedPages();
        int dupEnd = Math.min(ins.firstNewPageIdx(), tree.length);
        // a mismatch must be our own private duplicate (someone inserted the same tokens first)
        for (int i = 0; i < dupEnd; i++) {
            if (pages[i] != tree[i] && !allocator.isPrivate(pages[i])) {
                store.unlock(ins.node());
                throw new IllegalStateException("sequence " + s.id() + " page index " + i + " maps cached page "
                        + pages[i] + " but the cache holds page " + tree[i]);
            }
        }
        for (int i = 0; i < dupEnd; i++) {
            if (pages[i] != tree[i]) {
                seqs.replaceWithCached(s.slot, i, tree[i]);
                duplicatePagesDropped++;
            }
        }
        if (ins.insertedPages() > 0) {
            seqs.markCached(s.slot, ins.firstNewPageIdx(), ins.insertedPages());
        }
        store.unlock(s.lockedNode);
        s.lockedNode = ins.node();
    }

    /**
     * Places {@code child}, a new sample of {@code parent} (see {@link Sequence#forkChild}), right
     * after {@code parent}'s prompt was prefilled: the child maps the prompt's full pages of
     * the parent (the same cached pages under a lock of its own on the parent's node, or the
     * parent's private pages, shared) and a copy of its partial last page, and is then where the
     * parent is: all of the prompt's KV written, the first token to sample. False (nothing
     * changed) when that cannot be had now: no sequence slot, no page for the copy, no copier, or
     * a full page that caching left private.
     */
    public boolean fork(Sequence parent, Sequence child) {
        if (parent.status() != Sequence.Status.PREFILL || parent.kvLen != parent.prefillTarget || parent.slot < 0) {
            throw new IllegalStateException("fork from " + parent + ", whose prompt is not prefilled");
        }
        if (child.status() != Sequence.Status.WAITING || child.slot >= 0 || ownerId(child) != ownerId(parent)) {
            throw new IllegalStateException("fork into " + child + ", which is not a new sample of " + parent);
        }
        int len = parent.kvLen;
        int full = len / pageSize;
        boolean partial = len % pageSize != 0;
        if (seqs.freeSlots() == 0 || (partial && copier == null)) {
            return false;
        }
        for (int i = 0; caches(parent) && i < full; i++) {
            if (!allocator.isCached(seqs.pageAt(parent.slot, i))) {
                return false; // the parent inserts its prompt's full pages: a private one is not the cache's to lock
            }
        }
        int slot = seqs.open(ownerId(child));
        store.lock(parent.lockedNode);
        boolean ok = false;
        try {
            seqs.share(parent.slot, slot, full);
            if (partial) {
                if (!seqs.reserve(slot, len)) {
                    return false;
                }
                copier.copy(seqs.pageAt(parent.slot, full), seqs.pageAt(slot, full));
            }
            seqs.setLength(slot, len);
            ok = true;
        } finally {
            if (!ok) {
                seqs.release(slot);
                store.unlock(parent.lockedNode);
            }
        }
        child.slot = slot;
        child.lockedNode = parent.lockedNode;
        child.kvLen = len;
        child.prefillTarget = len;
        child.attemptTokens = parent.attemptTokens;
        child.cacheKey = parent.cacheKey;
        child.setStatus(Sequence.Status.PREFILL);
        return true;
    }

    /** Makes room for the next decode token (lazy growth; may evict). False: out of pages. */
    public boolean growForDecode(Sequence s) {
        return seqs.growForDecode(s.slot);
    }

    /** Pages the sequence needs to hold {@code extraTokens} more tokens. */
    public int pagesNeeded(Sequence s, long extraTokens) {
        return seqs.pagesNeeded(s.slot, extraTokens);
    }

    /** After a decode step wrote the KV of the token at position kvLen. */
    public void commitDecode(Sequence s) {
        if (s.status() != Sequence.Status.DECODE) {
            throw new IllegalStateException("commitDecode on " + s);
        }
        s.kvLen++;
        seqs.setLength(s.slot, s.kvLen);
    }

    /** Unlocks the sequence's node and frees its private pages. Idempotent. */
    public void release(Sequence s) {
        if (s.slot < 0) {
            return;
        }
        seqs.release(s.slot);
        store.unlock(s.lockedNode);
        s.slot = -1;
        s.lockedNode = null;
        s.kvLen = 0;
        s.prefillTarget = 0;
        s.attemptTokens = null;
        s.cacheKey = null;
    }

    /** Prefix tokens mapped from the cache instead of computed, over all admissions and catch-ups. */
    public long reusedTokens() {
        return reusedTokens;
    }

    /** Tokens prefilled (computed), over all sequences and attempts. */
    public long computedTokens() {
        return computedTokens;
    }

    /** Private pages dropped because the cache already held the same tokens. */
    public long duplicatePagesDropped() {
        return duplicatePagesDropped;
    }

    public void checkInvariants() {
        seqs.checkInvariants();
    }

    static int ownerId(Sequence s) {
        return (int) (s.order() & 0x7fffffffL);
    }
}
