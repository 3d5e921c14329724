package io.radixkv.engine;

import io.radixkv.model.SamplingParams;
import java.util.function.IntConsumer;

/** The engine's per-request state, attached to its {@link io.radixkv.sched.Sequence}. */
record RequestState(RequestHandle handle, SamplingParams params, IntConsumer listener) {}
