package io.radixkv.engine;

import io.radixkv.model.SamplingParams;
import io.radixkv.model.TokenCounts;
import io.radixkv.structured.GrammarMatcher;
import java.util.function.IntConsumer;

/**
 * The engine's per-request state, attached to its {@link io.radixkv.sched.Sequence}.
 *
 * @param counts the sequence's token counts for the penalties (engine thread only), null where
 *     {@code params} has none
 * @param logprobs where its log-probabilities go; null when it wants none
 * @param matcher the request's position in its structured-output grammar, or null
 * @param samples the request's samples while they are still to be forked from this sequence
 *     (null for a request of one sample and for the forked samples themselves)
 */
record RequestState(RequestHandle handle, SamplingParams params, IntConsumer listener, TokenCounts counts,
                    RequestLogprobs logprobs, GrammarMatcher matcher, SampleGroup samples) {
    RequestState(RequestHandle handle, SamplingParams params, IntConsumer listener) {
        this(handle, params, listener, null, null, null, null);
    }
}
