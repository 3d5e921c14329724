package io.radixkv.bench;

import io.radixkv.bindings.radixkv_h;
import io.radixkv.kernels.AttentionKernels;
import io.radixkv.kernels.AttentionParams;
import io.radixkv.kernels.DType;
import io.radixkv.kernels.KernelBackend;
import io.radixkv.kernels.select.Backends;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
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
 * Decode attention effective bandwidth: unique K/V bytes of the batch ÷ time (the {@code bytes}
 * secondary result, bytes/s), next to {@code readBaseline}: streaming every byte of the same
 * K and V pools with the same number of threads, in the same run. Working sets of at least
 * twice the last-level cache measure memory, smaller ones (partly) cache (printed at setup as
 * "regime").
 *
 * <p>{@code impl}: native (libradixkv), java (plain-Java double-precision reference) or vector
 * (Java Vector API peer, single-threaded). 8 KV heads, page size 16, pages shuffled unless
 * {@code pages} says otherwise ({@code lifo} / {@code runs}: as the engine's allocator places a
 * batch decoding together, without / with its runs; {@code ordered}).
 *
 * <p>Example: {@code java -jar bench/target/benchmarks.jar AttentionDecodeBench -p dtype=f32,fp8
 * -p context=32768 -p batch=4 -p threads=1,2}
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 2, time = 1)
@Measurement(iterations = 3, time = 1)
@Fork(value = 1, jvmArgsAppend = {"--enable-native-access=ALL-UNNAMED", "--add-modules=jdk.incubator.vector",
        "-Xmx4g"})
public class AttentionDecodeBench {
    @Param({"native"})
    public String impl;
    @Param({"f32"})
    public String dtype;
    @Param({"1"})
    public int batch;
    @Param({"4096"})
    public int context;
    @Param({"128"})
    public int headDim;
    @Param({"4"})
    public int gqa;
    @Param({"1"})
    public int threads;
    /** Where the pages lie: shuffled, ordered, lifo or runs (see AttentionBenchData). */
    @Param({"shuffled"})
    public String pages;
    /** K/V pools on huge pages, as the engine maps them (false: base pages; see LargePages). */
    @Param({"true"})
    public String hugePages;

    static final int NUM_KV_HEADS = 8;

    private AttentionBenchData data;
    private KernelBackend backend;
    private AttentionKernels kernels;
    private VectorAttentionKernels vector;
    private MemorySegment q;
    private MemorySegment out;
    private MemorySegment lse;
    private AttentionParams params;
    private long bytesPerCall;
    private ExecutorService readPool;

    /** Bytes processed; JMH reports it as a rate (bytes/s) next to the op rate. */
    @AuxCounters(AuxCounters.Type.OPERATIONS)
    @State(Scope.Thread)
    public static class Bytes {
        public long bytes;

        @Setup(Level.Iteration)
        public void reset() {
            bytes = 0;
        }
    }

    @Setup(Level.Trial)
    public void setup() throws Exception {
        System.setProperty("radixkv.hugepages", hugePages);
        long[] lens = new long[batch];
        java.util.Arrays.fill(lens, context);
        data = new AttentionBenchData(DType.parse(dtype), 16, NUM_KV_HEADS, headDim, lens, 17, pages);
        int numQo = NUM_KV_HEADS * gqa;
        params = AttentionParams.of(numQo, headDim);
        long n = (long) batch * numQo * headDim;
        q = data.floats(n, 3);
        out = data.arena.allocate(4 * n, 64);
        lse = data.arena.allocate(4L * batch * numQo, 64);
        bytesPerCall = data.uniqueKvBytes();
        backend = Backends.create(impl.equals("java") ? "java" : "cpu");
        kernels = backend.attention();
        radixkv_h.rkv_set_num_threads(threads);
        readPool = Executors.newFixedThreadPool(threads);
        if (impl.equals("vector")) {
            vector = new VectorAttentionKernels();
            checkVectorAgainstNative();
        }
        System.out.printf("%n# decode %s: KV working set %d MiB (%s), read baseline: %s%n", dtype,
                bytesPerCall >> 20, data.regime(), AttentionBenchData.readBaselineSource());
        MachineLine.print();
    }

    /** The Vector API peer must agree with the native kernel before it is timed. */
    private void checkVectorAgainstNative() {
        MemorySegment ref = data.arena.allocate(out.byteSize(), 64);
        Backends.create("cpu").attention().decode(q, DType.F32, ref, DType.F32, MemorySegment.NULL, data.cache,
                data.table, params);
        vector.decode(q, out, null, data.cache, data.table, params);
        double maxErr = 0;
        for (long i = 0; i < out.byteSize() / 4; i++) {
            maxErr = Math.max(maxErr, Math.abs(ref.getAtIndex(ValueLayout.JAVA_FLOAT, i)
                    - out.getAtIndex(ValueLayout.JAVA_FLOAT, i)));
        }
        if (!(maxErr < 1e-3)) {
            throw new IllegalStateException("vector decode differs from native by " + maxErr);
        }
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        radixkv_h.rkv_set_num_threads(0);
        readPool.shutdown();
        backend.close();
        data.close();
    }

    @Benchmark
    public void decode(Bytes counter) {
        if (vector != null) {
            vector.decode(q, out, lse, data.cache, data.table, params);
        } else {
            kernels.decode(q, DType.F32, out, DType.F32, lse, data.cache, data.table, params);
        }
        counter.bytes += bytesPerCall;
    }

    private final SameWindowRatio interleaved = new SameWindowRatio();
    private long interleavedCalls;
    private long interleavedDecodeNanos;

    /**
     * One decode call, then the read baseline over the K and V pools, each timed: the yardstick
     * interleaved call by call with the kernel (a host whose bandwidth wanders between time windows
     * skews the separate {@code readBaseline} method); each iteration prints both and the ratio.
     */
    @Benchmark
    public void decodeThenRead(Bytes counter, Blackhole bh) throws Exception {
        long t0 = System.nanoTime();
        decode(counter);
        long t1 = System.nanoTime();
        bh.consume(AttentionBenchData.streamRead(readPool, threads, data.cache.kCache(), data.cache.vCache()));
        long t2 = System.nanoTime();
        interleaved.add(t1 - t0, bytesPerCall, t2 - t1, data.cache.kCache().byteSize() + data.cache.vCache().byteSize());
        interleavedCalls++;
        interleavedDecodeNanos += t1 - t0;
    }

    @TearDown(Level.Iteration)
    public void reportInterleaved() {
        if (interleavedCalls == 0) {
            return;
        }
        interleaved.reportAndReset(String.format("decode %s %d thread(s), %.1f calls/s", dtype, threads,
                interleavedCalls * 1e9 / interleavedDecodeNanos));
        interleavedCalls = 0;
        interleavedDecodeNanos = 0;
    }

    @Benchmark
    public void readBaseline(Bytes counter, Blackhole bh) throws Exception {
        bh.consume(AttentionBenchData.streamRead(readPool, threads, data.cache.kCache(), data.cache.vCache()));
        counter.bytes += data.cache.kCache().byteSize() + data.cache.vCache().byteSize();
    }
}
