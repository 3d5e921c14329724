package io.radixkv.bench;

import io.radixkv.paging.BatchTables;
import io.radixkv.paging.BlockAllocator;
import io.radixkv.paging.KvSequences;
import java.util.Random;
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
 * Per-step table build for a batch of 256 sequences of mixed lengths (page size 16, KV
 * lengths 1..4096, pages scattered by churn): FlashInfer CSR (kv_indptr, kv_indices,
 * kv_last_page_len), qo_indptr, int64 slot mapping and positions, into reusable segments.
 * {@code decode}: every sequence adds 1 token; {@code mixed}: 8 sequences prefill a
 * 256-token chunk, 248 decode. Target: a few microseconds and 0 B/op (-prof gc).
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
public class PagingBatchTablesBench {
    private static final int BATCH = 256;
    private static final int PAGE = 16;

    @Param({"decode", "mixed"})
    public String mode;

    private KvSequences seqs;
    private BatchTables tables;
    private final int[] ids = new int[BATCH];
    private final long[] starts = new long[BATCH];
    private final long[] ends = new long[BATCH];

    @Setup(Level.Trial)
    public void setup() {
        Random rnd = new Random(42);
        seqs = new KvSequences(new BlockAllocator(80_000), PAGE, BATCH, 4096 / PAGE + 1);
        // churn: open extra sequences and release them so page ids are not contiguous
        int[] scratch = new int[BATCH];
        for (int i = 0; i < BATCH; i++) {
            scratch[i] = seqs.open(-1);
            seqs.reserve(scratch[i], 1 + rnd.nextInt(512));
        }
        for (int i = 0; i < BATCH; i += 2) {
            seqs.release(scratch[i]);
        }
        for (int i = 1; i < BATCH; i += 2) {
            seqs.release(scratch[i]);
        }
        boolean mixed = mode.equals("mixed");
        for (int i = 0; i < BATCH; i++) {
            int seq = seqs.open(i);
            ids[i] = seq;
            long len = 1 + rnd.nextInt(4096 - 257);
            long chunk = mixed && i % 32 == 0 ? 256 : 1;
            starts[i] = len;
            ends[i] = len + chunk;
            if (!seqs.reserve(seq, ends[i])) {
                throw new IllegalStateException("pool too small");
            }
            seqs.setLength(seq, len);
        }
        tables = new BatchTables(BATCH, 8192, 80_000);
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        tables.close();
        seqs.close();
    }

    @Benchmark
    public int build() {
        tables.build(seqs, ids, starts, ends, BATCH);
        return tables.numTokens();
    }

    /**
     * Baseline: only the unavoidable part, copying every sequence's first ceil(end/16) page
     * ids from the page table into kv_indices (no validation, no slots): the memory traffic
     * floor of a CSR build.
     */
    @Benchmark
    public int indicesCopyBaseline() {
        var table = seqs.pageTable();
        var dst = tables.kvIndices();
        long at = 0;
        for (int i = 0; i < BATCH; i++) {
            int np = (int) ((ends[i] + PAGE - 1) / PAGE);
            java.lang.foreign.MemorySegment.copy(table.segment(), 4L * table.rowOffset(ids[i]), dst, 4L * at, 4L * np);
            at += np;
        }
        return (int) at;
    }

    /** The same plus the CSR record the attention kernel takes (cached: no garbage). */
    @Benchmark
    public Object buildAndCsr() {
        tables.build(seqs, ids, starts, ends, BATCH);
        return tables.csr();
    }
}
