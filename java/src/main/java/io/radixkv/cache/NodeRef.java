package io.radixkv.cache;

/**
 * Opaque handle to a radix-tree node, returned by match and insert and passed back to {@link
 * RadixCache#lock} / {@link RadixCache#unlock}. A handle stays valid across node splits (it keeps
 * denoting the same prefix). The accessors are unsynchronized snapshots for diagnostics and tests.
 */
public sealed interface NodeRef permits Node {

    /** The namespace of the tree this node belongs to. */
    Namespace namespace();

    /** True for a namespace root (also the detached root returned by a match in an unknown namespace). */
    boolean isRoot();

    /** Lock references on this node (one per lock on it or on a descendant). */
    int lockRef();

    /** True once the node was evicted or its namespace dropped. */
    boolean isEvicted();

    /** KV positions from the root through the end of this node (page-aligned). */
    int kvEnd();
}
