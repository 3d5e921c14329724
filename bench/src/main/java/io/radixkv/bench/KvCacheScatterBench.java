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
 * KV scatter (reshape_and_cache) of a prefill batch: bf16 K/V rows [tokens, 8 heads, 128]
 * written through a slot mapping whose pages are shuffled over the pool (16-token pages),
 * into a bf16 or fp8 cache. Native: 65536 tokens ("auto": 256 MiB of K+V read, 256 / 128 MiB
 * written, or more tokens where twice the last-level cache is more; see {@link WorkingSet});
 * the Java reference runs 1/16 of the tokens. {@code gbs} counts K/V bytes read + cache bytes
 * written + the slot mapping.
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@State(Scope.Benchmark)
public class KvCacheScatterBench {
    @Param({"cpu", "java"})
    public String impl;

    @Param({"bf16", "fp8_e4m3"})
    public String cache;

    @Param({"auto"})
    public String tokens;

    /** The fp8 cache's scale (stored = real / scale): 1, the engine's default, needs no division. */
    @Param({"0.05"})
    public float fp8Scale;

    private static final int PAGE = 16;
    private static final int HEADS = 8;
    private static final int DIM = 128;

    private KernelBackend backend;
    private int n;
    private MemorySegment k;
    private MemorySegment v;
    private MemorySegment slots;
    private KvCacheView view;
    private long bytesPerOp;

    @Setup
    public void setUp() {
        backend = Backends.create(impl);
        DType cd = DType.parse(cache);
        long perToken = (long) HEADS * DIM * (2 * 2 + 2 * cd.bytes());
        long all = WorkingSet.units("tokens", tokens, 65536, perToken, 16L * PAGE);
        n = Math.toIntExact(impl.equals("java") ? all / 16 : all);
        long pages = (n + PAGE - 1) / PAGE;
        PagedKvLayout layout = new PagedKvLayout(cd, pages, PAGE, HEADS, DIM);
        float s = cd.isFp8() ? fp8Scale : 1f;
        view = new KvCacheView(backend.memory().allocate(layout.poolBytes()), backend.memory().allocate(layout.poolBytes()),
                layout, s, s);
        long elems = (long) n * layout.tokenElements();
        k = backend.memory().allocate(2 * elems);
        v = backend.memory().allocate(2 * elems);
        Random rnd = new Random(1);
        for (long i = 0; i < elems; i++) {
            short x = (short) (Float.floatToRawIntBits((float) rnd.nextGaussian()) >>> 16);
            k.setAtIndex(ValueLayout.JAVA_SHORT, i, x);
            v.setAtIndex(ValueLayout.JAVA_SHORT, i, (short) (x ^ 0x8000));
        }
        // whole pages in shuffled order, tokens consecutive inside a page (as a paged allocator hands them out)
        List<Long> order = new ArrayList<>();
        for (long p = 0; p < pages; p++) {
            order.add(p);
        }
        Collections.shuffle(order, rnd);
        slots = backend.memory().allocate(8L * n);
        for (int t = 0; t < n; t++) {
            slots.setAtIndex(ValueLayout.JAVA_LONG, t, order.get(t / PAGE) * PAGE + t % PAGE);
        }
        bytesPerOp = 2 * elems * 2 + 2 * elems * cd.bytes() + 8L * n;
        WorkingSet.print("KvCacheScatterBench", n + " tokens into " + cache, bytesPerOp);
    }

    @TearDown
    public void tearDown() {
        backend.close();
    }

    @Benchmark
    public void scatter(MemoryBaselineBench.Traffic t) {
        backend.kv().reshapeAndCache(k, v, DType.BF16, slots, n, view);
        t.add(bytesPerOp);
    }
}
