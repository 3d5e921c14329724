package io.radixkv.engine;

import io.radixkv.model.SamplingParams;
import java.util.function.IntConsumer;

/**
 * The engine's per-request state, attached to its {@link io.radixkv.sched.Sequence}.
 *
 * @param samples the request's samples while they are still to be forked from this sequence
 *     (null for a request of one sample and for the forked samples themselves)
 */
record RequestState(RequestHandle handle, SamplingParams params, IntConsumer listener, SampleGroup samples) {
    RequestState(RequestHandle handle, SamplingParams params, IntConsumer listener) {
        this(handle, params, listener, null);
    }
}
