package io.radixkv.bench;

import io.radixkv.kernels.cpu.CpuSampling;
import io.radixkv.model.Sampler;
import io.radixkv.model.SamplingParams;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;
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
import org.openjdk.jmh.annotations.Warmup;

/**
 * Sampling the rows of a decode step ({@code rows} x {@code vocab} logits, operations = steps):
 * {@code native} is Sampler.sampleRows on native logits (rkv_sample, the rows in parallel on the
 * kernels' threads), {@code java} the same rows through Sampler's double-precision Java path, in
 * the same run. Logits are Gaussian with standard deviation {@code spread}: 0.3 is a flat row
 * (most of the vocabulary in a top-p 0.9 nucleus: the cut walks p's bits), 3 a flat-ish one (a
 * nucleus of about a third of the vocabulary), 8 a peaked one (a few dozen). {@code topP} 1 is the
 * same rows without a cut, the baseline of the same run.
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@State(Scope.Benchmark)
@Warmup(iterations = 2, time = 1)
public class SamplingBench {
    @Param({"native", "java"})
    public String impl;

    @Param({"64"})
    public int rows;

    @Param({"32000", "128256"})
    public int vocab;

    @Param({"1", "0.9"})
    public float topP;

    @Param({"8"})
    public float spread;

    private Arena arena;
    private MemorySegment logits;
    private float[][] heapRows;
    private SamplingParams[] params;
    private long[] steps;
    private long step;

    @Setup
    public void setUp() {
        MachineLine.print();
        arena = Arena.ofShared();
        logits = arena.allocate((long) rows * vocab * 4, 64);
        heapRows = new float[rows][vocab];
        SplittableRandom rnd = new SplittableRandom(5);
        for (int r = 0; r < rows; r++) {
            for (int i = 0; i < vocab; i++) {
                float v = (float) (rnd.nextGaussian() * spread);
                heapRows[r][i] = v;
                logits.setAtIndex(ValueLayout.JAVA_FLOAT, (long) r * vocab + i, v);
            }
        }
        params = new SamplingParams[rows];
        steps = new long[rows];
        for (int r = 0; r < rows; r++) {
            params[r] = new SamplingParams(16, 0.8f, topP, r, List.of());
        }
    }

    @TearDown
    public void tearDown() {
        arena.close();
    }

    @Benchmark
    public int sampleStep() {
        step++;
        int acc = 0;
        if (impl.equals("native")) {
            java.util.Arrays.fill(steps, step);
            for (int t : Sampler.sampleRows(CpuSampling.instance(), logits, vocab, params, steps)) {
                acc += t;
            }
        } else {
            for (int r = 0; r < rows; r++) {
                acc += Sampler.sample(heapRows[r], params[r], step);
            }
        }
        return acc;
    }
}
