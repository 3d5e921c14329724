package io.radixkv.cache;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;

/**
 * Removes nodes from the trees and returns their pages through the {@link PageFreer}: policy-ordered
 * eviction of unlocked leaves, and the namespace and subtree evictions. Pages are freed after they
 * left the tree, with no cache lock held (see {@link RadixCache} for the lock order).
 */
final class Evictor {

    private final Namespaces trees;
    private final EvictionQueue queue;
    private final PageOwnership owned;
    private final CacheCounters counters;
    private final PageFreer freer;
    private volatile CacheListener listener;

    Evictor(Namespaces trees, EvictionQueue queue, PageOwnership owned, CacheCounters counters, PageFreer freer) {
        this.trees = trees;
        this.queue = queue;
        this.owned = owned;
        this.counters = counters;
        this.freer = freer;
    }

    void setListener(CacheListener listener) {
        this.listener = listener;
    }

    /** See {@link RadixCache#evict}. */
    int evict(int pages) {
        int freed = 0;
        EvictionHeap.Entry e = new EvictionHeap.Entry();
        while (freed < pages && queue.poll(e)) {
            Node n = e.node;
            Tree tree = n.tree;
            int[] victim;
            tree.lock.lock();
            try {
                if (n.evicted || n.parent == null || !n.isLeaf() || n.lockRef != 0 || queue.requeueIfStale(n, e)) {
                    continue; // no longer an evictable leaf (it is queued again when it becomes one)
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

    /** See {@link RadixCache#evictNamespace}. */
    int evictNamespace(Namespace ns) {
        return removeFromNamespace(ns, tree -> {
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
            return unlocked;
        });
    }

    /** See {@link RadixCache#dropNamespace}. */
    int dropNamespace(Namespace ns) {
        return removeFromNamespace(ns, tree -> {
            List<Node> kids = new ArrayList<>();
            tree.root.forEachChild(kids::add);
            for (Node c : kids) {
                if (c.lockRef > 0) {
                    throw new IllegalStateException("cannot drop namespace " + ns + ": " + c.lockRef
                            + " lock(s) held in it");
                }
            }
            return kids;
        });
    }

    /**
     * Under the namespace tree's lock: removes the subtrees {@code pick} chooses (it may throw to
     * refuse, removing nothing), prunes the tree if empty, then frees the pages outside the lock.
     * Returns the pages freed (0 for an unknown or dead namespace).
     */
    private int removeFromNamespace(Namespace ns, Function<Tree, List<Node>> pick) {
        Tree tree = trees.find(ns);
        if (tree == null) {
            return 0;
        }
        List<int[]> out = new ArrayList<>();
        tree.lock.lock();
        try {
            if (tree.dead) {
                return 0;
            }
            for (Node c : pick.apply(tree)) {
                removeSubtree(c, out);
            }
            trees.pruneIfEmpty(tree);
        } finally {
            tree.lock.unlock();
        }
        return freeAll(out);
    }

    /** See {@link RadixCache#evictSubtree}; {@code n} is not a root. */
    int evictSubtree(Node n) {
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
            parentLostChild(p);
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
        parentLostChild(p);
        return n.pages;
    }

    /** Queues {@code p} if it became an evictable leaf; prunes the tree if {@code p} is an empty root. */
    private void parentLostChild(Node p) {
        if (p.parent != null) {
            if (p.isLeaf() && p.lockRef == 0) {
                queue.offer(p);
            }
        } else {
            trees.pruneIfEmpty(p.tree);
        }
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
        queue.remove(n);
        for (int pg : n.pages) {
            owned.release(pg);
        }
        CacheListener l = listener;
        if (l != null && n.pages.length > 0) {
            l.pagesEvicted(n.tree.ns, n.pages);
        }
        counters.nodeEvicted(n.pages.length);
    }
}
