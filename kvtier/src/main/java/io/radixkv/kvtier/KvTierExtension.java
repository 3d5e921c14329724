package io.radixkv.kvtier;

import io.radixkv.cache.CacheListener;
import io.radixkv.cache.Namespace;
import io.radixkv.engine.EngineConfig;
import io.radixkv.engine.KvExtension;
import io.radixkv.engine.LoraIdentity;
import io.radixkv.model.ModelConfig;
import io.radixkv.paging.KvPool;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.Objects;
import java.util.function.Function;

/**
 * KV events for cache-aware routers and a shared KV tier on Redis, attached to an engine with
 * {@code Engine.start(config, extension)}. Both are off unless configured:
 *
 * <pre>{@code
 * try (KvTierExtension kv = KvTierExtension.builder()
 *         .kvEvents("tcp://*:5557").replay("tcp://*:5558")    // vLLM's ZMQ publisher + replay
 *         .kvTier("redis://127.0.0.1:6379")                     // shared tier
 *         .build();
 *      Engine engine = Engine.start(config, kv)) { ... }
 * }</pre>
 *
 * One instance serves one engine. It sees every page the radix cache takes or drops (on the
 * engine thread, see {@link CacheListener}), keeps each page's chained {@link BlockHasher hash},
 * queues {@code BlockStored} / {@code BlockRemoved} events and copies evicted pages to the tier;
 * neither ever blocks the engine thread (bounded queues, drop and count). Close it after the engine.
 */
public final class KvTierExtension implements KvExtension, CacheListener, AutoCloseable {
    private final Builder cfg;
    private final BlockHasher hasher;
    private final AdapterKeys adapters = new AdapterKeys();
    private PageHashes hashes;
    private KvEventPublisher events;
    private RedisKvTier tier;
    private String medium;

    private KvTierExtension(Builder b) {
        this.cfg = b;
        this.hasher = new BlockHasher(b.hashAlgorithm, b.hashSeed);
    }

    public static Builder builder() {
        return new Builder();
    }

    public BlockHasher hasher() {
        return hasher;
    }

    @Override
    public synchronized Hooks attach(EngineConfig config, ModelConfig model, KvPool pool) {
        if (hashes != null) {
            throw new IllegalStateException("a KvTierExtension serves one engine; this one is attached already");
        }
        hashes = new PageHashes(hasher, pool.pageSize());
        medium = cfg.medium != null ? cfg.medium : (pool.isDevice() ? "GPU" : "CPU");
        try {
            if (cfg.eventsEndpoint != null) {
                events = new KvEventPublisher(cfg.eventsEndpoint, cfg.replayEndpoint, cfg.topic, cfg.eventQueue,
                        cfg.replayBuffer, cfg.dataParallelRank);
                events.offer(new KvEvent.AllBlocksCleared()); // a (re)started replica holds nothing
            }
            if (cfg.tierUri != null) {
                PageFormat format = new PageFormat(fingerprint(config, model), config.kvDtype().toString(),
                        pool.pageSize(), pool.numLayers(), pool.layer(0).kScale(), pool.layer(0).vScale(),
                        pool.pageImageBytes());
                tier = new RedisKvTier(cfg.tierUri, cfg.tierTimeoutMillis, hasher, adapters, format, pool,
                        cfg.tierPrefix, cfg.ttlSeconds, cfg.budgetBytes, cfg.writeQueue, cfg.backoffMillis);
            }
        } catch (RuntimeException e) {
            close();
            throw e;
        }
        return new Hooks(this, tier);
    }

    @Override
    public void adapters(Function<String, LoraIdentity> lookup) {
        adapters.lookup(lookup);
    }

    /** What identifies "the same KV for the same tokens": model source, weights, architecture. */
    static byte[] fingerprint(EngineConfig config, ModelConfig model) {
        String id = config.model() + "|" + config.weightsSeed() + "|" + config.weightsDtype() + "|" + model;
        return BlockHasher.sha256(id.getBytes(StandardCharsets.UTF_8));
    }

    @Override
    public void pagesCached(Namespace ns, int parentPage, int[] pages, int[] kvKeys) {
        byte[][] h = hashes.cached(ns, parentPage, pages, kvKeys);
        if (h == null) {
            return;
        }
        if (events != null) {
            long[] ext = new long[h.length];
            for (int i = 0; i < h.length; i++) {
                ext[i] = BlockHasher.external(h[i]);
            }
            byte[] parent = parentPage < 0 ? null : hashes.of(parentPage);
            LoraIdentity adapter = adapters.of(ns);
            events.offer(new KvEvent.BlockStored(ext, parent == null ? null : BlockHasher.external(parent), kvKeys,
                    hashes.pageSize(), adapter == null ? null : adapter.id(), medium, ns == null ? null : ns.loraId()));
        }
        if (tier != null && cfg.writeOnCache) {
            writeToTier(ns, pages, h);
        }
    }

    private void writeToTier(Namespace ns, int[] pages, byte[][] blockHashes) {
        for (int i = 0; i < pages.length; i++) {
            byte[] key = blockHashes[i] == null ? null : adapters.tierHash(ns, blockHashes[i]);
            if (key != null) {
                tier.write(pages[i], key);
            }
        }
    }

    @Override
    public void pagesEvicted(Namespace ns, int[] pages) {
        byte[][] h = hashes.evicted(pages);
        int known = 0;
        for (byte[] x : h) {
            known += x == null ? 0 : 1;
        }
        if (known == 0) {
            return;
        }
        if (events != null) {
            long[] ext = new long[known];
            int j = 0;
            for (byte[] x : h) {
                if (x != null) {
                    ext[j++] = BlockHasher.external(x);
                }
            }
            events.offer(new KvEvent.BlockRemoved(ext, medium));
        }
        if (tier != null && !cfg.writeOnCache) {
            writeToTier(ns, pages, h);
        }
    }

    /** Pages whose hash is tracked now (the pages reported cached and not yet evicted). */
    public synchronized int trackedPages() {
        return hashes == null ? 0 : hashes.size();
    }

    /** Events dropped because the publisher's queue was full (0 without events). */
    public long eventsDropped() {
        return events == null ? 0 : events.dropped();
    }

    /** Event batches published so far (0 without events). */
    public long eventBatchesPublished() {
        return events == null ? 0 : events.published();
    }

    /** The tier's counters (all zero without a tier). */
    public KvTierStats tierStats() {
        return tier == null ? new KvTierStats(0, 0, 0, 0, 0, 0, 0, 0) : tier.stats();
    }

    /** Waits until queued tier writes were sent; false on timeout. */
    public boolean flushTier(long timeoutMillis) throws InterruptedException {
        return tier == null || tier.flush(timeoutMillis);
    }

    @Override
    public synchronized void close() {
        if (events != null) {
            events.close();
        }
        if (tier != null) {
            tier.close();
        }
    }

    /** Settings; everything is off unless set. */
    public static final class Builder {
        private String eventsEndpoint;
        private String replayEndpoint;
        private String topic = "kv-events";
        private String medium;
        private int dataParallelRank;
        private int eventQueue = 100_000;
        private int replayBuffer = 10_000;
        private String hashAlgorithm = "sha256_cbor";
        private String hashSeed = "0";
        private URI tierUri;
        private int tierTimeoutMillis = 200;
        private String tierPrefix = "radixkv:page:";
        private long ttlSeconds = 3600;
        private long budgetBytes = 1L << 30;
        private int writeQueue = 4096;
        private long backoffMillis = 1000;
        private boolean writeOnCache;

        /** PUB endpoint ({@code tcp://*:5557} binds, {@code tcp://host:port} connects, as in vLLM). */
        public Builder kvEvents(String endpoint) { eventsEndpoint = Objects.requireNonNull(endpoint); return this; }
        /** ROUTER endpoint for replay of missed batches (bound); none by default. */
        public Builder replay(String endpoint) { replayEndpoint = endpoint; return this; }
        public Builder topic(String v) { topic = Objects.requireNonNull(v); return this; }
        /** The events' {@code medium}; default GPU for a device pool, CPU otherwise. */
        public Builder medium(String v) { medium = v; return this; }
        public Builder dataParallelRank(int v) { dataParallelRank = v; return this; }
        /** Bounded event queue: events beyond it are dropped and counted. */
        public Builder eventQueue(int v) { eventQueue = positive("eventQueue", v); return this; }
        public Builder replayBuffer(int v) { replayBuffer = positive("replayBuffer", v); return this; }
        /** vLLM's {@code --prefix-caching-hash-algo}: only {@code sha256_cbor}. */
        public Builder hashAlgorithm(String v) { hashAlgorithm = v; return this; }
        /** vLLM's {@code PYTHONHASHSEED}: replicas and routers must share it. */
        public Builder hashSeed(String v) { hashSeed = Objects.requireNonNull(v); return this; }
        /** The shared tier, {@code redis://HOST:PORT}. */
        public Builder kvTier(String uri) { tierUri = URI.create(uri); return this; }
        public Builder tierTimeoutMillis(int v) { tierTimeoutMillis = positive("tierTimeoutMillis", v); return this; }
        public Builder tierKeyPrefix(String v) { tierPrefix = Objects.requireNonNull(v); return this; }
        public Builder ttlSeconds(long v) { ttlSeconds = positive("ttlSeconds", v); return this; }
        /** Bytes this replica may write per TTL window. */
        public Builder budgetBytes(long v) { budgetBytes = positive("budgetBytes", v); return this; }
        public Builder writeQueue(int v) { writeQueue = positive("writeQueue", v); return this; }
        /** After a Redis error, skip the tier this long (a dead server costs one timeout). */
        public Builder backoffMillis(long v) { backoffMillis = v; return this; }
        /** Also write pages when they are first cached, not only when evicted. */
        public Builder writeOnCache(boolean v) { writeOnCache = v; return this; }

        public KvTierExtension build() {
            return new KvTierExtension(this);
        }

        private static int positive(String name, int v) {
            if (v <= 0) {
                throw new IllegalArgumentException(name + " must be positive, got " + v);
            }
            return v;
        }

        private static long positive(String name, long v) {
            if (v <= 0) {
                throw new IllegalArgumentException(name + " must be positive, got " + v);
            }
            return v;
        }
    }
}
