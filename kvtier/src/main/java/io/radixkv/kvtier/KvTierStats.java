package io.radixkv.kvtier;

/**
 * Counters of the shared KV tier.
 *
 * @param pagesWritten  pages stored in Redis
 * @param bytesWritten  bytes stored (headers included)
 * @param writesDropped pages not stored: queue full, byte budget spent, or Redis unreachable
 * @param pagesFetched  pages loaded from Redis into the pool
 * @param bytesFetched  bytes loaded
 * @param rejected      entries refused by the header check (foreign model or layout, corrupt, truncated)
 * @param errors        Redis errors (each one a miss or a dropped write, never a failure)
 * @param fetchNanos    engine-thread time spent in fetches (MGET, checks, copies out of the reply)
 */
public record KvTierStats(long pagesWritten, long bytesWritten, long writesDropped, long pagesFetched,
                          long bytesFetched, long rejected, long errors, long fetchNanos) {}
