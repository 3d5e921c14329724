package io.radixkv.engine;

import io.radixkv.model.SamplingParams;
import io.radixkv.structured.GrammarMatcher;
import java.util.function.IntConsumer;

/**
 * The engine's per-request state, attached to its {@link io.radixkv.sched.Sequence}.
 *
 * @param matcher the request's position in its structured-output grammar, or null
 */
record RequestState(RequestHandle handle, SamplingParams params, IntConsumer listener, GrammarMatcher matcher) {}
