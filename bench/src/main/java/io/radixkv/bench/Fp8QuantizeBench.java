package io.radixkv.bench;

import io.radixkv.kernels.DType;
import io.radixkv.kernels.KernelBackend;
import io.radixkv.kernels.select.Backends;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

/**
 * FP8 quantize (f32 -> fp8, scale 0.37: a true division) and dequantize, libradixkv ("cpu")
 * vs the plain-Java reference ("java"). The native run streams 128 Mi floats ("auto": 512 MiB
 * read, 128 MiB written, or more where twice the last-level cache is more; see
 * {@link WorkingSet}); the Java reference, ~100x slower, runs on 1/16 of that to keep
 * iterations short (its speed is compute-bound, not memory-bound). Read {@code gbs}.
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@State(Scope.Benchmark)
public class Fp8QuantizeBench {
    @Param({"cpu", "java"})
    public String impl;

    @Param({"fp8_e4m3", "fp8_e5m2"})
    public String fp8;

    @Param({"auto"})
    public String elements;

    private KernelBackend backend;
    private DType dtype;
    private long n;
    private MemorySegment src;
    private MemorySegment codes;
    private MemorySegment back;

    @Setup
    public void setUp() {
        backend = Backends.create(impl);
        dtype = DType.parse(fp8);
        long all = WorkingSet.units("elements", elements, 1L << 27, 5, 64);
        n = impl.equals("java") ? all / 16 : all;
        WorkingSet.print("Fp8QuantizeBench", n + " elements (f32 and " + fp8 + ")", 5 * n);
        src = backend.memory().allocate(4 * n);
        codes = backend.memory().allocate(n);
        back = backend.memory().allocate(4 * n);
        SplittableRandom rnd = new SplittableRandom(1);
        for (long i = 0; i < n; i++) {
            src.setAtIndex(ValueLayout.JAVA_FLOAT, i, (float) (rnd.nextDouble(-1, 1) * 200));
        }
    }

    @TearDown
    public void tearDown() {
        backend.close();
    }

    @Benchmark
    public void quantize(MemoryBaselineBench.Traffic t) {
        backend.kv().fp8Quantize(src, codes, n, dtype, 0.37f);
        t.add(5 * n);
    }

    @Benchmark
    public void dequantize(MemoryBaselineBench.Traffic t) {
        backend.kv().fp8Dequantize(codes, back, n, dtype, 0.37f);
        t.add(5 * n);
    }
}
