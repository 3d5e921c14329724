package io.radixkv.engine;

import io.radixkv.cache.CacheListener;
import io.radixkv.model.ModelConfig;
import io.radixkv.paging.KvPool;
import io.radixkv.sched.ExternalKvTier;
import java.util.function.Function;

/**
 * Connects the engine's KV memory to consumers outside the process (module {@code
 * io.radixkv.kvtier}: KV events for routers, a shared KV tier). {@link Engine#start(EngineConfig,
 * KvExtension)} calls {@link #attach} once, after the KV pool exists and before the engine thread
 * runs; without an extension (or with the prefix cache off) the engine behaves exactly as before.
 * The caller owns the extension and closes whatever it holds after the engine is closed.
 */
@FunctionalInterface
public interface KvExtension {

    /** What {@link #attach} hands back; either part may be null. */
    record Hooks(CacheListener listener, ExternalKvTier tier) {}

    /**
     * @param pool the engine's KV pool ({@link KvPool#readPage} / {@link KvPool#writePage} move page
     *             images; call them only from the listener or the tier, i.e. on the engine thread)
     */
    Hooks attach(EngineConfig config, ModelConfig model, KvPool pool);

    /**
     * Called once, after {@link #attach} and before the engine thread runs, with the engine's
     * adapter lookup: the identity of the loaded LoRA adapter a namespace's {@code loraId} names, or
     * null. The lookup is safe on any thread. While a page cached under an adapter's name is in the
     * cache, the lookup gives the adapter that computed it: unloading an adapter evicts its pages
     * before the name can be loaded again.
     */
    default void adapters(Function<String, LoraIdentity> lookup) {}
}
