package io.radixkv.kernels;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;

/**
 * One layer's paged KV cache: K and V pools of the given layout (host memory for the CPU
 * backend, device memory for CUDA) and the per-tensor FP8 scales (stored = real / scale;
 * 1 for non-FP8 caches).
 */
public record KvCacheView(MemorySegment kCache, MemorySegment vCache, PagedKvLayout layout, float kScale, float vScale) {
    public KvCacheView {
        if (layout == null) {
            throw new IllegalArgumentException("layout must not be null");
        }
        Checks.requireBytes("kCache", kCache, layout.poolBytes());
        Checks.requireBytes("vCache", vCache, layout.poolBytes());
        Checks.requireScale("kScale", kScale);
        Checks.requireScale("vScale", vScale);
        if (!layout.cacheDtype().isFp8() && (kScale != 1f || vScale != 1f)) {
            throw new IllegalArgumentException("kScale/vScale must be 1 for a " + layout.cacheDtype() + " cache");
        }
    }

    /**
     * An array of the layers' K (or V) pool addresses, as {@code rkv_copy_blocks} and its CUDA
     * twin take them ({@code void* const*}), allocated in {@code arena}.
     */
    public static MemorySegment poolAddresses(Arena arena, List<KvCacheView> layers, boolean keys) {
        MemorySegment out = arena.allocate(ValueLayout.ADDRESS, layers.size());
        for (int i = 0; i < layers.size(); i++) {
            out.setAtIndex(ValueLayout.ADDRESS, i, keys ? layers.get(i).kCache() : layers.get(i).vCache());
        }
        return out;
    }

    public static KvCacheView of(MemorySegment k, MemorySegment v, PagedKvLayout layout) {
        return new KvCacheView(k, v, layout, 1f, 1f);
    }
}
