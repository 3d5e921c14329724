package io.radixkv.cache;

import java.util.Objects;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;

/**
 * Radix-tree prefix cache of KV pages (SGLang's RadixAttention, ported).
 *
 * <h2>Model</h2>
 * Each {@link Namespace} has its own tree. A node's edge label is a run of cache tokens and its
 * value the pages holding their KV; every node spans a whole number of pages, so with page size
 * P &gt; 1 matching and insertion are page-aligned (a 1060-token prompt with 16-token pages matches
 * at most 1056 positions; the partial tail page stays private to the request). Children are indexed
 * by the keys of their first page. A match ending inside a node splits it.
 *
 * <h2>Images across page boundaries</h2>
 * A page is matched only when <em>every</em> token overlapping it is identical to the cached one
 * and the whole path before it matched too; an image token's identity is its 128-bit content hash
 * and its KV length. A page boundary may therefore cut an image: pages holding the first part of an
 * image match only when the same image sits at the same KV position after an identical prefix,
 * i.e. exactly when a recompute would produce the same KV (image positions attend within the image
 * and to the prefix, both identical). {@link MatchResult#matchedTokens()} counts whole tokens; when
 * the match ends inside an image, {@link MatchResult#partialTokenKv} of its positions are cached
 * and the engine recomputes only the rest of that image (or backs off to the image start with
 * {@link #tokenAlignedKvLength}). With page size 1 every KV position is a page and the same rule
 * applies per position.
 *
 * <h2>Ownership</h2>
 * A page is free, cache-owned (by exactly one node) or private to one request. {@link #insert}
 * takes ownership of exactly {@code pages[firstNewPageIdx, firstNewPageIdx + insertedPages)}; pages
 * below {@code firstNewPageIdx} stay the caller's business: where the caller's page differs from
 * {@link InsertResult#cachedPages()} (a concurrent insert of the same prefix won), the caller frees
 * its duplicate. The cache frees only pages it owns, through the {@link PageFreer}, and refuses
 * (IllegalArgumentException) to take a page it already owns.
 *
 * <h2>Locks (lock_ref)</h2>
 * {@link #lock} / {@link #unlock} walk from a node to the root adjusting lock_ref; locked nodes are
 * never evicted; unlocking below zero throws IllegalStateException. Evictable (lock_ref == 0) and
 * protected page counts are maintained incrementally. An active sequence holds <b>exactly one</b>
 * lock, on the deepest node it uses. Lock transfer (after inserting a prefilled chunk or a finished
 * sequence): lock the new node first, then unlock the old one. The new node may be the same node
 * (identity case: the sequence already existed, insertedPages == 0); lock-then-unlock keeps exactly
 * one lock in that case too, whereas unlock-then-lock could let eviction free the pages in between.
 * Because another thread may evict an unlocked node at any time, use {@link #matchAndLock} and
 * {@link #insertAndLock}, which lock atomically with the operation. Locking a root is a no-op.
 *
 * <h2>Full-prompt match</h2>
 * The engine never writes into a cache-owned page. When the whole prompt is cached it reuses all
 * but the last page and recomputes that page into a private page (page size 1: reuse
 * {@code prompt_len - 1}), which also yields the logits of the last prompt position:
 * see {@link #reusableKvLength}. Chosen over copying the last page with the page-copy kernel
 * because it needs no extra kernel launch and no special case for pages cut inside an image; it
 * costs at most one page of recompute.
 *
 * <h2>Eviction</h2>
 * {@link #evict} frees unlocked leaves until at least the requested page count is freed, cascading
 * to parents that become unlocked leaves, in the order of the {@link EvictionPolicy}: each victim is
 * the unlocked leaf with the smallest key at that moment (as SGLang computes it at evict time).
 * Victims come from a global min-heap with lazy invalidation ({@link EvictionQueue}): O(log n) per
 * victim, no tree scans. The allocator
 * calls {@code evict} when it runs out of pages (no fixed cache budget): free capacity = free pages
 * + {@link #evictablePages()}.
 *
 * <h2>Thread safety and lock order</h2>
 * Every namespace tree has its own lock; match, insert, lock and unlock take only the lock of their
 * namespace, so different namespaces never contend (except briefly on the eviction heap's lock,
 * taken to enqueue new evictable leaves, and for MRU on every match). Lock order:
 * <b>namespace tree lock → eviction heap lock</b>; the heap lock is never held while taking a tree
 * lock. {@link PageFreer#free} is always called with <b>no cache lock held</b>, after the pages left
 * the tree. Hence with the allocator: the allocator may call {@link #evict} with or without its
 * own lock held; if it holds it, that lock must be reentrant, because {@code evict} calls back into
 * the allocator's {@code freeCached} on the same thread. The cache never calls the allocator while
 * holding a cache lock, so no cache lock → allocator lock edge exists and no cycle can form.
 */
public final class RadixCache {

    private final int pageSize;
    private final EvictionPolicy policy;
    private final LongSupplier clock;

    private final AtomicLong ids = new AtomicLong();
    private final CacheCounters counters = new CacheCounters();
    private final PageOwnership owned = new PageOwnership();
    private final Namespaces trees;
    private final TreeEditor editor;
    private final EvictionQueue queue;
    private final Evictor evictor;
    private volatile CacheListener listener;

    /** LRU, access times from {@link System#nanoTime()}. */
    public RadixCache(int pageSize, PageFreer freer) {
        this(pageSize, EvictionPolicy.LRU, freer);
    }

    public RadixCache(int pageSize, EvictionPolicy policy, PageFreer freer) {
        this(pageSize, policy, freer, System::nanoTime);
    }

    /**
     * @param clock source of access and creation times (e.g. a logical clock for deterministic
     *              simulation); must not decrease
     */
    public RadixCache(int pageSize, EvictionPolicy policy, PageFreer freer, LongSupplier clock) {
        if (pageSize < 1) {
            throw new IllegalArgumentException("pageSize must be >= 1, got " + pageSize);
        }
        this.pageSize = pageSize;
        this.policy = Objects.requireNonNull(policy, "policy");
        this.clock = Objects.requireNonNull(clock, "clock");
        this.trees = new Namespaces(this, pageSize, ids);
        this.editor = new TreeEditor(pageSize, ids, counters);
        this.queue = new EvictionQueue(EvictionStrategy.of(policy));
        this.evictor = new Evictor(trees, queue, owned, counters, Objects.requireNonNull(freer, "freer"));
    }

    public int pageSize() {
        return pageSize;
    }

    /**
     * Reports pages joining and leaving the cache to {@code listener} (null: nobody, the default).
     * Set it before the cache is used; see {@link CacheListener} for the threading contract.
     */
    public void setListener(CacheListener listener) {
        this.listener = listener;
        evictor.setListener(listener);
    }

    public EvictionPolicy policy() {
        return policy;
    }

    // ---- full-prompt rule -------------------------------------------------------------------

    /**
     * KV positions of the cached prefix a request may reuse: the matched length, except when the
     * whole prompt is cached, then all but the last page ({@code promptKvLen - 1} with page size 1),
     * so at least one position is computed (its logits start generation) and nothing is written
     * into a cache-owned page.
     */
    public static int reusableKvLength(int matchedKvLen, int promptKvLen, int pageSize) {
        if (pageSize < 1 || matchedKvLen < 0 || promptKvLen < 0 || matchedKvLen > promptKvLen) {
            throw new IllegalArgumentException("need 0 <= matchedKvLen <= promptKvLen and pageSize >= 1, got matched="
                    + matchedKvLen + " prompt=" + promptKvLen + " pageSize=" + pageSize);
        }
        if (matchedKvLen < promptKvLen) {
            return matchedKvLen;
        }
        return Math.max(0, (promptKvLen - 1) / pageSize * pageSize);
    }

    /**
     * The largest page-aligned KV length &le; {@code kvLen} that does not cut a token of {@code seq}
     * (backs a match off to the start of a partially matched image).
     */
    public static int tokenAlignedKvLength(TokenSequence seq, int kvLen, int pageSize) {
        if (seq == null || pageSize < 1 || kvLen < 0 || kvLen > seq.kvLength()) {
            throw new IllegalArgumentException("bad arguments: kvLen=" + kvLen + " pageSize=" + pageSize);
        }
        int kv = kvLen / pageSize * pageSize;
        while (kv > 0) {
            int t = seq.tokenAtKv(kv);
            int start = seq.kvStart(t);
            if (start == kv) {
                return kv;
            }
            kv = start / pageSize * pageSize;
        }
        return 0;
    }

    // ---- match ------------------------------------------------------------------------------

    /**
     * Longest cached page-aligned prefix of {@code seq} in {@code ns}. Splits a node when the match
     * ends inside it and refreshes access time (and hit count) along the matched path. A match in a
     * namespace without a tree creates nothing. The caller must lock the result before another
     * thread could evict it: prefer {@link #matchAndLock}.
     */
    public MatchResult match(Namespace ns, TokenSequence seq) {
        return doMatch(ns, seq, false);
    }

    /** {@link #match} and {@link #lock} of the returned node, atomically. */
    public MatchResult matchAndLock(Namespace ns, TokenSequence seq) {
        return doMatch(ns, seq, true);
    }

    private MatchResult doMatch(Namespace ns, TokenSequence seq, boolean lock) {
        checkNsSeq(ns, seq);
        counters.queried(seq.size(), seq.kvLength());
        Tree tree = trees.find(ns);
        if (tree != null) {
            tree.lock.lock();
            try {
                if (!tree.dead) {
                    TreeEditor.Walk w = editor.descend(tree.root, seq, seq.size(), pageAligned(seq.kvLength()), true);
                    Node last = w.node;
                    int[] pages = TreeEditor.collectPages(last, w.kv / pageSize);
                    touch(last);
                    if (lock) {
                        lockPath(last);
                    } else {
                        queue.accessed(last);
                    }
                    int tokens = seq.tokenAtKv(w.kv);
                    counters.matched(w.kv, tokens);
                    return new MatchResult(pages, w.kv, tokens, last);
                }
            } finally {
                tree.lock.unlock();
            }
        }
        counters.matched(0, 0);
        return new MatchResult(Node.NO_PAGES, 0, 0, trees.detachedRoot(ns));
    }

    /**
     * Matched KV length {@code match} would return, changing nothing: no split, no lock, no access
     * time or metric update. For admission control and routers.
     */
    public int peekMatchLength(Namespace ns, TokenSequence seq) {
        checkNsSeq(ns, seq);
        Tree tree = trees.find(ns);
        if (tree == null) {
            return 0;
        }
        tree.lock.lock();
        try {
            return tree.dead ? 0 : editor.descend(tree.root, seq, seq.size(), pageAligned(seq.kvLength()), false).kv;
        } finally {
            tree.lock.unlock();
        }
    }

    // ---- insert -----------------------------------------------------------------------------

    /** {@link #insert(Namespace, TokenSequence, int, int[], int)} with priority 0. */
    public InsertResult insert(Namespace ns, TokenSequence seq, int tokenCount, int[] pages) {
        return doInsert(ns, seq, tokenCount, pages, 0, false);
    }

    /**
     * Inserts the whole pages of the first {@code tokenCount} tokens of {@code seq}, whose KV lives
     * in {@code pages} (one id per page; index 0 holds KV positions {@code [0, pageSize)}). Only the
     * part not yet in the tree is added (incremental insertion after each prefill chunk or with
     * decoded tokens appended works and adds only the new tail). The cache takes ownership of
     * exactly the pages reported by the result. Nodes on the path get {@code priority} if higher
     * than theirs (PRIORITY policy). The caller must lock the result before another thread could
     * evict it: prefer {@link #insertAndLock}.
     *
     * @throws IllegalArgumentException on bad arguments or when a page the cache would take is
     *                                  already cache-owned (state unchanged)
     */
    public InsertResult insert(Namespace ns, TokenSequence seq, int tokenCount, int[] pages, int priority) {
        return doInsert(ns, seq, tokenCount, pages, priority, false);
    }

    /** {@link #insert} and {@link #lock} of the terminal node, atomically. */
    public InsertResult insertAndLock(Namespace ns, TokenSequence seq, int tokenCount, int[] pages) {
        return doInsert(ns, seq, tokenCount, pages, 0, true);
    }

    /** {@link #insert} with priority and {@link #lock} of the terminal node, atomically. */
    public InsertResult insertAndLock(Namespace ns, TokenSequence seq, int tokenCount, int[] pages, int priority) {
        return doInsert(ns, seq, tokenCount, pages, priority, true);
    }

    private InsertResult doInsert(Namespace ns, TokenSequence seq, int tokenCount, int[] pages, int priority,
                                  boolean lock) {
        checkNsSeq(ns, seq);
        if (tokenCount < 0 || tokenCount > seq.size()) {
            throw new IllegalArgumentException("tokenCount must be in [0, " + seq.size() + "], got " + tokenCount);
        }
        if (pages == null) {
            throw new IllegalArgumentException("pages is null");
        }
        int kvLim = pageAligned(seq.kvStart(tokenCount));
        int np = kvLim / pageSize;
        if (pages.length < np) {
            throw new IllegalArgumentException("need " + np + " page ids for " + tokenCount + " tokens ("
                    + seq.kvStart(tokenCount) + " KV positions, page size " + pageSize + "), got " + pages.length);
        }
        for (int i = 0; i < np; i++) {
            if (pages[i] < 0) {
                throw new IllegalArgumentException("page id must be >= 0, got " + pages[i] + " at index " + i);
            }
        }
        if (np == 0) {
            return new InsertResult(trees.rootOrDetached(ns), 0, 0, Node.NO_PAGES);
        }
        while (true) {
            Tree tree = trees.findOrCreate(ns);
            tree.lock.lock();
            try {
                if (tree.dead) {
                    continue;
                }
                try {
                    return insertLocked(tree, seq, tokenCount, kvLim, pages, priority, lock);
                } catch (RuntimeException e) {
                    trees.pruneIfEmpty(tree); // a refused insert into a new namespace leaves no empty root
                    throw e;
                }
            } finally {
                tree.lock.unlock();
            }
        }
    }

    private InsertResult insertLocked(Tree tree, TokenSequence seq, int tokenCount, int kvLim, int[] pages,
                                      int priority, boolean lock) {
        int np = kvLim / pageSize;
        TreeEditor.Walk w = editor.descend(tree.root, seq, tokenCount, kvLim, true);
        int firstNew = w.kv / pageSize;
        long now = clock.getAsLong();
        Node terminal = w.node;
        boolean grown = w.kv < kvLim;
        if (grown) {
            claim(pages, firstNew, np);
            terminal = editor.addLeaf(w, seq, kvLim, pages, priority, now);
            CacheListener l = listener;
            if (l != null) {
                Node parent = terminal.parent;
                int parentPage = parent.parent == null ? -1 : parent.pages[parent.pages.length - 1];
                l.pagesCached(tree.ns, parentPage, terminal.pages, seq.kvKeys(firstNew * pageSize, kvLim));
            }
        }
        for (Node x = terminal; x.parent != null; x = x.parent) {
            x.lastAccess = now;
            if (priority > x.priority) {
                x.priority = priority;
            }
        }
        if (lock) {
            lockPath(terminal);
        } else if (grown) {
            queue.offer(terminal);
        } else {
            queue.accessed(terminal);
        }
        return new InsertResult(terminal, firstNew, np - firstNew, TreeEditor.collectPages(terminal, np));
    }

    /** Takes ownership of pages[from, to), all or nothing. */
    private void claim(int[] pages, int from, int to) {
        for (int i = from; i < to; i++) {
            if (!owned.claim(pages[i])) {
                for (int j = from; j < i; j++) {
                    owned.release(pages[j]);
                }
                throw new IllegalArgumentException("page " + pages[i] + " (index " + i
                        + ") is already owned by the cache (or repeated in pages)");
            }
        }
    }

    /** A match hit the path through {@code last}: refreshes access times and counts the hit. */
    private void touch(Node last) {
        if (last.parent == null) {
            return;
        }
        long now = clock.getAsLong();
        for (Node n = last; n.parent != null; n = n.parent) {
            n.lastAccess = now;
            n.hits++;
        }
    }

    // ---- locks ------------------------------------------------------------------------------

    /** Adds a lock reference on {@code node} and all its ancestors. No-op on a root. */
    public void lock(NodeRef node) {
        Node n = own(node);
        if (n.parent == null) {
            return;
        }
        n.tree.lock.lock();
        try {
            if (n.evicted) {
                throw new IllegalStateException("cannot lock " + n + ": it was evicted");
            }
            lockPath(n);
        } finally {
            n.tree.lock.unlock();
        }
    }

    /**
     * Removes a lock reference from {@code node} and all its ancestors. No-op on a root.
     *
     * @throws IllegalStateException when the node holds no lock (underflow); nothing changes
     */
    public void unlock(NodeRef node) {
        Node n = own(node);
        if (n.parent == null) {
            return;
        }
        n.tree.lock.lock();
        try {
            if (n.lockRef <= 0) {
                throw new IllegalStateException("lock_ref underflow: " + n + " is not locked");
            }
            for (Node x = n; x.parent != null; x = x.parent) {
                if (--x.lockRef == 0) {
                    counters.release(x.pages.length);
                }
            }
            if (n.lockRef == 0 && n.isLeaf()) {
                queue.offer(n);
            }
        } finally {
            n.tree.lock.unlock();
        }
    }

    private void lockPath(Node n) {
        for (Node x = n; x.parent != null; x = x.parent) {
            if (x.lockRef++ == 0) {
                counters.protect(x.pages.length);
            }
        }
    }

    private Node own(NodeRef ref) {
        if (!(ref instanceof Node n) || n.tree == null || n.tree.owner != this) {
            throw new IllegalArgumentException("node " + ref + " does not belong to this cache");
        }
        return n;
    }

    // ---- eviction ---------------------------------------------------------------------------

    /**
     * Evicts unlocked leaves (cascading to parents that become unlocked leaves) in policy order until
     * at least {@code pages} pages were freed or nothing evictable is left; frees them through the
     * {@link PageFreer}. Returns the number of pages freed.
     */
    public int evict(int pages) {
        if (pages < 0) {
            throw new IllegalArgumentException("pages must be >= 0, got " + pages);
        }
        return evictor.evict(pages);
    }

    /**
     * Evicts every unlocked node of {@code ns} (locked paths stay); prunes the tree when empty.
     * Returns the pages freed.
     */
    public int evictNamespace(Namespace ns) {
        return evictor.evictNamespace(Objects.requireNonNull(ns, "ns"));
    }

    /**
     * Recursively evicts the whole tree of {@code ns} (e.g. when a LoRA adapter is unloaded) and
     * removes the namespace. Returns the pages freed.
     *
     * @throws IllegalStateException while any node of the namespace is locked (nothing changes)
     */
    public int dropNamespace(Namespace ns) {
        return evictor.dropNamespace(Objects.requireNonNull(ns, "ns"));
    }

    /**
     * Recursively evicts {@code node} and all its descendants.
     * Returns the pages freed; on a root, drops the namespace.
     *
     * @throws IllegalStateException while any node of the subtree is locked (nothing changes)
     */
    public int evictSubtree(NodeRef node) {
        Node n = own(node);
        if (n.parent == null) {
            return n.tree.dead ? 0 : dropNamespace(n.tree.ns);
        }
        return evictor.evictSubtree(n);
    }

    // ---- queries and metrics ----------------------------------------------------------------

    /** Pages owned by the cache. */
    public long cachedPages() {
        return counters.cachedPages();
    }

    /** Cached pages in unlocked nodes: reclaimable by {@link #evict}. */
    public long evictablePages() {
        return counters.evictablePages();
    }

    /** Cached pages in locked nodes. */
    public long protectedPages() {
        return counters.protectedPages();
    }

    /** True when the cache owns {@code page}. */
    public boolean containsPage(int page) {
        return owned.contains(page);
    }

    /** Live namespace trees. */
    public int namespaceCount() {
        return trees.size();
    }

    /** True when {@code ns} has a live tree. */
    public boolean hasNamespace(Namespace ns) {
        return trees.contains(ns);
    }

    /** Live non-root nodes. */
    public long nodeCount() {
        return counters.nodeCount();
    }

    /** Root of {@code ns}'s tree, or null (diagnostics and tests). */
    NodeRef root(Namespace ns) {
        Tree t = trees.find(ns);
        return t == null ? null : t.root;
    }

    /**
     * Snapshot of the counters. Tree bytes are computed by walking every tree (each under its own
     * lock): O(nodes), meant for reporting, not for hot paths.
     */
    public CacheMetrics metrics() {
        return counters.snapshot(trees.all(), trees.size(), queue.bytes());
    }

    // ---- helpers ----------------------------------------------------------------------------

    private int pageAligned(int kv) {
        return kv / pageSize * pageSize;
    }

    private static void checkNsSeq(Namespace ns, TokenSequence seq) {
        if (ns == null) {
            throw new IllegalArgumentException("namespace is null (use Namespace.DEFAULT)");
        }
        if (seq == null) {
            throw new IllegalArgumentException("sequence is null");
        }
    }
}
