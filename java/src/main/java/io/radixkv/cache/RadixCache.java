package io.radixkv.cache;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.LongSupplier;

/**
 * Radix-tree prefix cache of KV pages (SGLang's RadixAttention, seed 000's design, ported).
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
 * <h2>Ownership (seed 000 "Ownership Policy")</h2>
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
 * {@code prompt_len - 1}, seed 000), which also yields the logits of the last prompt position:
 * see {@link #reusableKvLength}. Chosen over copying the last page with the page-copy kernel
 * because it needs no extra kernel launch and no special case for pages cut inside an image; it
 * costs at most one page of recompute.
 *
 * <h2>Eviction</h2>
 * {@link #evict} frees unlocked leaves until at least the requested page count is freed, cascading
 * to parents that become unlocked leaves, in the order of the {@link EvictionPolicy}. Victims come
 * from a global min-heap with lazy invalidation: O(log n) per victim, no tree scans. The allocator
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

    private static final int[] NO_PAGES = Node.NO_PAGES;

    private final int pageSize;
    private final EvictionPolicy policy;
    private final PageFreer freer;
    private final LongSupplier clock;

    private final ConcurrentHashMap<Namespace, Tree> trees = new ConcurrentHashMap<>();
    private final EvictionHeap heap = new EvictionHeap();
    private final PageOwnership owned = new PageOwnership();
    private final AtomicLong nextId = new AtomicLong();

    private final AtomicLong cachedPages = new AtomicLong();
    private final AtomicLong evictablePages = new AtomicLong();
    private final AtomicLong protectedPages = new AtomicLong();
    private final AtomicLong nodeCount = new AtomicLong();

    private final LongAdder hits = new LongAdder();
    private final LongAdder misses = new LongAdder();
    private final LongAdder matchedTokens = new LongAdder();
    private final LongAdder queriedTokens = new LongAdder();
    private final LongAdder matchedKv = new LongAdder();
    private final LongAdder queriedKv = new LongAdder();
    private final LongAdder insertedPagesTotal = new LongAdder();
    private final LongAdder evictions = new LongAdder();
    private final LongAdder evictedPages = new LongAdder();

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
        this.freer = Objects.requireNonNull(freer, "freer");
        this.clock = Objects.requireNonNull(clock, "clock");
    }

    public int pageSize() {
        return pageSize;
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
        int kvLim = seq.kvLength() / pageSize * pageSize;
        queriedTokens.add(seq.size());
        queriedKv.add(seq.kvLength());
        Tree tree = trees.get(ns);
        if (tree != null) {
            tree.lock.lock();
            try {
                if (!tree.dead) {
                    Walk w = new Walk(tree.root);
                    while (kvLim - w.kv >= pageSize) {
                        int got = step(w, seq, seq.size(), kvLim);
                        if (got == 0) {
                            break;
                        }
                        Node c = w.child;
                        if (got < c.pages.length) {
                            w.node = split(c, got);
                            w.kv += got * pageSize;
                            break;
                        }
                        w.node = c;
                        w.kv += c.pages.length * pageSize;
                        locate(w, seq);
                    }
                    Node last = w.node;
                    int[] pages = collectPages(last, w.kv / pageSize);
                    touch(last, true);
                    if (lock) {
                        lockPath(last);
                    }
                    int tokens = seq.tokenAtKv(w.kv);
                    record(w.kv, tokens);
                    return new MatchResult(pages, w.kv, tokens, last);
                }
            } finally {
                tree.lock.unlock();
            }
        }
        record(0, 0);
        return new MatchResult(NO_PAGES, 0, 0, transientRoot(ns));
    }

    private void record(int kv, int tokens) {
        if (kv > 0) {
            hits.increment();
            matchedKv.add(kv);
            matchedTokens.add(tokens);
        } else {
            misses.increment();
        }
    }

    /**
     * Matched KV length {@code match} would return, changing nothing: no split, no lock, no access
     * time or metric update. For admission control and routers.
     */
    public int peekMatchLength(Namespace ns, TokenSequence seq) {
        checkNsSeq(ns, seq);
        int kvLim = seq.kvLength() / pageSize * pageSize;
        Tree tree = trees.get(ns);
        if (tree == null) {
            return 0;
        }
        tree.lock.lock();
        try {
            if (tree.dead) {
                return 0;
            }
            Walk w = new Walk(tree.root);
            while (kvLim - w.kv >= pageSize) {
                int got = step(w, seq, seq.size(), kvLim);
                if (got == 0) {
                    break;
                }
                w.kv += got * pageSize;
                if (got < w.child.pages.length) {
                    break;
                }
                w.node = w.child;
                locate(w, seq);
            }
            return w.kv;
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
        int kvLim = seq.kvStart(tokenCount) / pageSize * pageSize;
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
            Tree t = trees.get(ns);
            return new InsertResult(t != null && !t.dead ? t.root : transientRoot(ns), 0, 0, NO_PAGES);
        }
        while (true) {
            Tree tree = trees.computeIfAbsent(ns, k -> new Tree(this, k, pageSize, nextId.getAndIncrement()));
            tree.lock.lock();
            try {
                if (tree.dead) {
                    continue;
                }
                try {
                    return insertLocked(tree, seq, tokenCount, kvLim, pages, priority, lock);
                } catch (RuntimeException e) {
                    pruneIfEmpty(tree); // a refused insert into a new namespace leaves no empty root
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
        Walk w = new Walk(tree.root);
        while (kvLim - w.kv >= pageSize) {
            int got = step(w, seq, tokenCount, kvLim);
            if (got == 0) {
                break;
            }
            Node c = w.child;
            if (got < c.pages.length) {
                w.node = split(c, got);
                w.kv += got * pageSize;
                break;
            }
            w.node = c;
            w.kv += c.pages.length * pageSize;
            locate(w, seq);
        }
        int firstNew = w.kv / pageSize;
        Node terminal = w.node;
        long now = clock.getAsLong();
        if (w.kv < kvLim) {
            locate(w, seq);
            claim(pages, firstNew, np);
            Node nn = new Node(tree, nextId.getAndIncrement());
            nn.parent = w.node;
            int lastTok = seq.tokenAtKv(kvLim - 1);
            nn.label = seq.slice(w.t, lastTok + 1);
            nn.head = w.off;
            nn.pages = Arrays.copyOfRange(pages, firstNew, np);
            nn.firstHash = nn.label.hashKeys(0, nn.label.tokensCovering(0, nn.head, pageSize));
            nn.created = now;
            nn.lastAccess = now;
            nn.priority = priority;
            w.node.addChild(nn);
            int n = np - firstNew;
            cachedPages.addAndGet(n);
            evictablePages.addAndGet(n);
            nodeCount.incrementAndGet();
            insertedPagesTotal.add(n);
            terminal = nn;
            if (!lock) {
                enqueue(nn);
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
        } else if (policy == EvictionPolicy.MRU && w.kv == kvLim && terminal.parent != null && terminal.isLeaf()
                && terminal.lockRef == 0) {
            heap.push(terminal, k1(terminal), k2(terminal), k3(terminal), true);
        }
        return new InsertResult(terminal, firstNew, np - firstNew, collectPages(terminal, np));
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
                    evictablePages.addAndGet(x.pages.length);
                    protectedPages.addAndGet(-x.pages.length);
                }
            }
            if (n.lockRef == 0 && n.isLeaf()) {
                enqueue(n);
            }
        } finally {
            n.tree.lock.unlock();
        }
    }

    private void lockPath(Node n) {
        for (Node x = n; x.parent != null; x = x.parent) {
            if (x.lockRef++ == 0) {
                evictablePages.addAndGet(-x.pages.length);
                protectedPages.addAndGet(x.pages.length);
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
        int freed = 0;
        EvictionHeap.Entry e = new EvictionHeap.Entry();
        while (freed < pages && heap.poll(e)) {
            Node n = e.node;
            Tree tree = n.tree;
            int[] victim = null;
            tree.lock.lock();
            try {
                if (n.evicted || n.parent == null || !n.isLeaf() || n.lockRef != 0) {
                    continue;
                }
                long a = k1(n), b = k2(n), c = k3(n);
                if (a > e.k1 || (a == e.k1 && (b > e.k2 || (b == e.k2 && c > e.k3)))) {
                    heap.push(n, a, b, c, false); // accessed since it was queued: re-key lazily
                    continue;
                }
                victim = removeLeaf(n);
            } finally {
                tree.lock.unlock();
            }
            freer.free(victim, 0, victim.length);
            freed += victim.length;
        }
        return freed;
    }

    /**
     * Evicts every unlocked node of {@code ns} (locked paths stay); prunes the tree when empty.
     * Returns the pages freed.
     */
    public int evictNamespace(Namespace ns) {
        Objects.requireNonNull(ns, "ns");
        Tree tree = trees.get(ns);
        if (tree == null) {
            return 0;
        }
        List<int[]> out = new ArrayList<>();
        tree.lock.lock();
        try {
            if (tree.dead) {
                return 0;
            }
            ArrayDeque<Node> stack = new ArrayDeque<>();
            stack.push(tree.root);
            List<Node> unlocked = new ArrayList<>();
            while (!stack.isEmpty()) {
                stack.pop().forEachChild(c -> {
                    if (c.lockRef == 0) {
                        unlocked.add(c);
                    } else {
                        stack.push(c);
                    }
                });
            }
            for (Node c : unlocked) {
                removeSubtree(c, out);
            }
            pruneIfEmpty(tree);
        } finally {
            tree.lock.unlock();
        }
        return freeAll(out);
    }

    /**
     * Recursively evicts the whole tree of {@code ns} (e.g. when a LoRA adapter is unloaded) and
     * removes the namespace. Returns the pages freed.
     *
     * @throws IllegalStateException while any node of the namespace is locked (nothing changes)
     */
    public int dropNamespace(Namespace ns) {
        Objects.requireNonNull(ns, "ns");
        Tree tree = trees.get(ns);
        if (tree == null) {
            return 0;
        }
        List<int[]> out = new ArrayList<>();
        tree.lock.lock();
        try {
            if (tree.dead) {
                return 0;
            }
            tree.root.forEachChild(c -> {
                if (c.lockRef > 0) {
                    throw new IllegalStateException("cannot drop namespace " + ns + ": " + c.lockRef
                            + " lock(s) held in it");
                }
            });
            List<Node> kids = new ArrayList<>();
            tree.root.forEachChild(kids::add);
            for (Node c : kids) {
                removeSubtree(c, out);
            }
            pruneIfEmpty(tree);
        } finally {
            tree.lock.unlock();
        }
        return freeAll(out);
    }

    /**
     * Recursively evicts {@code node} and all its descendants (seed 004 "recursive eviction").
     * Returns the pages freed; on a root, drops the namespace.
     *
     * @throws IllegalStateException while any node of the subtree is locked (nothing changes)
     */
    public int evictSubtree(NodeRef node) {
        Node n = own(node);
        if (n.parent == null) {
            return n.tree.dead ? 0 : dropNamespace(n.tree.ns);
        }
        List<int[]> out = new ArrayList<>();
        Tree tree = n.tree;
        tree.lock.lock();
        try {
            if (n.evicted) {
                return 0;
            }
            if (n.lockRef > 0) {
                throw new IllegalStateException("cannot evict subtree of " + n + ": it is locked");
            }
            Node p = n.parent;
            removeSubtree(n, out);
            if (p.parent != null) {
                if (p.isLeaf() && p.lockRef == 0) {
                    enqueue(p);
                }
            } else {
                pruneIfEmpty(tree);
            }
        } finally {
            tree.lock.unlock();
        }
        return freeAll(out);
    }

    private int freeAll(List<int[]> out) {
        int freed = 0;
        for (int[] p : out) {
            freer.free(p, 0, p.length);
            freed += p.length;
        }
        return freed;
    }

    /** Removes an unlocked leaf; returns its pages. Caller holds the tree lock. */
    private int[] removeLeaf(Node n) {
        Node p = n.parent;
        p.removeChild(n);
        retire(n);
        if (p.parent != null) {
            if (p.isLeaf() && p.lockRef == 0) {
                enqueue(p);
            }
        } else {
            pruneIfEmpty(n.tree);
        }
        return n.pages;
    }

    /** Detaches the unlocked subtree at {@code top} and retires all its nodes. */
    private void removeSubtree(Node top, List<int[]> out) {
        top.parent.removeChild(top);
        ArrayDeque<Node> stack = new ArrayDeque<>();
        stack.push(top);
        while (!stack.isEmpty()) {
            Node x = stack.pop();
            x.forEachChild(stack::push);
            retire(x);
            out.add(x.pages);
        }
    }

    /** Bookkeeping for a node leaving the tree (already detached from its parent). */
    private void retire(Node n) {
        n.evicted = true;
        n.label = null; // stale heap entries and callers' NodeRefs must not pin the keys
        n.kids = null;
        n.kidCount = 0;
        heap.invalidate(n);
        for (int pg : n.pages) {
            owned.release(pg);
        }
        int len = n.pages.length;
        cachedPages.addAndGet(-len);
        evictablePages.addAndGet(-len);
        nodeCount.decrementAndGet();
        evictions.increment();
        evictedPages.add(len);
    }

    private void pruneIfEmpty(Tree tree) {
        if (tree.root.kidCount == 0 && !tree.dead) {
            tree.dead = true;
            trees.remove(tree.ns, tree);
        }
    }

    // ---- walking ----------------------------------------------------------------------------

    /** Cursor of a descent: current node, KV position, query token containing it and offset in it. */
    private static final class Walk {
        Node node;
        Node child;
        int kv;
        int t;
        int off;

        Walk(Node root) {
            this.node = root;
        }
    }

    /**
     * Looks up the child of w.node matching the query's next page and returns how many of its pages
     * match (0 if none), limited to tokens &lt; tLim and KV &lt; kvLim. Requires kvLim - w.kv &ge;
     * pageSize.
     */
    private int step(Walk w, TokenSequence q, int tLim, int kvLim) {
        int cnt = q.tokensCovering(w.t, w.off, pageSize);
        Node c = w.node.findChild(q.hashKeys(w.t, cnt), q, w.t, cnt);
        w.child = c;
        if (c == null) {
            return 0;
        }
        int len = Math.min(c.label.size(), tLim - w.t);
        int eq = TokenSequence.commonPrefix(c.label, 0, q, w.t, len);
        int covered = q.kvStart(w.t + eq) - w.kv;
        int span = c.pages.length * pageSize;
        int got = Math.min(span, Math.min(covered, kvLim - w.kv));
        return Math.max(0, got / pageSize);
    }

    private static void locate(Walk w, TokenSequence q) {
        int t = q.tokenAtKv(w.kv);
        w.t = t;
        w.off = t < q.size() ? w.kv - q.kvStart(t) : 0;
    }

    /** Splits {@code n} after its first {@code p} pages; returns the new parent (the prefix). */
    private Node split(Node n, int p) {
        TokenSequence l = n.label;
        int abs = p * pageSize + n.head; // cut, in label KV coordinates
        int i = l.tokenAtKv(abs);
        int offIn = abs - l.kvStart(i);
        Node pre = new Node(n.tree, nextId.getAndIncrement());
        pre.label = l.slice(0, offIn == 0 ? i : i + 1);
        pre.head = n.head;
        pre.pages = Arrays.copyOfRange(n.pages, 0, p);
        pre.parent = n.parent;
        pre.firstHash = n.firstHash;
        pre.lockRef = n.lockRef;
        pre.lastAccess = n.lastAccess;
        pre.created = n.created;
        pre.hits = n.hits;
        pre.priority = n.priority;
        n.parent.replaceChild(n, pre);
        n.label = l.slice(i, l.size());
        n.head = offIn;
        n.pages = Arrays.copyOfRange(n.pages, p, n.pages.length);
        n.parent = pre;
        n.firstHash = n.label.hashKeys(0, n.label.tokensCovering(0, n.head, pageSize));
        pre.addChild(n);
        nodeCount.incrementAndGet();
        return pre;
    }

    private static int[] collectPages(Node last, int total) {
        if (total == 0) {
            return NO_PAGES;
        }
        int[] out = new int[total];
        int pos = total;
        for (Node n = last; n.parent != null; n = n.parent) {
            pos -= n.pages.length;
            System.arraycopy(n.pages, 0, out, pos, n.pages.length);
        }
        return out;
    }

    /** Refreshes access time (and hit count) from {@code last} up to the root. */
    private void touch(Node last, boolean hit) {
        if (last.parent == null) {
            return;
        }
        long now = clock.getAsLong();
        for (Node n = last; n.parent != null; n = n.parent) {
            n.lastAccess = now;
            if (hit) {
                n.hits++;
            }
        }
        // MRU keys decrease on access: re-queue eagerly (other policies' keys only grow: lazy)
        if (policy == EvictionPolicy.MRU && last.isLeaf() && last.lockRef == 0) {
            heap.push(last, k1(last), k2(last), k3(last), true);
        }
    }

    // ---- eviction keys (smaller = evicted first) --------------------------------------------

    /**
     * Queues a node that just became an evictable leaf. A live older entry is kept when keys only
     * grow (it underestimates the key and is re-keyed when popped); MRU keys shrink on access, so
     * its entry is replaced by one with the current key.
     */
    private void enqueue(Node n) {
        heap.push(n, k1(n), k2(n), k3(n), policy == EvictionPolicy.MRU);
    }

    private long k1(Node n) {
        return switch (policy) {
            case LRU -> n.lastAccess;
            case LFU -> n.hits;
            case FIFO -> n.created;
            case MRU -> -n.lastAccess;
            case FILO -> -n.created;
            case PRIORITY -> n.priority;
        };
    }

    private long k2(Node n) {
        return switch (policy) {
            case LRU, FIFO -> n.id;
            case LFU, PRIORITY -> n.lastAccess;
            case MRU, FILO -> -n.id;
        };
    }

    private long k3(Node n) {
        return switch (policy) {
            case LFU, PRIORITY -> n.id;
            default -> 0;
        };
    }

    // ---- queries and metrics ----------------------------------------------------------------

    /** Pages owned by the cache. */
    public long cachedPages() {
        return cachedPages.get();
    }

    /** Cached pages in unlocked nodes: reclaimable by {@link #evict}. */
    public long evictablePages() {
        return evictablePages.get();
    }

    /** Cached pages in locked nodes. */
    public long protectedPages() {
        return protectedPages.get();
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
        return trees.containsKey(ns);
    }

    /** Live non-root nodes. */
    public long nodeCount() {
        return nodeCount.get();
    }

    /** Root of {@code ns}'s tree, or null (diagnostics and tests). */
    NodeRef root(Namespace ns) {
        Tree t = trees.get(ns);
        return t == null ? null : t.root;
    }

    /**
     * Snapshot of the counters. Tree bytes are computed by walking every tree (each under its own
     * lock): O(nodes), meant for reporting, not for hot paths.
     */
    public CacheMetrics metrics() {
        long bytes = heap.bytes(), keyBytes = 0;
        for (Tree t : trees.values()) {
            t.lock.lock();
            try {
                if (t.dead) {
                    continue;
                }
                bytes += 64 + 48; // tree + lock objects
                ArrayDeque<Node> stack = new ArrayDeque<>();
                stack.push(t.root);
                while (!stack.isEmpty()) {
                    Node n = stack.pop();
                    n.forEachChild(stack::push);
                    bytes += 96 + arrayBytes(4, n.pages.length) + (n.kids == null ? 0 : arrayBytes(4, n.kids.length));
                    if (n.label != null) {
                        TokenSequence l = n.label;
                        long kb = arrayBytes(4, l.keys.length);
                        if (l.imgTok.length > 0) {
                            kb += 3 * arrayBytes(4, l.imgTok.length) + arrayBytes(8, l.imgHash.length);
                        }
                        keyBytes += kb;
                        bytes += 40 + kb;
                    }
                }
            } finally {
                t.lock.unlock();
            }
        }
        return new CacheMetrics(hits.sum(), misses.sum(), matchedTokens.sum(), queriedTokens.sum(), matchedKv.sum(),
                queriedKv.sum(), insertedPagesTotal.sum(), evictions.sum(), evictedPages.sum(), nodeCount.get(),
                trees.size(), cachedPages.get(), evictablePages.get(), protectedPages.get(), bytes, keyBytes);
    }

    private static long arrayBytes(int elem, int n) {
        return (16 + (long) elem * n + 7) & ~7L;
    }

    // ---- helpers ----------------------------------------------------------------------------

    private Node transientRoot(Namespace ns) {
        Tree t = new Tree(this, ns, pageSize, -1);
        t.dead = true;
        return t.root;
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
