package io.radixkv.cache;

import java.util.Collection;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The live namespace trees. A tree is created by the first insert into its namespace and pruned
 * (marked dead and removed) once its root has no children, so high-cardinality namespaces cost
 * nothing after their pages are evicted. A thread that took a tree's lock re-checks
 * {@link Tree#dead}: a dead tree is never revived, a new one replaces it.
 */
final class Namespaces {

    private final RadixCache owner;
    private final int pageSize;
    private final AtomicLong ids;
    private final ConcurrentHashMap<Namespace, Tree> trees = new ConcurrentHashMap<>();

    Namespaces(RadixCache owner, int pageSize, AtomicLong ids) {
        this.owner = owner;
        this.pageSize = pageSize;
        this.ids = ids;
    }

    /** The tree of {@code ns}, or null; the caller re-checks {@link Tree#dead} under its lock. */
    Tree find(Namespace ns) {
        return trees.get(ns);
    }

    /** The tree of {@code ns}, created when missing; the caller re-checks {@link Tree#dead} under its lock. */
    Tree findOrCreate(Namespace ns) {
        return trees.computeIfAbsent(ns, k -> new Tree(owner, k, pageSize, ids.getAndIncrement()));
    }

    /** Drops {@code tree} when its root has no children left. Caller holds the tree lock. */
    void pruneIfEmpty(Tree tree) {
        if (tree.root.kidCount == 0 && !tree.dead) {
            tree.dead = true;
            trees.remove(tree.ns, tree);
        }
    }

    /** The root of {@code ns} if its tree is live, else a detached root (nothing cached there). */
    Node rootOrDetached(Namespace ns) {
        Tree t = trees.get(ns);
        return t != null && !t.dead ? t.root : detachedRoot(ns);
    }

    /** A root in no map, for results in a namespace without a tree; locking it is a no-op. */
    Node detachedRoot(Namespace ns) {
        Tree t = new Tree(owner, ns, pageSize, -1);
        t.dead = true;
        return t.root;
    }

    int size() {
        return trees.size();
    }

    boolean contains(Namespace ns) {
        return trees.containsKey(ns);
    }

    Collection<Tree> all() {
        return trees.values();
    }
}
