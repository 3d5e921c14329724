package io.radixkv.kernels;

import java.util.Objects;
import java.util.Optional;

/**
 * What every backend is: a name, the memory its kernels operate on, and its KV-cache and
 * attention kernels and its sampler if it has one; closing it frees the memory. Subclasses add only how they are built and
 * their dense kernels.
 */
public abstract class BackendBase implements KernelBackend {
    private final String name;
    private final BackendMemory memory;
    private final KvCacheKernels kv;
    private final AttentionKernels attention;
    private final Optional<SamplingKernels> sampling;

    /** {@code sampling} null: the backend has no sampling kernel (callers sample in Java). */
    protected BackendBase(String name, BackendMemory memory, KvCacheKernels kv, AttentionKernels attention,
                          SamplingKernels sampling) {
        this.name = Objects.requireNonNull(name, "name");
        this.memory = Objects.requireNonNull(memory, "memory");
        this.kv = Objects.requireNonNull(kv, "kv");
        this.attention = Objects.requireNonNull(attention, "attention");
        this.sampling = Optional.ofNullable(sampling);
    }

    @Override
    public final String name() {
        return name;
    }

    @Override
    public final KvCacheKernels kv() {
        return kv;
    }

    @Override
    public final AttentionKernels attention() {
        return attention;
    }

    @Override
    public final Optional<SamplingKernels> sampling() {
        return sampling;
    }

    @Override
    public final BackendMemory memory() {
        return memory;
    }

    @Override
    public final boolean deviceMemory() {
        return memory.isDevice();
    }

    @Override
    public final void close() {
        memory.close();
    }
}
