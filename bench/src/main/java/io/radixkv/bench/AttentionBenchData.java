package io.radixkv.bench;

import io.radixkv.bindings.radixkv_h;
import io.radixkv.kernels.DType;
import io.radixkv.kernels.KvCacheView;
import io.radixkv.kernels.PageTableCsr;
import io.radixkv.kernels.PagedKvLayout;
import io.radixkv.kernels.cpu.BandwidthBaselines;
import io.radixkv.kernels.cpu.NativeLibrary;
import io.radixkv.paging.BlockAllocator;
import io.radixkv.paging.DecodeBatchLayout;
import io.radixkv.platform.LargePages;
import io.radixkv.platform.LastLevelCache;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.LongVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/**
 * Shared setup of the attention benchmarks: a paged K/V pool filled with finite, normal random
 * values of the cache dtype (no denormals, no NaN: they would distort timings), a page table
 * whose pages are shuffled across the pool (or laid out as the engine's allocator lays them out),
 * and the baselines measured in the same run: memory read bandwidth ({@code rkv_bench_read} where libradixkv_bench loads, else a Vector API stream over
 * the same threads) and FMA peak ({@code rkv_bench_fma_peak}, else Vector API FMA chains).
 */
final class AttentionBenchData implements AutoCloseable {
    final Arena arena = Arena.ofShared();
    final PagedKvLayout layout;
    final KvCacheView cache;
    final PageTableCsr table;
    final long[] lens;

    AttentionBenchData(DType dtype, int pageSize, int numKvHeads, int headDim, long[] lens, long seed) {
        this(dtype, pageSize, numKvHeads, headDim, lens, seed, "shuffled");
    }

    /**
     * {@code pageOrder}: where each sequence's pages lie in the pool. {@code shuffled}: a random
     * permutation; {@code ordered}: sequence after sequence, each in address order; {@code lifo}
     * and {@code runs}: as the engine's {@link BlockAllocator} hands them out to a batch whose
     * prompts (512 tokens each) were prefilled one after another and which then decodes together,
     * one page per sequence in turn, with plain LIFO placement (runs of 1 page: what concurrent
     * sequences got before placement kept them together) or with its default runs.
     */
    AttentionBenchData(DType dtype, int pageSize, int numKvHeads, int headDim, long[] lens, long seed,
            String pageOrder) {
        this.lens = lens.clone();
        int pages = 0;
        for (long len : lens) {
            pages += (int) ((len + pageSize - 1) / pageSize);
        }
        int[] ids = new int[pages];
        int poolPages = pageIds(pageOrder, lens, pageSize, seed, ids);
        layout = new PagedKvLayout(dtype, poolPages, pageSize, numKvHeads, headDim);
        // as the engine's KV pool (HostMemory): huge pages unless -Dradixkv.hugepages=false
        MemorySegment k = LargePages.allocate(arena, layout.poolBytes(), 4096);
        MemorySegment v = LargePages.allocate(arena, layout.poolBytes(), 4096);
        fillRandom(k, dtype, seed);
        fillRandom(v, dtype, seed + 1);
        float scale = dtype.isFp8() ? 0.25f : 1f;
        cache = new KvCacheView(k, v, layout, scale, scale);
        MemorySegment indptr = arena.allocate(4L * (lens.length + 1));
        MemorySegment indices = arena.allocate(Math.max(4, 4L * pages));
        MemorySegment last = arena.allocate(Math.max(4, 4L * lens.length));
        int pos = 0;
        for (int b = 0; b < lens.length; b++) {
            indptr.setAtIndex(ValueLayout.JAVA_INT, b, pos);
            int n = (int) ((lens[b] + pageSize - 1) / pageSize);
            for (int i = 0; i < n; i++) {
                indices.setAtIndex(ValueLayout.JAVA_INT, pos, ids[pos]);
                pos++;
            }
            last.setAtIndex(ValueLayout.JAVA_INT, b, n == 0 ? 1 : (int) (lens[b] - (long) (n - 1) * pageSize));
        }
        indptr.setAtIndex(ValueLayout.JAVA_INT, lens.length, pos);
        table = new PageTableCsr(indptr, indices, last, lens.length);
    }

    /** Fills {@code ids} (CSR order) by {@code pageOrder}; returns the pool's page count. */
    private static int pageIds(String pageOrder, long[] lens, int pageSize, long seed, int[] ids) {
        int pages = ids.length;
        switch (pageOrder) {
            case "ordered" -> {
                for (int i = 0; i < pages; i++) {
                    ids[i] = i;
                }
                return pages;
            }
            case "shuffled" -> {
                List<Integer> list = new ArrayList<>();
                for (int i = 0; i < pages; i++) {
                    list.add(i);
                }
                Collections.shuffle(list, new Random(seed));
                for (int i = 0; i < pages; i++) {
                    ids[i] = list.get(i);
                }
                return pages;
            }
            case "lifo", "runs" -> {
                // headroom of a run per sequence, as a pool that is not full to the last page has
                int poolPages = pages + lens.length * BlockAllocator.DEFAULT_RUN_PAGES;
                BlockAllocator alloc = new BlockAllocator(poolPages,
                        pageOrder.equals("lifo") ? 1 : BlockAllocator.DEFAULT_RUN_PAGES);
                System.arraycopy(DecodeBatchLayout.pageIds(alloc, pageSize, lens, 512), 0, ids, 0, pages);
                return poolPages;
            }
            default -> throw new IllegalArgumentException("pageOrder must be shuffled, ordered, lifo or runs, got "
                    + pageOrder);
        }
    }

    /** K plus V bytes of all sequences: what one decode step must read at least once. */
    long uniqueKvBytes() {
        long tokens = 0;
        for (long len : lens) {
            tokens += len;
        }
        return 2 * tokens * layout.tokenBytes();
    }

    /** Where the pool lives against this CPU's last-level cache (see {@link LastLevelCache#regime}). */
    String regime() {
        return LastLevelCache.regime(uniqueKvBytes()) + ", " + LastLevelCache.describe();
    }

    MemorySegment floats(long n, long seed) {
        MemorySegment s = arena.allocate(4 * n, 64);
        Random r = new Random(seed);
        for (long i = 0; i < n; i++) {
            s.setAtIndex(ValueLayout.JAVA_FLOAT, i, r.nextFloat() * 2 - 1);
        }
        return s;
    }

    /** Fills with a 1 MiB block of encoded random values, repeated (fast for GiB pools). */
    private static void fillRandom(MemorySegment s, DType dtype, long seed) {
        Random r = new Random(seed);
        int blockBytes = (int) Math.min(s.byteSize(), 1 << 20);
        MemorySegment block = Arena.ofAuto().allocate(blockBytes, 64);
        int n = blockBytes / dtype.bytes();
        for (int i = 0; i < n; i++) {
            float x = r.nextFloat() * 2 - 1;
            switch (dtype) {
                case F32 -> block.setAtIndex(ValueLayout.JAVA_FLOAT, i, x);
                case F16 -> block.setAtIndex(ValueLayout.JAVA_SHORT, i, Float.floatToFloat16(x));
                case BF16 -> block.setAtIndex(ValueLayout.JAVA_SHORT, i, (short) (Float.floatToRawIntBits(x) >>> 16));
                // normal codes only: exponent field 1..8 (e4m3) / 1..16 (e5m2), random sign and mantissa
                case FP8_E4M3 -> block.set(ValueLayout.JAVA_BYTE, i,
                        (byte) ((r.nextBoolean() ? 0x80 : 0) | ((1 + r.nextInt(8)) << 3) | r.nextInt(8)));
                case FP8_E5M2 -> block.set(ValueLayout.JAVA_BYTE, i,
                        (byte) ((r.nextBoolean() ? 0x80 : 0) | ((1 + r.nextInt(16)) << 2) | r.nextInt(4)));
            }
        }
        for (long off = 0; off < s.byteSize(); off += blockBytes) {
            MemorySegment.copy(block, 0, s, off, Math.min(blockBytes, s.byteSize() - off));
        }
    }

    // ---- baselines ----

    /** Whether libradixkv_bench (the native yardsticks) loads here. */
    private static final boolean NATIVE_BASELINES = benchLoads();

    private static boolean benchLoads() {
        try {
            NativeLibrary.loadBench();
            return true;
        } catch (UnsatisfiedLinkError e) {
            return false;
        }
    }

    static String readBaselineSource() {
        return NATIVE_BASELINES ? "rkv_bench_read" : "java-vector-stream";
    }

    /** Streams every byte of the segments once with `threads` threads; returns a checksum. */
    static double streamRead(ExecutorService pool, int threads, MemorySegment... segs) throws Exception {
        double sum = 0;
        if (NATIVE_BASELINES) {
            for (MemorySegment s : segs) {
                sum += BandwidthBaselines.read(s);
            }
            return sum;
        }
        for (MemorySegment s : segs) {
            long part = (s.byteSize() / threads) & ~63L;
            List<Future<Long>> fs = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                long from = t * part;
                long to = t == threads - 1 ? s.byteSize() & ~63L : from + part;
                fs.add(pool.submit(() -> streamSum(s, from, to)));
            }
            for (Future<Long> f : fs) {
                sum += f.get();
            }
        }
        return sum;
    }

    private static final VectorSpecies<Long> LS = LongVector.SPECIES_512;

    private static long streamSum(MemorySegment s, long from, long to) {
        LongVector a = LongVector.zero(LS);
        LongVector b = LongVector.zero(LS);
        for (long off = from; off + 128 <= to; off += 128) {
            a = a.add(LongVector.fromMemorySegment(LS, s, off, java.nio.ByteOrder.nativeOrder()));
            b = b.add(LongVector.fromMemorySegment(LS, s, off + 64, java.nio.ByteOrder.nativeOrder()));
        }
        return a.add(b).reduceLanes(VectorOperators.ADD);
    }

    /** True when libradixkv_bench (rkv_bench_fma_peak) loads here. */
    static boolean hasNativeFmaPeak() {
        return NATIVE_BASELINES;
    }

    /** Native FMA peak in GFLOP/s over `threads` threads (rkv_bench_fma_peak). */
    static double nativeFmaPeak(int threads, double seconds) {
        radixkv_h.rkv_set_num_threads(threads);
        return BandwidthBaselines.fmaPeakGflops(seconds);
    }

    static final int FMA_ITERS = 200_000;

    /**
     * Fallback FMA peak kernel: 8 independent chains of FMAs on the widest float vectors,
     * {@link #FMA_ITERS} iterations; returns a checksum. FLOPs = FMA_ITERS * 8 * lanes * 2.
     * Run it through JMH (warmed up, compiled) on each thread of the pool.
     */
    static double fmaChains() {
        VectorSpecies<Float> fs = FloatVector.SPECIES_PREFERRED;
        FloatVector m = FloatVector.broadcast(fs, 0.999f);
        FloatVector c = FloatVector.broadcast(fs, 1e-4f);
        FloatVector a0 = FloatVector.broadcast(fs, 1), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
        for (int i = 0; i < FMA_ITERS; i++) {
            a0 = a0.fma(m, c); a1 = a1.fma(m, c); a2 = a2.fma(m, c); a3 = a3.fma(m, c);
            a4 = a4.fma(m, c); a5 = a5.fma(m, c); a6 = a6.fma(m, c); a7 = a7.fma(m, c);
        }
        return a0.add(a1).add(a2).add(a3).add(a4).add(a5).add(a6).add(a7).reduceLanes(VectorOperators.ADD);
    }

    static double fmaChainFlops() {
        return FMA_ITERS * 8.0 * FloatVector.SPECIES_PREFERRED.length() * 2;
    }

    @Override
    public void close() {
        arena.close();
    }
}
