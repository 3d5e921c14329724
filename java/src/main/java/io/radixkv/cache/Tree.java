package io.radixkv.cache;

import java.util.concurrent.locks.ReentrantLock;

/** One namespace's radix tree and its lock (fine-grained: namespaces never contend). */
final class Tree {
    final Namespace ns;
    final int pageSize;
    final Node root;
    final ReentrantLock lock = new ReentrantLock();
    /** Set (under lock) when the tree was pruned or dropped; a new Tree replaces it in the map. */
    boolean dead;

    final RadixCache owner;

    Tree(RadixCache owner, Namespace ns, int pageSize, long rootId) {
        this.owner = owner;
        this.ns = ns;
        this.pageSize = pageSize;
        this.root = new Node(this, rootId);
    }
}
