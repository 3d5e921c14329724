package io.radixkv.bench;

import io.radixkv.kernels.DType;
import io.radixkv.kernels.DenseKernels;
import io.radixkv.kernels.cpu.BandwidthBaselines;
import io.radixkv.kernels.cpu.CpuDenseKernels;
import io.radixkv.model.ModelConfig;
import io.radixkv.model.ModelPresets;
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

/**
 * GEMM throughput of {@code rkv_linear} on the small preset's layer shapes, for m = 1, 16,
 * 256, 1024 token rows, f32, bf16 and f16 weights, row-major or packed ({@code -p layout=packed}:
 * {@code rkv_linear_packed}). The {@code gflop} secondary score of each
 * benchmark is GFLOP/s (2·m·n·k per call); {@code fmaPeak}'s {@code gflop} is the FMA peak of
 * the same threads measured in the same run (the yardstick: target ≥ 70% for large m).
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
public class GemmBench {

    /** GFLOP done, reported by JMH as a rate: GFLOP/s. */
    @AuxCounters(AuxCounters.Type.OPERATIONS)
    @State(Scope.Thread)
    public static class Flops {
        public double gflop;

        @Setup(Level.Iteration)
        public void reset() {
            gflop = 0;
        }
    }

    @State(Scope.Benchmark)
    public static class Shape {
        /** Layer of the small preset: qkv (n = q+2kv, k = hidden), o, gate_up, down, lm_head. */
        @Param({"qkv", "gate_up", "down"})
        public String layer;

        @Param({"1", "16", "256", "1024"})
        public int m;

        @Param({"f32", "bf16"})
        public String weights;

        /** Weight layout: {@code rows} or {@code packed} ({@link DenseLayerSetup#applyLayout}). */
        @Param({"rows"})
        public String layout;

        boolean packed;

        long n;
        long k;
        DType dtype;
        double gflopPerCall;
        final DenseKernels dense = new CpuDenseKernels();
        Arena arena;
        MemorySegment x;
        MemorySegment w;
        MemorySegment y;

        @Setup(Level.Trial)
        public void setup() {
            ModelConfig c = ModelPresets.small();
            switch (layer) {
                case "qkv" -> { n = c.qkvDim(); k = c.hidden(); }
                case "o" -> { n = c.hidden(); k = c.qDim(); }
                case "gate_up" -> { n = 2L * c.intermediate(); k = c.hidden(); }
                case "down" -> { n = c.hidden(); k = c.intermediate(); }
                case "lm_head" -> { n = c.vocab(); k = c.hidden(); }
                default -> throw new IllegalArgumentException(layer);
            }
            dtype = DType.parse(weights);
            gflopPerCall = 2.0 * m * n * k * 1e-9;
            arena = Arena.ofShared();
            x = DenseLayerSetup.random(arena, m * k, DType.F32, 1);
            w = DenseLayerSetup.random(arena, n * k, dtype, 2);
            y = arena.allocate(4L * m * n, 64);
            packed = DenseLayerSetup.applyLayout(layout, dense, dtype, n, k, w);
            MachineLine.print();
        }

        @TearDown(Level.Trial)
        public void tearDown() {
            arena.close();
        }
    }

    @Benchmark
    public void linear(Shape s, Flops f) {
        DenseLayerSetup.linear(s.dense, s.packed, s.x, s.w, s.dtype, s.y, s.m, s.n, s.k);
        f.gflop += s.gflopPerCall;
    }

    /** rkv_bench_fma_peak for 50 ms per call: its gflop rate is the threads' FMA peak. */
    @Benchmark
    public void fmaPeak(Flops f) {
        double seconds = 0.05;
        f.gflop += BandwidthBaselines.fmaPeakGflops(seconds) * seconds;
    }
}
