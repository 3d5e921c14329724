package io.radixkv.cli;

import io.radixkv.kernels.AttentionParams;
import io.radixkv.kernels.BackendMemory;
import io.radixkv.kernels.DType;
import io.radixkv.kernels.KernelBackend;
import io.radixkv.kernels.KvCacheView;
import io.radixkv.kernels.PageTableCsr;
import io.radixkv.kernels.PagedKvLayout;
import io.radixkv.kernels.cpu.BandwidthBaselines;
import io.radixkv.kernels.cpu.NativeLibrary;
import io.radixkv.paging.BlockAllocator;
import io.radixkv.paging.DecodeBatchLayout;
import io.radixkv.platform.LargePages;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.function.Consumer;

/**
 * A short bandwidth check of the KV kernels against the machine's memory read and copy
 * bandwidth measured in the same run (libradixkv_bench's baselines {@code rkv_bench_read} /
 * {@code rkv_bench_copy} use the kernels' own thread pool). Buffers are sized well past the
 * last-level cache so every number is a DRAM number.
 *
 * <p>Bytes counted are the bytes each operation must move: read + written (a copy of S
 * bytes counts 2S). Each figure is the best of a few timed repetitions after a warm-up,
 * like STREAM. This is a quick view; the JMH benchmarks in {@code bench/} are the reference.
 */
final class BandwidthCheck {
    /** KV shape of the kernel runs: a Llama-8B-like layer (8 KV heads of 128, GQA 4:1). */
    static final int KV_HEADS = 8;
    static final int QO_HEADS = 32;
    static final int HEAD_DIM = 128;
    static final int PAGE_SIZE = 16;
    static final int DECODE_BATCH = 32;
    /** Decode linear shape: the small model's gate_up projection (rows n, columns k), bf16. */
    static final int LINEAR_ROWS = 8192;
    static final int LINEAR_COLS = 3072;

    private static final double MIN_SECONDS = 0.4;
    private static final int MIN_REPS = 3;
    private static final int MAX_REPS = 10;

    /** One measured kernel. {@code ratio} is against {@code against} ("read" or "copy"). */
    record KernelResult(String name, double gbps, double ratio, String against) {}

    /**
     * {@code linearLayout}: the weight layout the decode linears ran with, "packed" where the
     * backend packs them (as the engine does) or "row-major"; {@code linearRows}: their matrices'
     * rows ({@value #LINEAR_COLS} columns).
     */
    record Result(long bufferBytes, int threads, double readGbps, double memcpyGbps,
                  List<KernelResult> kernels, List<String> skipped, String linearLayout, long linearRows) {}

    private final KernelBackend backend;
    private final long bytes;
    private final Consumer<String> progress;

    /** @param bytes working-set size of each measurement (read buffer, copy source, KV pools) */
    BandwidthCheck(KernelBackend backend, long bytes, Consumer<String> progress) {
        if (bytes < (1 << 20)) {
            throw new IllegalArgumentException("buffer size must be at least 1 MiB, got " + bytes + " bytes");
        }
        this.backend = backend;
        this.bytes = bytes;
        this.progress = progress;
    }

    Result run() {
        NativeLibrary.loadCpu();
        double read = measureRead();
        progress.accept(String.format("read: %.1f GB/s", read));
        double copy = measureCopy();
        progress.accept(String.format("copy: %.1f GB/s", copy));

        List<KernelResult> kernels = new ArrayList<>();
        List<String> skipped = new ArrayList<>();
        kernel("reshape_and_cache_bf16", "copy", copy, () -> measureScatter(DType.BF16), kernels, skipped);
        kernel("reshape_and_cache_fp8_e4m3", "copy", copy, () -> measureScatter(DType.FP8_E4M3), kernels, skipped);
        kernel("fp8_quantize_e4m3", "copy", copy, this::measureFp8Quantize, kernels, skipped);
        kernel("decode_attention_bf16", "read", read, () -> measureDecode(false), kernels, skipped);
        kernel("decode_attention_bf16_placed", "read", read, () -> measureDecode(true), kernels, skipped);
        kernel("decode_linear_bf16_m1", "read", read, () -> measureLinear(1), kernels, skipped);
        kernel("decode_linear_bf16_m8", "read", read, () -> measureLinear(8), kernels, skipped);
        return new Result(bytes, NativeLibrary.numThreads(), read, copy, kernels, skipped, linearLayout(), linearRows());
    }

    /** Rows of the decode linears' weight matrices: {@value #LINEAR_ROWS}, fewer (a multiple of 64) for small working sets. */
    long linearRows() {
        long fit = bytes / ((long) LINEAR_COLS * DType.BF16.bytes()) / 64 * 64;
        return Math.max(64, Math.min(LINEAR_ROWS, fit));
    }

    /** Whether the backend packs the decode linears' weights (the engine then does too). */
    private boolean linearsPacked() {
        return backend.dense().packsLinearWeights(DType.BF16, linearRows(), LINEAR_COLS);
    }

    private String linearLayout() {
        return linearsPacked() ? "packed" : "row-major";
    }

    /**
     * A decode batch of {@code m} rows through bf16 linear weights [{@link #linearRows}, {@value
     * #LINEAR_COLS}] in the layout the engine gives them (packed where the backend packs). The
     * calls take their matrices in turn from enough copies to fill the working set, so each call
     * streams its weights from memory as decode does; GB/s counts the weight bytes (x and y are a
     * few KiB); a decode layer should reach 0.85 of read.
     */
    private double measureLinear(int m) {
        long n = linearRows();
        long k = LINEAR_COLS;
        long matrixBytes = n * k * DType.BF16.bytes();
        int copies = (int) Math.max(1, Math.ceilDiv(bytes, matrixBytes));
        boolean packed = linearsPacked();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment[] w = new MemorySegment[copies];
            for (int i = 0; i < copies; i++) {
                w[i] = filled(arena, matrixBytes, (byte) 0x3c); // bf16 0x3c3c: a normal value
                if (packed) {
                    backend.dense().packLinearWeights(w[i], DType.BF16, n, k, false);
                }
            }
            MemorySegment x = filled(arena, 4L * m * k, (byte) 0x3c);
            MemorySegment y = filled(arena, 4L * m * n, (byte) 0);
            return best(copies * matrixBytes, () -> {
                for (MemorySegment wi : w) {
                    if (packed) {
                        backend.dense().linearPacked(x, wi, DType.BF16, y, m, n, k, false);
                    } else {
                        backend.dense().linear(x, wi, DType.BF16, y, m, n, k, false);
                    }
                }
            });
        }
    }

    private interface Measurement {
        double gbps();
    }

    private void kernel(String name, String against, double baseline, Measurement m,
                        List<KernelResult> kernels, List<String> skipped) {
        try {
            double gbps = m.gbps();
            kernels.add(new KernelResult(name, gbps, gbps / baseline, against));
            progress.accept(String.format("%s: %.1f GB/s", name, gbps));
        } catch (UnsupportedOperationException | LinkageError e) {
            // A backend without this kernel yet: report it, keep measuring the others.
            skipped.add(name + " (" + Main.describe(e) + ")");
            progress.accept(name + ": not available on backend " + backend.name());
        }
    }

    private double measureRead() {
        return readGbps(bytes);
    }

    /** The read baseline alone over a {@code bytes} buffer, GB/s (best of a few repetitions). */
    static double readGbps(long bytes) {
        NativeLibrary.loadCpu();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment src = LargePages.allocate(arena, bytes, 64); // as the weights and KV pool are
            src.fill((byte) 1);
            return best(bytes, () -> BandwidthBaselines.read(src));
        }
    }

    /** A memory-bandwidth baseline: what it measured (GB/s) and its name in reports. */
    record Baseline(double gbps, String name) {}

    /**
     * The baseline a model's weight stream is compared with on {@code backend}: the host read
     * bandwidth for host-memory backends; for a device, a device-to-device copy of {@code bytes}
     * through the backend's memory (read + written counted, as CUDA's bandwidthTest does), which
     * is the most a memory-bound kernel can stream there.
     */
    static Baseline memoryBaseline(KernelBackend backend, long bytes) {
        if (!backend.deviceMemory()) {
            return new Baseline(readGbps(bytes), "read bandwidth");
        }
        BackendMemory m = backend.memory();
        MemorySegment src = m.allocate(bytes);
        MemorySegment dst = m.allocate(bytes);
        return new Baseline(best(2 * bytes, () -> {
            m.copy(src, 0, dst, 0, bytes);
            m.synchronize();
        }), backend.name() + " device copy bandwidth");
    }

    private double measureCopy() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment src = LargePages.allocate(arena, bytes, 64);
            MemorySegment dst = LargePages.allocate(arena, bytes, 64);
            src.fill((byte) 1);
            dst.fill((byte) 0); // touch every page before timing
            return best(2 * bytes, () -> BandwidthBaselines.copy(dst, src, bytes));
        }
    }

    /** Pool layout whose K and V pools together take {@code bytes}. */
    private PagedKvLayout poolLayout(DType dtype) {
        long pageBytes = (long) PAGE_SIZE * KV_HEADS * HEAD_DIM * dtype.bytes();
        long pages = Math.max(DECODE_BATCH, bytes / 2 / pageBytes);
        pages -= pages % DECODE_BATCH;
        return new PagedKvLayout(dtype, pages, PAGE_SIZE, KV_HEADS, HEAD_DIM);
    }

    /**
     * Scatter of one bf16 K/V row per slot into every slot of a {@code cache} pool (fp8: scale 1,
     * the engine's default), pages in shuffled order.
     */
    private double measureScatter(DType cache) {
        PagedKvLayout rows = poolLayout(DType.BF16); // the bf16 K/V rows: as many bytes as a bf16 pool
        PagedKvLayout layout = new PagedKvLayout(cache, rows.numPages(), PAGE_SIZE, KV_HEADS, HEAD_DIM);
        long tokens = layout.slots();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment k = filled(arena, rows.poolBytes(), (byte) 0x3c);
            MemorySegment v = filled(arena, rows.poolBytes(), (byte) 0x3c);
            MemorySegment kc = filled(arena, layout.poolBytes(), (byte) 0);
            MemorySegment vc = filled(arena, layout.poolBytes(), (byte) 0);
            MemorySegment slots = arena.allocate(ValueLayout.JAVA_LONG, tokens);
            int[] perm = permutation((int) layout.numPages(), 42);
            for (long t = 0; t < tokens; t++) {
                slots.setAtIndex(ValueLayout.JAVA_LONG, t, (long) perm[(int) (t / PAGE_SIZE)] * PAGE_SIZE + t % PAGE_SIZE);
            }
            KvCacheView view = KvCacheView.of(kc, vc, layout);
            long moved = 2 * rows.poolBytes() + 2 * layout.poolBytes() + 8 * tokens;
            return best(moved, () -> backend.kv().reshapeAndCache(k, v, DType.BF16, slots, tokens, view));
        }
    }

    private double measureFp8Quantize() {
        long n = bytes / 4;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment src = filled(arena, 4 * n, (byte) 0x3c);
            MemorySegment dst = filled(arena, n, (byte) 0);
            return best(5 * n, () -> backend.kv().fp8Quantize(src, dst, n, DType.FP8_E4M3, 1f));
        }
    }

    /**
     * Decode over {@value #DECODE_BATCH} sequences that together use every page of the pool, their
     * pages shuffled across it (the worst case) or {@code placed} as the engine's allocator places
     * them: prompts of {@value #PLACED_PROMPT} tokens reserved one sequence after another, then
     * decode growth a page at a time, sequence after sequence.
     */
    private double measureDecode(boolean placed) {
        PagedKvLayout layout = poolLayout(DType.BF16);
        int pagesPerSeq = (int) (layout.numPages() / DECODE_BATCH);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment kc = filled(arena, layout.poolBytes(), (byte) 0x3c);
            MemorySegment vc = filled(arena, layout.poolBytes(), (byte) 0x3c);
            MemorySegment indptr = arena.allocate(ValueLayout.JAVA_INT, DECODE_BATCH + 1);
            MemorySegment indices = arena.allocate(ValueLayout.JAVA_INT, layout.numPages());
            MemorySegment lastLen = arena.allocate(ValueLayout.JAVA_INT, DECODE_BATCH);
            long[] lens = new long[DECODE_BATCH];
            Arrays.fill(lens, (long) pagesPerSeq * PAGE_SIZE);
            int numPages = (int) layout.numPages();
            int[] perm = placed ? DecodeBatchLayout.pageIds(new BlockAllocator(numPages), PAGE_SIZE, lens, PLACED_PROMPT)
                    : permutation(numPages, 7);
            for (int i = 0; i < perm.length; i++) {
                indices.setAtIndex(ValueLayout.JAVA_INT, i, perm[i]);
            }
            for (int b = 0; b <= DECODE_BATCH; b++) {
                indptr.setAtIndex(ValueLayout.JAVA_INT, b, b * pagesPerSeq);
            }
            for (int b = 0; b < DECODE_BATCH; b++) {
                lastLen.setAtIndex(ValueLayout.JAVA_INT, b, PAGE_SIZE);
            }
            long qBytes = 4L * DECODE_BATCH * QO_HEADS * HEAD_DIM;
            MemorySegment q = filled(arena, qBytes, (byte) 0x3c);
            MemorySegment out = filled(arena, qBytes, (byte) 0);
            KvCacheView view = KvCacheView.of(kc, vc, layout);
            PageTableCsr table = new PageTableCsr(indptr, indices, lastLen, DECODE_BATCH);
            AttentionParams params = AttentionParams.of(QO_HEADS, HEAD_DIM);
            long moved = 2 * layout.poolBytes() + 2 * qBytes;
            return best(moved, () -> backend.attention().decode(q, DType.F32, out, DType.F32, MemorySegment.NULL,
                    view, table, params));
        }
    }

    private static MemorySegment filled(Arena arena, long n, byte value) {
        MemorySegment s = LargePages.allocate(arena, n, 64); // as the engine's KV pool
        s.fill(value); // also faults every page in before the timed runs
        return s;
    }

    /** Tokens each sequence's prompt reserves before the batch decodes (placed pages). */
    static final int PLACED_PROMPT = 512;

    private static int[] permutation(int n, long seed) {
        int[] p = new int[n];
        for (int i = 0; i < n; i++) {
            p[i] = i;
        }
        Random r = new Random(seed);
        for (int i = n - 1; i > 0; i--) {
            int j = r.nextInt(i + 1);
            int t = p[i];
            p[i] = p[j];
            p[j] = t;
        }
        return p;
    }

    /** Best GB/s over repetitions after one warm-up run. */
    private static double best(long bytesMoved, Runnable op) {
        op.run();
        double bestSeconds = Double.MAX_VALUE;
        long start = System.nanoTime();
        for (int rep = 0; rep < MAX_REPS; rep++) {
            long t0 = System.nanoTime();
            op.run();
            double s = (System.nanoTime() - t0) * 1e-9;
            bestSeconds = Math.min(bestSeconds, s);
            if (rep + 1 >= MIN_REPS && (System.nanoTime() - start) * 1e-9 >= MIN_SECONDS) {
                break;
            }
        }
        return bytesMoved / bestSeconds / 1e9;
    }
}
