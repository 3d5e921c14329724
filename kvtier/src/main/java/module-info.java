/**
 * KV events in vLLM's schema for cache-aware routers (ZeroMQ + msgpack) and a KV tier shared by
 * replicas on Redis, attached to a {@code io.radixkv} engine as a
 * {@link io.radixkv.engine.KvExtension}.
 */
module io.radixkv.kvtier {
    requires io.radixkv;
    requires org.apache.logging.log4j;
    requires org.zeromq.jeromq;
    requires msgpack.core;
    requires com.fasterxml.jackson.dataformat.cbor;
    requires com.fasterxml.jackson.core;
    requires redis.clients.jedis;

    exports io.radixkv.kvtier;
}
