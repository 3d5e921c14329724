package io.radixkv.bench;

import io.radixkv.kernels.cpu.BandwidthBaselines;
import io.radixkv.platform.LargePages;
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
 * Memory-bandwidth baselines measured in the same run as the kernel benchmarks: a streaming
 * read of every 64-byte line (rkv_bench_read) and a parallel memcpy (rkv_bench_copy), on
 * libradixkv's OpenMP threads. Each buffer is {@code mib} MiB; "auto": 512, or twice the
 * last-level cache where that is more (see {@link WorkingSet}). Read {@code gbs} (GB/s of
 * traffic: bytes read + bytes written).
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@State(Scope.Benchmark)
public class MemoryBaselineBench {
    /** GB moved per second: the benchmark adds its bytes (read + written) / 1e9 per call. */
    @AuxCounters(AuxCounters.Type.OPERATIONS)
    @State(Scope.Thread)
    public static class Traffic {
        public double gbs;

        @Setup(Level.Iteration)
        public void reset() {
            gbs = 0;
        }

        public void add(long bytes) {
            gbs += bytes / 1e9;
        }
    }

    @Param({"auto"})
    public String mib;

    private Arena arena;
    private MemorySegment src;
    private MemorySegment dst;

    @Setup
    public void setUp() {
        arena = Arena.ofShared();
        long bytes = WorkingSet.units("mib", mib, 512, 1L << 20, 1) << 20;
        WorkingSet.print("MemoryBaselineBench", "read of one buffer, copy between two", bytes);
        src = LargePages.allocate(arena, bytes, 64); // as the engine's weights and KV pool
        dst = LargePages.allocate(arena, bytes, 64);
        src.fill((byte) 1); // touch every page before measuring
        dst.fill((byte) 2);
    }

    @TearDown
    public void tearDown() {
        arena.close();
    }

    @Benchmark
    public void read(Traffic t, Blackhole bh) {
        bh.consume(BandwidthBaselines.read(src));
        t.add(src.byteSize());
    }

    @Benchmark
    public void copy(Traffic t) {
        BandwidthBaselines.copy(dst, src, src.byteSize());
        t.add(2 * src.byteSize());
    }
}
