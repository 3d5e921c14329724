package io.radixkv.kernels;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;
import java.util.List;

/**
 * Argument validation shared by every {@link KvCacheKernels} implementation. It runs before
 * any memory is written, so a rejected call leaves the pools unchanged, and names the bad
 * value. Index arrays (slot mapping, block mapping) are read from host segments: the CUDA
 * backend copies device indices to the host first.
 */
public final class KvCacheChecks {
    private KvCacheChecks() {}

    /** Shapes, dtypes and segment sizes of a scatter (not the slot values: see {@link #slots}). */
    public static void reshapeAndCacheShapes(MemorySegment k, MemorySegment v, DType srcDtype, MemorySegment slotMapping,
                                      long numTokens, KvCacheView cache) {
        Checks.requireDtype("srcDtype", srcDtype, DType.F32, DType.F16, DType.BF16);
        if (cache == null) {
            throw new IllegalArgumentException("cache must not be null");
        }
        Checks.requireNonNegative("numTokens", numTokens);
        long elems = Math.multiplyExact(numTokens, cache.layout().tokenElements());
        Checks.requireElements("k", k, elems, srcDtype);
        Checks.requireElements("v", v, elems, srcDtype);
        Checks.requireBytes("slotMapping", slotMapping, Math.multiplyExact(numTokens, 8L));
    }

    /**
     * Every slot is padding (negative) or in [0, numPages*pageSize), and no slot appears
     * twice (two tokens writing one row would race). {@code hostSlots} holds the int64 slots.
     */
    public static void slots(MemorySegment hostSlots, long numTokens, PagedKvLayout layout) {
        long limit = layout.slots();
        int used = 0;
        long[] seen = new long[Math.toIntExact(numTokens)];
        for (long t = 0; t < numTokens; t++) {
            long s = hostSlots.getAtIndex(ValueLayout.JAVA_LONG_UNALIGNED, t);
            if (s >= limit) {
                throw new IllegalArgumentException("slot_mapping[" + t + "] = slot " + s + " is out of range: the cache has "
                        + layout.numPages() + " pages * " + layout.pageSize() + " = " + limit + " slots");
            }
            if (s >= 0) {
                seen[used++] = s;
            }
        }
        Arrays.sort(seen, 0, used);
        for (int i = 1; i < used; i++) {
            if (seen[i] == seen[i - 1]) {
                throw new IllegalArgumentException("slot " + seen[i] + " appears twice in slot_mapping");
            }
        }
    }

    public static void fp8(String what, MemorySegment src, long srcBytes, MemorySegment dst, long dstBytes, long n,
                    DType fp8Dtype, float scale) {
        Checks.requireDtype("fp8Dtype", fp8Dtype, DType.FP8_E4M3, DType.FP8_E5M2);
        Checks.requireNonNegative("n", n);
        Checks.requireScale("scale", scale);
        Checks.requireBytes(what + " src", src, Math.multiplyExact(n, srcBytes));
        Checks.requireBytes(what + " dst", dst, Math.multiplyExact(n, dstBytes));
    }

    public static void convert(MemorySegment src, DType srcDtype, MemorySegment dst, DType dstDtype, long n, float scale) {
        Checks.requireDtype("srcDtype", srcDtype);
        Checks.requireDtype("dstDtype", dstDtype);
        Checks.requireNonNegative("n", n);
        Checks.requireScale("scale", scale);
        if (!srcDtype.isFp8() && !dstDtype.isFp8() && scale != 1f) {
            throw new IllegalArgumentException("scale must be 1 for " + srcDtype + " -> " + dstDtype + ", got " + scale);
        }
        Checks.requireElements("src", src, n, srcDtype);
        Checks.requireElements("dst", dst, n, dstDtype);
    }

    /** All layers share one layout; returns it. */
    public static PagedKvLayout layers(List<KvCacheView> layers) {
        if (layers == null || layers.isEmpty()) {
            throw new IllegalArgumentException("layers must not be null or empty");
        }
        PagedKvLayout layout = null;
        for (int l = 0; l < layers.size(); l++) {
            KvCacheView c = layers.get(l);
            if (c == null) {
                throw new IllegalArgumentException("layers[" + l + "] is null");
            }
            if (layout == null) {
                layout = c.layout();
            } else if (!layout.equals(c.layout())) {
                throw new IllegalArgumentException("layers[" + l + "] has layout " + c.layout() + " but layers[0] has " + layout);
            }
        }
        return layout;
    }

    /**
     * Block mapping (host int64 pairs src, dst): ids in [0, numPages), destinations distinct
     * and never a source (the result would otherwise depend on the copy order).
     */
    public static void blockMapping(MemorySegment hostMapping, long numPairs, PagedKvLayout layout) {
        Checks.requireNonNegative("numPairs", numPairs);
        Checks.requireBytes("blockMapping", hostMapping, Math.multiplyExact(numPairs, 16L));
        long pages = layout.numPages();
        long n = 2 * numPairs;
        for (long i = 0; i < n; i++) {
            long id = hostMapping.getAtIndex(ValueLayout.JAVA_LONG_UNALIGNED, i);
            if (id < 0 || id >= pages) {
                throw new IllegalArgumentException("blockMapping[" + i + "] = page " + id + " is out of range [0, " + pages + ")");
            }
        }
        long[] src = new long[Math.toIntExact(numPairs)];
        long[] dst = new long[src.length];
        for (int p = 0; p < src.length; p++) {
            src[p] = hostMapping.getAtIndex(ValueLayout.JAVA_LONG_UNALIGNED, 2L * p);
            dst[p] = hostMapping.getAtIndex(ValueLayout.JAVA_LONG_UNALIGNED, 2L * p + 1);
        }
        long[] sortedSrc = src.clone();
        Arrays.sort(sortedSrc);
        long[] sortedDst = dst.clone();
        Arrays.sort(sortedDst);
        for (int p = 1; p < sortedDst.length; p++) {
            if (sortedDst[p] == sortedDst[p - 1]) {
                throw new IllegalArgumentException("destination page " + sortedDst[p] + " appears twice in blockMapping");
            }
        }
        for (long d : dst) {
            if (Arrays.binarySearch(sortedSrc, d) >= 0) {
                throw new IllegalArgumentException("destination page " + d + " is also a source in blockMapping");
            }
        }
    }
}
