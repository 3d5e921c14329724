/**
 * Continuous-batching scheduler with prefix-aware admission and chunked prefill.
 *
 * <p>{@link io.radixkv.sched.Scheduler} decides, every step, what is retired, admitted,
 * preempted and computed; {@link io.radixkv.sched.KvManager} assembles each sequence's pages
 * from the prefix cache ({@link io.radixkv.sched.PrefixStore}, the radix cache behind
 * {@link io.radixkv.sched.RadixPrefixStore}) and the page pool, keeping exactly one cache
 * lock per sequence and never writing into a cache-owned page. Everything here is confined to
 * the engine thread.
 */
package io.radixkv.sched;
