package io.radixkv.cache;

/**
 * Evictable leaves ordered by their {@link EvictionStrategy} key: a global {@link EvictionHeap}
 * with lazy invalidation, O(log n) per victim and no tree scans.
 *
 * <p>Invariant: every evictable leaf (non-root, unlocked, childless, live) has a live entry whose
 * key is at most its current key. Then the smallest entry whose key is still current is the best
 * leaf right now (an entry that underestimates is re-keyed when it surfaces). Monotone strategies
 * keep it for free; for MRU {@link #offer} and {@link #accessed} replace the entry with the current
 * key. Callers hold the node's tree lock (lock order: tree lock, then heap lock).
 */
final class EvictionQueue {

    private final EvictionStrategy strategy;
    private final EvictionHeap heap = new EvictionHeap();

    EvictionQueue(EvictionStrategy strategy) {
        this.strategy = strategy;
    }

    /** {@code n} just became an evictable leaf (created unlocked, unlocked, or lost its last child). */
    void offer(Node n) {
        push(n, !strategy.keysOnlyGrow());
    }

    /** {@code n}'s access time or hit count changed; re-keys it now where that lowers its key. */
    void accessed(Node n) {
        if (!strategy.keysOnlyGrow() && n.parent != null && n.isLeaf() && n.lockRef == 0) {
            push(n, true);
        }
    }

    /** Pops the smallest live entry into {@code out}; false when none is left. No tree lock needed. */
    boolean poll(EvictionHeap.Entry out) {
        return heap.poll(out);
    }

    /**
     * True when the popped entry {@code e} of {@code n} underestimates its current key (it was
     * accessed since it was queued): it is then queued again with the current key.
     */
    boolean requeueIfStale(Node n, EvictionHeap.Entry e) {
        long a = strategy.primary(n), b = strategy.secondary(n), c = strategy.tertiary(n);
        if (a > e.k1 || (a == e.k1 && (b > e.k2 || (b == e.k2 && c > e.k3)))) {
            heap.push(n, a, b, c, false);
            return true;
        }
        return false;
    }

    /** {@code n} left the tree: its entries are dead. */
    void remove(Node n) {
        heap.invalidate(n);
    }

    /** Approximate heap bytes of the entry arrays. */
    long bytes() {
        return heap.bytes();
    }

    private void push(Node n, boolean replace) {
        heap.push(n, strategy.primary(n), strategy.secondary(n), strategy.tertiary(n), replace);
    }
}
