package io.radixkv.lora;

import io.radixkv.kernels.LoraFactors;
import io.radixkv.model.ModelConfig;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The adapters the kernels can run at once: {@code maxLoras} slots, each a buffer of f32 factors
 * sized for every projection at {@code maxRank} (allocated on the slot's first use, from an arena
 * this object owns). An adapter is copied into a slot when a request first needs it and stays
 * there while any admitted request uses it; a slot no request uses is reused for another adapter
 * least recently released first (LRU). Confined to the engine thread.
 */
public final class LoraSlots implements AutoCloseable {
    private final ModelConfig model;
    private final int maxRank;
    private final Arena arena = Arena.ofShared();
    private final LoraAdapter[] adapter;
    private final MemorySegment[] buffer;
    private final int[] refs;
    private final long[] lastUsed;
    /** [layer][module][slot]: the slot's factors of that projection, or null. */
    private final LoraFactors[][][] factors;
    private long tick;
    private long loads;
    private long evictions;

    public LoraSlots(ModelConfig model, int maxLoras, int maxRank) {
        if (maxLoras < 1) {
            throw new IllegalArgumentException("maxLoras must be positive, got " + maxLoras);
        }
        if (maxRank < 1) {
            throw new IllegalArgumentException("maxLoraRank must be positive, got " + maxRank);
        }
        this.model = model;
        this.maxRank = maxRank;
        this.adapter = new LoraAdapter[maxLoras];
        this.buffer = new MemorySegment[maxLoras];
        this.refs = new int[maxLoras];
        this.lastUsed = new long[maxLoras];
        this.factors = new LoraFactors[model.layers()][LoraModule.values().length][maxLoras];
    }

    public int maxLoras() {
        return adapter.length;
    }

    public int maxRank() {
        return maxRank;
    }

    /** The slot holding {@code a}, or -1. */
    public int slotOf(LoraAdapter a) {
        for (int s = 0; s < adapter.length; s++) {
            if (adapter[s] == a) {
                return s;
            }
        }
        return -1;
    }

    /** True when {@code a} holds a slot or one can be given to it now (empty, or used by no request). */
    public boolean canAcquire(LoraAdapter a) {
        return slotOf(a) >= 0 || victim() >= 0;
    }

    /**
     * One more request uses {@code a}: copies it into a slot first when it holds none (an empty
     * slot, else the least recently released one no request uses).
     *
     * @return its slot
     * @throws IllegalStateException when every slot is in use ({@link #canAcquire} said false)
     */
    public int acquire(LoraAdapter a) {
        int s = slotOf(a);
        if (s < 0) {
            s = victim();
            if (s < 0) {
                throw new IllegalStateException("all " + adapter.length + " LoRA slots are in use");
            }
            if (adapter[s] != null) {
                evictions++;
            }
            fill(s, a);
        }
        refs[s]++;
        return s;
    }

    /** A request that used {@code a} left the running set. */
    public void release(LoraAdapter a) {
        int s = slotOf(a);
        if (s < 0 || refs[s] == 0) {
            throw new IllegalStateException(a + " is not held by a request");
        }
        refs[s]--;
        lastUsed[s] = ++tick;
    }

    /** Empties {@code a}'s slot (it is being unloaded); no request may use it. */
    public void forget(LoraAdapter a) {
        int s = slotOf(a);
        if (s < 0) {
            return;
        }
        if (refs[s] > 0) {
            throw new IllegalStateException(a + " is still used by " + refs[s] + " running requests");
        }
        clear(s);
    }

    /** The slots' factors of one projection of one layer (null where a slot does not adapt it), by slot. */
    public List<LoraFactors> factors(int layer, LoraModule m) {
        return Arrays.asList(factors[layer][m.ordinal()]);
    }

    /** The adapters in the slots (null for an empty slot), by slot. */
    public List<LoraAdapter> adapters() {
        return new ArrayList<>(Arrays.asList(adapter));
    }

    /** Adapters copied into a slot so far. */
    public long loads() {
        return loads;
    }

    /** Adapters replaced in their slot by another so far. */
    public long evictions() {
        return evictions;
    }

    private int victim() {
        int best = -1;
        for (int s = 0; s < adapter.length; s++) {
            if (adapter[s] == null) {
                return s;
            }
            if (refs[s] == 0 && (best < 0 || lastUsed[s] < lastUsed[best])) {
                best = s;
            }
        }
        return best;
    }

    private void clear(int s) {
        adapter[s] = null;
        refs[s] = 0;
        for (LoraFactors[][] layer : factors) {
            for (LoraFactors[] module : layer) {
                module[s] = null;
            }
        }
    }

    private void fill(int s, LoraAdapter a) {
        if (a.maxRank() > maxRank) {
            throw new IllegalArgumentException(a + " has rank " + a.maxRank() + " over the slots' " + maxRank);
        }
        clear(s);
        if (buffer[s] == null) {
            buffer[s] = arena.allocate(4L * slotFloats(), 64);
        }
        long base = 0;
        LoraModule[] modules = LoraModule.values();
        for (int l = 0; l < model.layers(); l++) {
            for (LoraModule m : modules) {
                long in = m.inFeatures(model);
                long out = m.outFeatures(model);
                for (LoraAdapter.Part p : a.parts()) {
                    if (p.layer() == l && p.module() == m) {
                        MemorySegment dstA = buffer[s].asSlice(4 * base, 4L * p.rank() * in);
                        MemorySegment dstB = buffer[s].asSlice(4 * (base + maxRank * in), 4L * out * p.rank());
                        dstA.copyFrom(a.block(p.a()));
                        dstB.copyFrom(a.block(p.b()));
                        factors[l][m.ordinal()][s] = new LoraFactors(dstA, dstB, p.rank(), p.scale());
                    }
                }
                base += maxRank * (in + out);
            }
        }
        adapter[s] = a;
        loads++;
    }

    /** Floats of one slot: every projection of every layer at the maximum rank. */
    private long slotFloats() {
        long n = 0;
        for (LoraModule m : LoraModule.values()) {
            n += (long) maxRank * (m.inFeatures(model) + m.outFeatures(model));
        }
        return n * model.layers();
    }

    /** Frees the slot buffers; the engine thread has stopped. */
    @Override
    public void close() {
        arena.close();
    }
}
