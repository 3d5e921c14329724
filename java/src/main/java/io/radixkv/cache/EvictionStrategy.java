package io.radixkv.cache;

/**
 * The eviction priority of a node under one {@link EvictionPolicy}, smaller evicted first: the shape
 * of SGLang's {@code evict_policy.py}, where each strategy's {@code get_priority(node)} returns a key
 * (a tuple there; up to three longs compared lexicographically here, so the heap stores no objects).
 * The last component is the node id, which makes keys total: ties go to the older node, or to the
 * newer one where the policy prefers new nodes (MRU, FILO).
 *
 * <p>Callers hold the node's tree lock.
 */
sealed interface EvictionStrategy {

    long primary(Node n);

    long secondary(Node n);

    default long tertiary(Node n) {
        return 0;
    }

    /**
     * True when a node's key never decreases (access times and hit counts only grow, creation time
     * and id never change, priority is only raised). A heap entry taken earlier then underestimates
     * the current key, so it may be re-keyed lazily when it surfaces. False (MRU): an access lowers
     * the key, so the entry of an evictable leaf must be replaced whenever its key changes and
     * whenever the node becomes an evictable leaf again.
     */
    default boolean keysOnlyGrow() {
        return true;
    }

    static EvictionStrategy of(EvictionPolicy policy) {
        return switch (policy) {
            case LRU -> new Lru();
            case LFU -> new Lfu();
            case FIFO -> new Fifo();
            case MRU -> new Mru();
            case FILO -> new Filo();
            case PRIORITY -> new Priority();
        };
    }

    /** {@code last_access_time}. */
    record Lru() implements EvictionStrategy {
        @Override
        public long primary(Node n) {
            return n.lastAccess;
        }

        @Override
        public long secondary(Node n) {
            return n.id;
        }
    }

    /** {@code (hit_count, last_access_time)}. */
    record Lfu() implements EvictionStrategy {
        @Override
        public long primary(Node n) {
            return n.hits;
        }

        @Override
        public long secondary(Node n) {
            return n.lastAccess;
        }

        @Override
        public long tertiary(Node n) {
            return n.id;
        }
    }

    /** {@code creation_time}. */
    record Fifo() implements EvictionStrategy {
        @Override
        public long primary(Node n) {
            return n.created;
        }

        @Override
        public long secondary(Node n) {
            return n.id;
        }
    }

    /** {@code -last_access_time}. */
    record Mru() implements EvictionStrategy {
        @Override
        public long primary(Node n) {
            return -n.lastAccess;
        }

        @Override
        public long secondary(Node n) {
            return -n.id;
        }

        @Override
        public boolean keysOnlyGrow() {
            return false;
        }
    }

    /** {@code -creation_time}: constant per node. */
    record Filo() implements EvictionStrategy {
        @Override
        public long primary(Node n) {
            return -n.created;
        }

        @Override
        public long secondary(Node n) {
            return -n.id;
        }
    }

    /** {@code (priority, last_access_time)}. */
    record Priority() implements EvictionStrategy {
        @Override
        public long primary(Node n) {
            return n.priority;
        }

        @Override
        public long secondary(Node n) {
            return n.lastAccess;
        }

        @Override
        public long tertiary(Node n) {
            return n.id;
        }
    }
}
