package io.radixkv.cache;

/**
 * Which unlocked leaf is evicted first (SGLang's set). Every policy only ever evicts unlocked
 * leaves; parents that become unlocked leaves follow in the same call when more pages are needed.
 * Ties are broken by node creation order (older first; newer first for MRU and FILO). Each victim is
 * the unlocked leaf with the smallest key at the moment it is chosen; the keys are those of SGLang's
 * {@code evict_policy.py} (one small strategy per policy in this package).
 */
public enum EvictionPolicy {
    /** Least recently matched or inserted first (default). */
    LRU,
    /** Fewest hits first (a hit = the node lay on a match's path), then least recently used. */
    LFU,
    /** Oldest created first. */
    FIFO,
    /** Most recently used first. */
    MRU,
    /** Newest created first. */
    FILO,
    /** Lowest insert priority first, then least recently used. */
    PRIORITY
}
