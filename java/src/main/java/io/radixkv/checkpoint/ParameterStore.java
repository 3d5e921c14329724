package io.radixkv.checkpoint;

import io.radixkv.kernels.BackendMemory;
import io.radixkv.platform.LargePages;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Named parameter blocks in off-heap memory (64-byte aligned slices of one slab, on huge pages
 * where {@link LargePages} maps it; zero-filled unless the caller overwrites everything), all
 * owned by one shared {@link Arena} that {@link #close()} frees. Aliased blocks ({@link ParamSpec#tied})
 * are the same segment as their target.
 */
public final class ParameterStore implements AutoCloseable {
    private static final long ALIGNMENT = 64;

    private final Arena arena; // null when the blocks live in a BackendMemory (freed with it)
    private final Map<String, ParamSpec> specs;
    private final Map<String, MemorySegment> blocks;
    private final long bytes;

    private ParameterStore(List<ParamSpec> params, boolean zeroed) {
        Map<String, ParamSpec> s = new LinkedHashMap<>();
        long total = 0;
        for (ParamSpec p : params) {
            if (s.putIfAbsent(p.name(), p) != null) {
                throw new IllegalArgumentException("block " + p.name() + " is declared twice");
            }
            if (p.tiedTo() != null) {
                ParamSpec t = s.get(p.tiedTo());
                if (t == null || t.tiedTo() != null) {
                    throw new IllegalArgumentException(p + ": its target must be declared earlier and not be an alias");
                }
            } else {
                total = Math.addExact(total, p.bytes());
            }
        }
        this.specs = Collections.unmodifiableMap(s);
        this.bytes = total;
        this.arena = Arena.ofShared();
        Map<String, MemorySegment> b = new LinkedHashMap<>();
        try {
            // One slab for every block, in declaration order (a layer's matrices in the order
            // decode reads them), so that blocks under 2 MiB and the tails of larger ones sit on
            // huge pages too: separate blocks left the small model's q/k/v and o projections and
            // every block's last partial 2 MiB on 4 KiB pages, and decode streamed its weights
            // 1.2x slower (2-core Zen 1, bf16, 1 thread).
            long slabBytes = 0;
            for (ParamSpec p : params) {
                if (p.tiedTo() == null) {
                    slabBytes = Math.addExact(Math.ceilDiv(slabBytes, ALIGNMENT) * ALIGNMENT, p.bytes());
                }
            }
            MemorySegment slab = slabBytes == 0 ? MemorySegment.NULL
                    : zeroed || LargePages.maps(slabBytes)
                            // a mapping is zeroed already and faulted in by its first writer
                            ? LargePages.allocate(arena, slabBytes, ALIGNMENT)
                            : UninitializedMemory.allocate(arena, slabBytes, ALIGNMENT);
            long offset = 0;
            for (ParamSpec p : params) {
                MemorySegment seg;
                if (p.tiedTo() != null) {
                    seg = b.get(p.tiedTo());
                } else {
                    offset = Math.ceilDiv(offset, ALIGNMENT) * ALIGNMENT;
                    seg = slab.asSlice(offset, p.bytes());
                    offset += p.bytes();
                }
                b.put(p.name(), seg);
            }
        } catch (RuntimeException | OutOfMemoryError e) {
            arena.close();
            throw e;
        }
        this.blocks = Collections.unmodifiableMap(b);
    }

    private ParameterStore(Map<String, ParamSpec> specs, Map<String, MemorySegment> blocks, long bytes) {
        this.arena = null;
        this.specs = specs;
        this.blocks = blocks;
        this.bytes = bytes;
    }

    /**
     * A copy of every block in {@code memory} (device memory for a GPU backend), aliases still
     * sharing their target's copy. The copy's blocks are freed with {@code memory}, not by its
     * {@link #close()}; this store stays as it was.
     */
    public ParameterStore copyTo(BackendMemory memory) {
        if (memory == null) {
            throw new IllegalArgumentException("memory must not be null");
        }
        Map<String, MemorySegment> b = new LinkedHashMap<>();
        for (ParamSpec p : specs.values()) {
            MemorySegment seg;
            if (p.tiedTo() != null) {
                seg = b.get(p.tiedTo());
            } else {
                MemorySegment src = blocks.get(p.name());
                seg = memory.allocate(src.byteSize());
                memory.copyFromHost(src, seg, src.byteSize());
            }
            b.put(p.name(), seg);
        }
        return new ParameterStore(specs, Collections.unmodifiableMap(b), bytes);
    }

    /** Allocates every block (aliases share their target's memory); blocks start zeroed. */
    public static ParameterStore allocate(List<ParamSpec> params) {
        return new ParameterStore(params, true);
    }

    /**
     * Allocates every block without zero-filling it, for a caller that writes every element
     * (a checkpoint load, random initialisation) before anything reads the store.
     */
    public static ParameterStore allocateUninitialized(List<ParamSpec> params) {
        return new ParameterStore(params, false);
    }

    /** The block named {@code name}. */
    public MemorySegment get(String name) {
        MemorySegment s = blocks.get(name);
        if (s == null) {
            throw new IllegalArgumentException("no parameter block '" + name + "'");
        }
        return s;
    }

    public ParamSpec spec(String name) {
        ParamSpec s = specs.get(name);
        if (s == null) {
            throw new IllegalArgumentException("no parameter block '" + name + "'");
        }
        return s;
    }

    public boolean contains(String name) {
        return specs.containsKey(name);
    }

    /** Every block in declaration order, aliases included. */
    public List<ParamSpec> specs() {
        return new ArrayList<>(specs.values());
    }

    /** Bytes allocated (aliases counted once). */
    public long bytes() {
        return bytes;
    }

    @Override
    public void close() {
        if (arena != null) {
            arena.close();
        }
    }
}
