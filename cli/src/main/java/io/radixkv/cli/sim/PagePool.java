package io.radixkv.cli.sim;

/**
 * The simulator's page pool: a free list over page ids {@code [0, capacity)} with
 * double-free detection. Page 0 is handed out first, so runs are reproducible.
 */
final class PagePool {
    private final int[] freeList;
    private final boolean[] isFree;
    private int freeCount;

    PagePool(int capacity) {
        if (capacity < 1) {
            throw new IllegalArgumentException("capacity must be >= 1, got " + capacity);
        }
        freeList = new int[capacity];
        isFree = new boolean[capacity];
        for (int i = 0; i < capacity; i++) {
            freeList[i] = capacity - 1 - i; // stack: page 0 on top
            isFree[i] = true;
        }
        freeCount = capacity;
    }

    int free() {
        return freeCount;
    }

    int capacity() {
        return freeList.length;
    }

    int allocate() {
        if (freeCount == 0) {
            throw new IllegalStateException("page pool exhausted (" + freeList.length + " pages)");
        }
        int p = freeList[--freeCount];
        isFree[p] = false;
        return p;
    }

    void free(int page) {
        if (page < 0 || page >= freeList.length) {
            throw new IllegalArgumentException("page " + page + " is outside [0, " + freeList.length + ")");
        }
        if (isFree[page]) {
            throw new IllegalStateException("page " + page + " freed twice");
        }
        isFree[page] = true;
        freeList[freeCount++] = page;
    }
}
