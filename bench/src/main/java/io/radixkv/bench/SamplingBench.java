package io.radixkv.bench;

import io.radixkv.kernels.cpu.CpuSampling;
import io.radixkv.model.Sampler;
import io.radixkv.model.SamplingParams;
import io.radixkv.model.TokenCounts;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
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
 * same rows without a cut, the baseline of the same run. {@code sampling} picks the rows'
 * parameters: {@code temperature} (T 0.8 and topP), {@code greedy} (the argmax), {@code all}
 * (T 0.8 and topP with top-k 50, min-p 0.05, repetition 1.1, presence and frequency 0.5, 16 logit
 * biases, two stop ids masked by min-tokens, and token counts of 1024 prompt + 256 output tokens).
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

    @Param({"temperature"})
    public String sampling;

    private Arena arena;
    private MemorySegment logits;
    private float[][] heapRows;
    private SamplingParams[] params;
    private long[] steps;
    private TokenCounts[] counts;
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
        counts = new TokenCounts[rows];
        for (int r = 0; r < rows; r++) {
            params[r] = switch (sampling) {
                case "greedy" -> SamplingParams.greedy(16);
                case "temperature" -> new SamplingParams(16, 0.8f, topP, r, List.of());
                case "all" -> allParameters(rnd, r);
                default -> throw new IllegalArgumentException("sampling " + sampling);
            };
            if (params[r].penalizes()) {
                int[] prompt = new int[1024];
                for (int i = 0; i < prompt.length; i++) {
                    prompt[i] = rnd.nextInt(vocab);
                }
                counts[r] = new TokenCounts(prompt);
                for (int i = 0; i < 256; i++) {
                    counts[r].add(rnd.nextInt(vocab));
                }
            }
        }
    }

    private SamplingParams allParameters(SplittableRandom rnd, int r) {
        Map<Integer, Float> bias = new HashMap<>();
        while (bias.size() < 16) {
            bias.put(rnd.nextInt(vocab), (float) rnd.nextInt(-5, 6));
        }
        int tokens = 1 << 30; // min-tokens masks the stop ids at every step
        return new SamplingParams(tokens, 0.8f, topP, r, List.of(1, 2), 50, 0.05f, 1.1f, 0.5f, 0.5f, bias, tokens);
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
            for (int t : Sampler.sampleRows(CpuSampling.instance(), logits, vocab, params, steps, counts)) {
                acc += t;
            }
        } else {
            for (int r = 0; r < rows; r++) {
                acc += Sampler.sample(heapRows[r], params[r], step, counts[r]);
            }
        }
        return acc;
    }
}
