package io.radixkv.engine;

import io.radixkv.model.SamplingParams;
import java.util.function.IntConsumer;

/**
 * The engine's per-request state, attached to its {@link io.radixkv.sched.Sequence}.
 *
 * @param logprobs where its log-probabilities go; null when it wants none
 */
record RequestState(RequestHandle handle, SamplingParams params, IntConsumer listener, RequestLogprobs logprobs) {
    RequestState(RequestHandle handle, SamplingParams params, IntConsumer listener) {
        this(handle, params, listener, null);
    }
}
