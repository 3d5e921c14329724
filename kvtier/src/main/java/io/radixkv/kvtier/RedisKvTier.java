package io.radixkv.kvtier;

import io.radixkv.cache.Namespace;
import io.radixkv.paging.KvPool;
import io.radixkv.sched.ExternalKvTier;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.URI;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.JedisPooled;
import redis.clients.jedis.params.SetParams;

/**
 * A KV tier shared by replicas through Redis (or Valkey): page images keyed by
 * {@code <prefix><hex tier hash>} ({@link AdapterKeys#tierHash}: the chained block hash, combined
 * with the adapter's content hash for a LoRA adapter's page), each with a {@link PageFormat} header.
 *
 * <ul>
 *   <li>Writes: the engine thread copies an evicted (or newly cached) page out of the pool and
 *       queues it; a writer thread SETs it with a TTL. A full queue drops the page (counted), and a
 *       byte budget per TTL window bounds what this replica writes; the server's own
 *       {@code maxmemory} + an LRU policy bounds the store as a whole.</li>
 *   <li>Reads ({@link #fetch}): one MGET of the following pages' keys; the longest run of entries
 *       the header accepts is returned. Any Redis error is a miss, and the tier then stays quiet for
 *       {@code backoffMillis} so a dead server costs one timeout, not one per request.</li>
 * </ul>
 */
final class RedisKvTier implements ExternalKvTier, AutoCloseable {
    private static final Logger LOG = LogManager.getLogger(RedisKvTier.class);

    private record Write(byte[] key, byte[] value) {}

    private final JedisPooled redis;
    private final BlockHasher hasher;
    private final AdapterKeys adapters;
    private final PageFormat format;
    private final KvPool pool;
    private final int pageSize;
    private final String prefix;
    private final long ttlSeconds;
    private final long budgetBytes;
    private final long backoffMillis;
    private final BlockingQueue<Write> writes;
    private final Thread writer;
    private final AtomicLong pending = new AtomicLong();
    private volatile boolean running = true;
    private volatile long quietUntil;

    private final AtomicLong pagesWritten = new AtomicLong();
    private final AtomicLong bytesWritten = new AtomicLong();
    private final AtomicLong writesDropped = new AtomicLong();
    private final AtomicLong pagesFetched = new AtomicLong();
    private final AtomicLong bytesFetched = new AtomicLong();
    private final AtomicLong rejected = new AtomicLong();
    private final AtomicLong errors = new AtomicLong();
    private final AtomicLong fetchNanos = new AtomicLong();
    private long windowStart = System.nanoTime();
    private long windowBytes;

    RedisKvTier(URI uri, int timeoutMillis, BlockHasher hasher, AdapterKeys adapters, PageFormat format, KvPool pool,
                String prefix, long ttlSeconds, long budgetBytes, int queueCapacity, long backoffMillis) {
        if (!"redis".equals(uri.getScheme()) || uri.getHost() == null || uri.getPort() <= 0) {
            throw new IllegalArgumentException("KV tier must be redis://HOST:PORT, got " + uri);
        }
        this.redis = new JedisPooled(new HostAndPort(uri.getHost(), uri.getPort()),
                DefaultJedisClientConfig.builder().connectionTimeoutMillis(timeoutMillis)
                        .socketTimeoutMillis(timeoutMillis).build());
        this.hasher = hasher;
        this.adapters = adapters;
        this.format = format;
        this.pool = pool;
        this.pageSize = pool.pageSize();
        this.prefix = prefix;
        this.ttlSeconds = ttlSeconds;
        this.budgetBytes = budgetBytes;
        this.backoffMillis = backoffMillis;
        this.writes = new ArrayBlockingQueue<>(queueCapacity);
        this.writer = Thread.ofPlatform().name("radixkv-kv-tier-writer").daemon().unstarted(this::writeLoop);
        writer.start();
    }

    /** Copies cached page {@code page} (tier hash {@code hash}) out of the pool and queues its write. Engine thread. */
    void write(int page, byte[] hash) {
        long now = System.nanoTime();
        if (now - windowStart > TimeUnit.SECONDS.toNanos(ttlSeconds)) {
            windowStart = now;
            windowBytes = 0;
        }
        long size = PageFormat.HEADER_BYTES + format.payloadBytes();
        if (windowBytes + size > budgetBytes || writes.remainingCapacity() == 0) {
            writesDropped.incrementAndGet();
            return;
        }
        byte[] payload = readPage(page);
        if (writes.offer(new Write(key(hash), format.encode(hash, payload)))) {
            windowBytes += size;
            pending.incrementAndGet();
        } else {
            writesDropped.incrementAndGet();
        }
    }

    private byte[] readPage(int page) {
        if (!pool.isDevice()) {
            byte[] b = new byte[(int) pool.pageImageBytes()];
            pool.readPage(page, MemorySegment.ofArray(b));
            return b;
        }
        try (Arena a = Arena.ofConfined()) { // device pools copy through native host memory
            MemorySegment s = a.allocate(pool.pageImageBytes(), 64);
            pool.readPage(page, s);
            return s.toArray(ValueLayout.JAVA_BYTE);
        }
    }

    @Override
    public List<MemorySegment> fetch(Namespace ns, int[] tokens, int fromPage, int maxPages) {
        if (maxPages <= 0 || System.currentTimeMillis() < quietUntil) {
            return List.of();
        }
        long t0 = System.nanoTime();
        try {
            return doFetch(ns, tokens, fromPage, maxPages);
        } finally {
            fetchNanos.addAndGet(System.nanoTime() - t0);
        }
    }

    private List<MemorySegment> doFetch(Namespace ns, int[] tokens, int fromPage, int maxPages) {
        byte[][] chain = hasher.chain(ns, tokens, pageSize, fromPage + maxPages);
        byte[][] tierHashes = new byte[maxPages][];
        byte[][] keys = new byte[maxPages][];
        for (int i = 0; i < maxPages; i++) {
            tierHashes[i] = adapters.tierHash(ns, chain[fromPage + i]);
            if (tierHashes[i] == null) {
                return List.of(); // an adapter whose content is unknown: its pages are never shared
            }
            keys[i] = key(tierHashes[i]);
        }
        List<byte[]> values;
        try {
            values = redis.mget(keys);
        } catch (RuntimeException e) {
            errors.incrementAndGet();
            quietUntil = System.currentTimeMillis() + backoffMillis;
            LOG.warn("KV tier fetch failed (prefilling instead): {}", e.toString());
            return List.of();
        }
        List<MemorySegment> out = new ArrayList<>();
        for (int i = 0; i < maxPages; i++) {
            byte[] v = values.get(i);
            if (v == null) {
                break;
            }
            if (!format.accepts(v, tierHashes[i])) {
                rejected.incrementAndGet();
                break;
            }
            MemorySegment page = pool.isDevice() ? Arena.ofAuto().allocate(v.length - PageFormat.HEADER_BYTES, 64)
                    : MemorySegment.ofArray(new byte[v.length - PageFormat.HEADER_BYTES]);
            MemorySegment.copy(v, PageFormat.HEADER_BYTES, page, ValueLayout.JAVA_BYTE, 0,
                    v.length - PageFormat.HEADER_BYTES);
            out.add(page);
            bytesFetched.addAndGet(v.length);
        }
        pagesFetched.addAndGet(out.size());
        return out;
    }

    private byte[] key(byte[] hash) {
        return (prefix + HexFormat.of().formatHex(hash)).getBytes(java.nio.charset.StandardCharsets.US_ASCII);
    }

    private void writeLoop() {
        while (running || !writes.isEmpty()) {
            Write w;
            try {
                w = writes.poll(50, TimeUnit.MILLISECONDS);
            } catch (InterruptedException e) {
                break;
            }
            if (w == null) {
                continue;
            }
            try {
                if (System.currentTimeMillis() >= quietUntil) {
                    redis.set(w.key(), w.value(), SetParams.setParams().ex(ttlSeconds));
                    pagesWritten.incrementAndGet();
                    bytesWritten.addAndGet(w.value().length);
                } else {
                    writesDropped.incrementAndGet();
                }
            } catch (RuntimeException e) {
                errors.incrementAndGet();
                writesDropped.incrementAndGet();
                quietUntil = System.currentTimeMillis() + backoffMillis;
                LOG.warn("KV tier write failed (page dropped): {}", e.toString());
            } finally {
                pending.decrementAndGet();
            }
        }
    }

    /** Waits until every queued write was sent (or dropped); false on timeout. */
    boolean flush(long timeoutMillis) throws InterruptedException {
        long end = System.currentTimeMillis() + timeoutMillis;
        while (pending.get() > 0) {
            if (System.currentTimeMillis() > end) {
                return false;
            }
            Thread.sleep(5);
        }
        return true;
    }

    KvTierStats stats() {
        return new KvTierStats(pagesWritten.get(), bytesWritten.get(), writesDropped.get(), pagesFetched.get(),
                bytesFetched.get(), rejected.get(), errors.get(), fetchNanos.get());
    }

    @Override
    public void close() {
        running = false;
        try {
            writer.join(2000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        redis.close();
    }
}
