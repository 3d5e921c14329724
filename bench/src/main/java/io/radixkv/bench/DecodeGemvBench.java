package io.radixkv.bench;

import io.radixkv.bindings.radixkv_h;
import io.radixkv.kernels.DType;
import io.radixkv.kernels.DenseKernels;
import io.radixkv.kernels.cpu.BandwidthBaselines;
import io.radixkv.kernels.cpu.CpuDenseKernels;
import io.radixkv.platform.LargePages;
import io.radixkv.platform.LastLevelCache;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.AuxCounters;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.infra.Blackhole;

/**
 * The dense layer of decode batches (m = 1, 2, 4, 8, 16 rows) at the memory limit: {@code rkv_linear}
 * on the small / seed-model gate_up shape (n = 8192, k = 3072; {@code -p k=14336} for long rows),
 * f32, bf16 and f16 weights,
 * 1 and 2 threads. Every call streams its weights from memory: the calls take their matrices
 * (48 MiB half-precision, 96 MiB f32) in rotation from enough copies that between two uses of
 * one matrix at least twice the last-level cache is read (32 MiB on the Zen 5 host, 300 MiB on
 * the Intel host: two matrices had fit in the latter, and on the former a read baseline that
 * followed a non-temporal kernel still found a third of its matrix in the L3). Secondary
 * scores: {@code gbs}, weight GB/s, next to {@code readBaseline}'s {@code gbs} (rkv_bench_read
 * over the same bytes with the same threads, same run): the ratio is the target (≥ 0.85);
 * {@code gflop}, GFLOP/s, next to {@code fmaPeak}'s (large m is bound by the FMA units, not by
 * memory). On a host whose bandwidth wanders between time windows,
 * {@code linearThenRead} is the figure to quote: every invocation runs the layer and then
 * rkv_bench_read over the next matrix of the rotation, timing both, and each iteration prints
 * one line with the two bandwidths and their ratio from the same seconds.
 * {@code linearCeilingRead} adds the ceiling: rkv_bench_read_gemv, the weight stream with exactly
 * the layer's arithmetic and nothing else, without and with software prefetches.
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@State(Scope.Benchmark)
public class DecodeGemvBench {
    /** Weight bytes moved and GFLOP done, reported by JMH as rates. */
    @AuxCounters(AuxCounters.Type.OPERATIONS)
    @State(Scope.Thread)
    public static class Counters {
        public double gbs;
        public double gflop;

        @Setup(Level.Iteration)
        public void reset() {
            gbs = 0;
            gflop = 0;
        }
    }

    /** Weight elements per matrix (n x k): 8192 x 3072 at the default k. */
    private static final long ELEMENTS = 8192L * 3072;

    @Param({"1", "2", "4", "8", "16"})
    public int m;

    /**
     * Row length. 3072: the gate_up shape; 14336: a long-row down projection (Llama 3.1 8B), where
     * x no longer fits in L1 beside the weight stream. n = 8192 * 3072 / k keeps the bytes.
     */
    @Param({"3072"})
    public long k;

    private long n;

    @Param({"f32", "bf16", "f16"})
    public String weights;

    @Param({"1", "2"})
    public int threads;

    /**
     * Weight layout: {@code rows} or {@code packed} ({@link DenseLayerSetup#applyLayout}).
     */
    @Param({"rows"})
    public String layout;
    /** Weights on huge pages, as the engine maps them (false: base pages; see LargePages). */
    @Param({"true"})
    public String hugePages;

    private boolean packed;

    private final DenseKernels dense = new CpuDenseKernels();
    private DType dtype;
    private Arena arena;
    private MemorySegment x;
    private MemorySegment y;
    private MemorySegment[] w;
    private int next;
    private final SameWindowRatio interleaved = new SameWindowRatio();
    private final SameWindowRatio ceiling = new SameWindowRatio();
    private final SameWindowRatio ceilingPrefetched = new SameWindowRatio();

    @Setup(Level.Trial)
    public void setup() {
        System.setProperty("radixkv.hugepages", hugePages);
        dtype = DType.parse(weights);
        arena = Arena.ofShared();
        n = ELEMENTS / k;
        x = DenseLayerSetup.random(arena, m * k, DType.F32, 1);
        w = new MemorySegment[rotation(n * k * dtype.bytes(), LastLevelCache.bytes())];
        w[0] = DenseLayerSetup.random(arena, n * k, dtype, 2);
        for (int i = 1; i < w.length; i++) {
            w[i] = LargePages.allocate(arena, w[0].byteSize(), 64);
            w[i].copyFrom(w[0]);
        }
        y = arena.allocate(4L * m * n, 64);
        packed = DenseLayerSetup.applyLayout(layout, dense, dtype, n, k, w);
        MachineLine.print();
        System.out.printf("# weights: %d matrices of %d MiB in rotation; %s%n", w.length,
                w[0].byteSize() >> 20, LastLevelCache.describe());
    }

    /**
     * How many matrices of {@code bytes} to rotate through so that between two uses of one, at
     * least twice {@code llc} of other matrices is read with plain loads (every other call of
     * linearThenRead is a read), and at least four.
     */
    static int rotation(long bytes, long llc) {
        return (int) Math.max(4, 2 * Math.ceilDiv(2 * llc, bytes) + 2);
    }

    private void layer(MemorySegment ws) {
        DenseLayerSetup.linear(dense, packed, x, ws, dtype, y, m, n, k);
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        arena.close();
    }

    private MemorySegment nextWeights() {
        next = (next + 1) % w.length;
        return w[next];
    }

    @Benchmark
    public void linear(Counters c) {
        radixkv_h.rkv_set_num_threads(threads);
        MemorySegment ws = nextWeights();
        layer(ws);
        count(c, ws.byteSize());
    }

    /** rkv_bench_read over the same weight bytes with the same threads: the read bandwidth. */
    @Benchmark
    public void readBaseline(Counters c, Blackhole bh) {
        radixkv_h.rkv_set_num_threads(threads);
        MemorySegment ws = nextWeights();
        bh.consume(BandwidthBaselines.read(ws));
        c.gbs += ws.byteSize() / 1e9;
    }

    /**
     * The layer, then rkv_bench_read over the next weight matrix of the rotation (same bytes, same
     * threads), each timed: the read baseline interleaved call by call with the kernel it is the
     * yardstick for.
     */
    @Benchmark
    public void linearThenRead(Counters c, Blackhole bh) {
        radixkv_h.rkv_set_num_threads(threads);
        MemorySegment ws = nextWeights();
        long linear = nanos(() -> layer(ws));
        long read = nanos(() -> bh.consume(BandwidthBaselines.read(nextWeights())));
        interleaved.add(linear, ws.byteSize(), read, ws.byteSize());
        count(c, ws.byteSize());
    }

    private static long nanos(Runnable r) {
        long t0 = System.nanoTime();
        r.run();
        return System.nanoTime() - t0;
    }

    private void count(Counters c, long bytes) {
        c.gbs += bytes / 1e9;
        c.gflop += 2.0 * m * n * k / 1e9;
    }

    /** The software prefetch distance of the second ceiling stream (the GEMV's own for m <= 2). */
    private static final long CEILING_PREFETCH_BYTES = 8192;

    /**
     * As {@link #linearThenRead}, with two {@code rkv_bench_read_gemv} streams between the two:
     * the same weight bytes streamed with exactly the layer's multiply-adds for m rows (x in
     * registers), once without and once with software prefetches 8 KiB ahead; the faster is the
     * most the layer can reach on this CPU. Prints two more lines per iteration, each stream against
     * read in the same seconds; linear / read over the better ceiling / read is how far the kernel
     * is from it.
     */
    @Benchmark
    public void linearCeilingRead(Counters c, Blackhole bh) {
        radixkv_h.rkv_set_num_threads(threads);
        MemorySegment ws = nextWeights();
        long linear = nanos(() -> layer(ws));
        long plain = nanos(() -> bh.consume(BandwidthBaselines.readGemv(nextWeights(), dtype, m, 0)));
        long prefetched = nanos(() -> bh.consume(BandwidthBaselines.readGemv(nextWeights(), dtype, m,
                CEILING_PREFETCH_BYTES)));
        long read = nanos(() -> bh.consume(BandwidthBaselines.read(nextWeights())));
        long bytes = ws.byteSize();
        interleaved.add(linear, bytes, read, bytes);
        ceiling.add(plain, bytes, read, bytes);
        ceilingPrefetched.add(prefetched, bytes, read, bytes);
        count(c, bytes);
    }

    @TearDown(Level.Iteration)
    public void reportInterleaved() {
        String shape = String.format("m=%d k=%d %s %s %d thread(s)", m, k, weights, layout, threads);
        interleaved.reportAndReset(shape + ": linear");
        ceiling.reportAndReset(shape + ": ceiling (read_gemv)");
        ceilingPrefetched.reportAndReset(shape + ": ceiling (read_gemv, prefetch 8 KiB)");
    }

    /** rkv_bench_fma_peak for 50 ms per call with the same threads: the FMA peak (GFLOP/s). */
    @Benchmark
    public void fmaPeak(Counters c) {
        radixkv_h.rkv_set_num_threads(threads);
        double seconds = 0.05;
        c.gflop += BandwidthBaselines.fmaPeakGflops(seconds) * seconds;
    }
}
