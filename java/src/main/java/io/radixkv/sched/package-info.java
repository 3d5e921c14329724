/** Continuous-batching scheduler with prefix-aware admission and chunked prefill. */
package io.radixkv.sched;
