/**
 * The serving engine: request lifecycle, engine thread, streaming, stats.
 *
 * <p>{@link io.radixkv.engine.Engine#start} builds everything from an
 * {@link io.radixkv.engine.EngineConfig} (model preset or checkpoint, KV pool, prefix cache,
 * scheduler limits) and starts one engine thread that owns the scheduler, the pages, the
 * cache and the kernels. {@link io.radixkv.engine.Engine#submit} (thread-safe) returns a
 * {@link io.radixkv.engine.RequestHandle}: a future of the
 * {@link io.radixkv.engine.RequestResult}, cancellation, and an optional per-token listener
 * called on the engine thread. {@link io.radixkv.engine.Engine#snapshot} gives engine-wide
 * counters.
 */
package io.radixkv.engine;
