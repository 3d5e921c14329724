package io.radixkv.cache;

import java.util.Arrays;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Min-heap of eviction candidates with lazy invalidation, in parallel primitive arrays (no object
 * per entry). An entry is (k1, k2, k3, node, version); only the entry whose version equals the
 * node's {@link Node#heapVersion} is live, so re-enqueueing a node invalidates its older entries in
 * O(1). Entries are validated against the tree when popped (the node may have been locked, gained
 * children, been evicted, or been accessed since: then it is dropped or re-keyed).
 *
 * <p>Guarded by its own lock, which is always the innermost lock (tree lock → heap lock).
 */
final class EvictionHeap {

    final ReentrantLock lock = new ReentrantLock();
    private long[] k1 = new long[64], k2 = new long[64], k3 = new long[64];
    private Node[] nodes = new Node[64];
    private int[] versions = new int[64];
    private int size;
    /** Nodes with inHeap == true (entries that may still be live). */
    private int live;

    /** Popped entry (valid until the next poll by the same caller; callers hold no reference across threads). */
    static final class Entry {
        Node node;
        long k1, k2, k3;
    }

    /** Enqueues {@code n} with the given key unless it already has a live entry (or force). */
    void push(Node n, long a, long b, long c, boolean force) {
        lock.lock();
        try {
            if (n.inHeap && !force) {
                return;
            }
            if (!n.inHeap) {
                live++;
            }
            n.inHeap = true;
            n.heapVersion++;
            if (size > 2 * live + 1024) {
                compact();
            }
            if (size == nodes.length) {
                int cap = size * 2;
                k1 = Arrays.copyOf(k1, cap);
                k2 = Arrays.copyOf(k2, cap);
                k3 = Arrays.copyOf(k3, cap);
                nodes = Arrays.copyOf(nodes, cap);
                versions = Arrays.copyOf(versions, cap);
            }
            int i = size++;
            set(i, a, b, c, n, n.heapVersion);
            siftUp(i);
        } finally {
            lock.unlock();
        }
    }

    /** Marks {@code n} as having no live entry (it was evicted). */
    void invalidate(Node n) {
        lock.lock();
        try {
            if (n.inHeap) {
                n.inHeap = false;
                live--;
            }
            n.heapVersion++;
        } finally {
            lock.unlock();
        }
    }

    /** Pops the smallest live entry into {@code out}; false when none is left. */
    boolean poll(Entry out) {
        lock.lock();
        try {
            while (size > 0) {
                Node n = nodes[0];
                int v = versions[0];
                long a = k1[0], b = k2[0], c = k3[0];
                removeTop();
                if (v != n.heapVersion || !n.inHeap) {
                    continue; // stale duplicate
                }
                n.inHeap = false;
                live--;
                out.node = n;
                out.k1 = a;
                out.k2 = b;
                out.k3 = c;
                return true;
            }
            return false;
        } finally {
            lock.unlock();
        }
    }

    int size() {
        lock.lock();
        try {
            return size;
        } finally {
            lock.unlock();
        }
    }

    /** Approximate bytes of the entry arrays. */
    long bytes() {
        return 16L * 5 + (long) nodes.length * (8 * 3 + 4 + 4);
    }

    private void removeTop() {
        int last = --size;
        if (last > 0) {
            set(0, k1[last], k2[last], k3[last], nodes[last], versions[last]);
            nodes[last] = null;
            siftDown(0);
        } else {
            nodes[0] = null;
        }
    }

    /** Drops dead entries and re-heapifies. */
    private void compact() {
        int w = 0;
        for (int r = 0; r < size; r++) {
            Node n = nodes[r];
            if (n.inHeap && versions[r] == n.heapVersion) {
                set(w++, k1[r], k2[r], k3[r], n, versions[r]);
            }
        }
        Arrays.fill(nodes, w, size, null);
        size = w;
        for (int i = (size >>> 1) - 1; i >= 0; i--) {
            siftDown(i);
        }
    }

    private void set(int i, long a, long b, long c, Node n, int v) {
        k1[i] = a;
        k2[i] = b;
        k3[i] = c;
        nodes[i] = n;
        versions[i] = v;
    }

    private boolean less(int i, int j) {
        if (k1[i] != k1[j]) {
            return k1[i] < k1[j];
        }
        if (k2[i] != k2[j]) {
            return k2[i] < k2[j];
        }
        return k3[i] < k3[j];
    }

    private void swap(int i, int j) {
        long t = k1[i]; k1[i] = k1[j]; k1[j] = t;
        t = k2[i]; k2[i] = k2[j]; k2[j] = t;
        t = k3[i]; k3[i] = k3[j]; k3[j] = t;
        Node n = nodes[i]; nodes[i] = nodes[j]; nodes[j] = n;
        int v = versions[i]; versions[i] = versions[j]; versions[j] = v;
    }

    private void siftUp(int i) {
        while (i > 0) {
            int p = (i - 1) >>> 1;
            if (!less(i, p)) {
                return;
            }
            swap(i, p);
            i = p;
        }
    }

    private void siftDown(int i) {
        while (true) {
            int l = 2 * i + 1;
            if (l >= size) {
                return;
            }
            int m = l + 1 < size && less(l + 1, l) ? l + 1 : l;
            if (!less(m, i)) {
                return;
            }
            swap(i, m);
            i = m;
        }
    }
}
