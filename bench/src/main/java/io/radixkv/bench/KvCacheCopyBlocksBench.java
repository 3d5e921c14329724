package io.radixkv.bench;

import io.radixkv.kernels.DType;
import io.radixkv.kernels.KernelBackend;
import io.radixkv.kernels.KvCacheView;
import io.radixkv.kernels.PagedKvLayout;
import io.radixkv.kernels.select.Backends;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
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
 * Page copy (copy_blocks, copy-on-write / compaction): one layer of bf16 pools, 16 tokens x
 * 8 heads x 128 per page (32 KiB), 8192 pages per pool ("auto": 256 MiB each, 512 MiB for
 * K+V, or more pages where twice the last-level cache is more; see {@link WorkingSet}); half
 * the pages, at random, are copied to the other half (256 MiB read + 256 MiB written per call
 * at 8192). libradixkv vs the Java reference (MemorySegment.copy per page, one thread).
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@State(Scope.Benchmark)
public class KvCacheCopyBlocksBench {
    @Param({"cpu", "java"})
    public String impl;

    @Param({"auto"})
    public String pages;

    private KernelBackend backend;
    private List<KvCacheView> layers;
    private MemorySegment mapping;
    private long pairs;
    private long bytesPerOp;

    @Setup
    public void setUp() {
        backend = Backends.create(impl);
        long pageBytes = 16L * 8 * 128 * DType.BF16.bytes();
        long numPages = WorkingSet.units("pages", pages, 8192, 2 * pageBytes, 2); // a K and a V page each
        PagedKvLayout layout = new PagedKvLayout(DType.BF16, numPages, 16, 8, 128);
        MemorySegment kc = backend.memory().allocate(layout.poolBytes());
        MemorySegment vc = backend.memory().allocate(layout.poolBytes());
        kc.fill((byte) 3);
        vc.fill((byte) 4);
        layers = List.of(KvCacheView.of(kc, vc, layout));
        List<Long> ids = new ArrayList<>();
        for (long p = 0; p < numPages; p++) {
            ids.add(p);
        }
        Collections.shuffle(ids, new Random(1));
        pairs = numPages / 2;
        mapping = backend.memory().allocate(16 * pairs);
        for (long i = 0; i < pairs; i++) {
            mapping.setAtIndex(ValueLayout.JAVA_LONG, 2 * i, ids.get((int) i));
            mapping.setAtIndex(ValueLayout.JAVA_LONG, 2 * i + 1, ids.get((int) (pairs + i)));
        }
        bytesPerOp = 2 * pairs * layout.pageBytes() * 2;
        WorkingSet.print("KvCacheCopyBlocksBench", numPages + " pages per pool, " + pairs + " copied", bytesPerOp);
    }

    @TearDown
    public void tearDown() {
        backend.close();
    }

    @Benchmark
    public void copyBlocks(MemoryBaselineBench.Traffic t) {
        backend.kv().copyBlocks(layers, mapping, pairs);
        t.add(bytesPerOp);
    }
}
