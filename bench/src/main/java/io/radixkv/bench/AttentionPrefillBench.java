package io.radixkv.bench;

import io.radixkv.bindings.radixkv_h;
import io.radixkv.kernels.AttentionKernels;
import io.radixkv.kernels.AttentionParams;
import io.radixkv.kernels.DType;
import io.radixkv.kernels.KernelBackend;
import io.radixkv.kernels.select.Backends;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.AuxCounters;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;
import org.openjdk.jmh.infra.Blackhole;

/**
 * Append-prefill attention throughput: the {@code flops} secondary result is useful FLOP/s
 * (4 * head_dim per visible (query, key) pair per query head: q.k and p.v), printed next to the
 * FMA peak of the same threads measured at setup. {@code prefix} cached tokens precede
 * {@code qLen} new ones (prefix 0 = full prefill). impl: native or java (reference).
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 2, time = 1)
@Measurement(iterations = 3, time = 1)
@Fork(value = 1, jvmArgsAppend = {"--enable-native-access=ALL-UNNAMED", "--add-modules=jdk.incubator.vector",
        "-Xmx4g"})
public class AttentionPrefillBench {
    @Param({"native"})
    public String impl;
    @Param({"bf16"})
    public String dtype;
    @Param({"512"})
    public int qLen;
    @Param({"0"})
    public int prefix;
    @Param({"128"})
    public int headDim;
    @Param({"4"})
    public int gqa;
    @Param({"1"})
    public int threads;

    static final int NUM_KV_HEADS = 8;

    private AttentionBenchData data;
    private KernelBackend backend;
    private AttentionKernels kernels;
    private MemorySegment q;
    private MemorySegment out;
    private MemorySegment qoIndptr;
    private AttentionParams params;
    private double flopsPerCall;
    private ExecutorService fmaPool;

    @AuxCounters(AuxCounters.Type.OPERATIONS)
    @State(Scope.Thread)
    public static class Flops {
        public double flops;

        @Setup(Level.Iteration)
        public void reset() {
            flops = 0;
        }
    }

    @Setup(Level.Trial)
    public void setup() throws Exception {
        long kvLen = (long) prefix + qLen;
        data = new AttentionBenchData(DType.parse(dtype), 16, NUM_KV_HEADS, headDim, new long[] {kvLen}, 23);
        int numQo = NUM_KV_HEADS * gqa;
        params = AttentionParams.of(numQo, headDim);
        long n = (long) qLen * numQo * headDim;
        q = data.floats(n, 5);
        out = data.arena.allocate(4 * n, 64);
        qoIndptr = data.arena.allocate(8);
        qoIndptr.setAtIndex(ValueLayout.JAVA_INT, 1, qLen);
        // query i sees prefix + i + 1 keys
        double pairs = (double) qLen * prefix + (double) qLen * (qLen + 1) / 2;
        flopsPerCall = 4.0 * headDim * numQo * pairs;
        backend = Backends.create(impl.equals("java") ? "java" : "cpu");
        kernels = backend.attention();
        radixkv_h.rkv_set_num_threads(threads);
        fmaPool = Executors.newFixedThreadPool(threads);
        String peak = AttentionBenchData.hasNativeFmaPeak()
                ? String.format("%.1f GFLOP/s (rkv_bench_fma_peak)", AttentionBenchData.nativeFmaPeak(threads, 0.5))
                : "see the fmaPeak benchmark (Vector API FMA chains)";
        System.out.printf("%n# prefill %s q=%d prefix=%d: %.3g FLOP per call; FMA peak (%d threads): %s%n",
                dtype, qLen, prefix, flopsPerCall, threads, peak);
        MachineLine.print();
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        radixkv_h.rkv_set_num_threads(0);
        fmaPool.shutdown();
        backend.close();
        data.close();
    }

    @Benchmark
    public void prefill(Flops counter) {
        kernels.appendPrefill(q, DType.F32, out, DType.F32, MemorySegment.NULL, qoIndptr, data.cache, data.table,
                MemorySegment.NULL, MemorySegment.NULL, params);
        counter.flops += flopsPerCall;
    }

    /** FMA peak of `threads` threads (Vector API chains on a pool), in the same run: flops/s. */
    @Benchmark
    public void fmaPeak(Flops counter, Blackhole bh) throws Exception {
        List<Future<Double>> fs = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            fs.add(fmaPool.submit(AttentionBenchData::fmaChains));
        }
        for (Future<Double> f : fs) {
            bh.consume(f.get());
        }
        counter.flops += threads * AttentionBenchData.fmaChainFlops();
    }
}
