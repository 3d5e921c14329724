package io.radixkv.bench;

import io.radixkv.paging.BlockAllocator;
import io.radixkv.paging.KvSequences;
import java.util.concurrent.TimeUnit;
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
 * Page allocator throughput: allocate + free of {@code n} pages from a 32k-page pool with a
 * quarter already allocated (so free ids are scattered), one page at a time, and a whole
 * sequence lifecycle (open, eager reserve for a 1000-token prompt, 64 decode growths,
 * release). ns per operation; steady state must be allocation-free (-prof gc).
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
public class PagingAllocatorBench {
    @Param({"1", "16", "256"})
    public int n;

    private BlockAllocator allocator;
    private int[] pages;
    private KvSequences seqs;

    @Setup(Level.Trial)
    public void setup() {
        allocator = new BlockAllocator(32768);
        int[] warm = new int[8192];
        allocator.allocate(8192, 1, warm, 0);
        // free every other page back so the free stack is not a contiguous run
        for (int i = 0; i < warm.length; i += 2) {
            allocator.free(warm[i]);
        }
        pages = new int[n];
        seqs = new KvSequences(new BlockAllocator(32768), 16, 64, 256);
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        seqs.close();
    }

    /** All-or-nothing allocate of n pages, then a bulk free of them. */
    @Benchmark
    public int allocateFree() {
        if (!allocator.allocate(n, 7, pages, 0)) {
            throw new IllegalStateException("pool exhausted");
        }
        allocator.free(pages, 0, n);
        return pages[0];
    }

    /** n single-page allocations (decode growth) and single-page frees. */
    @Benchmark
    public int allocateOneFreeOne() {
        int x = 0;
        for (int i = 0; i < n; i++) {
            pages[i] = allocator.allocateOne(7);
        }
        for (int i = 0; i < n; i++) {
            x += pages[i];
            allocator.free(pages[i]);
        }
        return x;
    }

    /** open, reserve 1000 tokens (63 pages), 64 decode steps (4 page growths), release. */
    @Benchmark
    public long sequenceLifecycle() {
        int seq = seqs.open(n);
        if (!seqs.reserve(seq, 1000)) {
            throw new IllegalStateException("pool exhausted");
        }
        seqs.setLength(seq, 1000);
        for (int i = 0; i < 64; i++) {
            seqs.growForDecode(seq);
            seqs.setLength(seq, seqs.length(seq) + 1);
        }
        long len = seqs.length(seq);
        seqs.release(seq);
        return len;
    }
}
