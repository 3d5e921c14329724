package io.radixkv.kernels.cuda;

import io.radixkv.kernels.AttentionFixture;
import io.radixkv.kernels.AttentionParams;
import io.radixkv.kernels.AttentionPlan;
import io.radixkv.kernels.DType;
import io.radixkv.kernels.KernelBackend;
import io.radixkv.kernels.KvCacheView;
import io.radixkv.kernels.PageTableCsr;
import io.radixkv.kernels.reference.JavaAttentionKernels;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The CUDA attention kernels on a device, driven as an engine step drives them (plan once from
 * host tables, run several layers; inputs uploaded through the backend's memory), against
 * {@link JavaAttentionKernels} (the independent reference) on the same host data: decode and
 * append prefill over GQA, sliding windows, soft-capping, f32/f16/bf16/fp8 caches, split-KV over
 * long contexts, empty sequences; plus merge_state and the per-call forms (with bidirectional
 * regions). Skipped without a device unless {@code -Dradixkv.requireCuda=true}.
 */
class CudaAttentionKernelsDeviceTest {
    private KernelBackend cuda;
    private final JavaAttentionKernels ref = new JavaAttentionKernels();

    @BeforeEach
    void device() {
        cuda = CudaDevice.backendOrSkip();
    }

    @AfterEach
    void close() {
        if (cuda != null) {
            cuda.close();
        }
    }

    /**
     * @param window windowLeft (-1: none)
     * @param cap logits soft cap (0: none)
     */
    record Case(String name, DType cacheDtype, DType ioDtype, int pageSize, int numKvHeads, int group, int headDim,
                long[] lens, int window, float cap) {
        @Override
        public String toString() {
            return name;
        }
    }

    static Stream<Case> cases() {
        return Stream.of(
                new Case("f32 MHA hd64 short+empty", DType.F32, DType.F32, 16, 2, 1, 64, new long[] {1, 17, 100, 0}, -1, 0f),
                new Case("bf16 GQA8 hd128 split-KV 5000", DType.BF16, DType.BF16, 16, 1, 8, 128, new long[] {5000}, -1, 0f),
                new Case("bf16 GQA4 window 255 cap 30", DType.BF16, DType.F32, 16, 2, 4, 128, new long[] {3000, 40, 256},
                        255, 30f),
                new Case("f16 GQA2 hd96 page 7", DType.F16, DType.F16, 7, 3, 2, 96, new long[] {333, 1, 64}, -1, 0f),
                new Case("fp8 e4m3 GQA2 hd256", DType.FP8_E4M3, DType.BF16, 16, 2, 2, 256, new long[] {700, 33}, 100, 0f),
                new Case("fp8 e5m2 MQA6 hd32 page 1", DType.FP8_E5M2, DType.F32, 1, 1, 6, 32, new long[] {90, 2, 1500},
                        -1, 0f));
    }

    private MemorySegment dev(MemorySegment host) {
        MemorySegment d = cuda.memory().allocate(host.byteSize());
        cuda.memory().copyFromHost(host, d, host.byteSize());
        return d;
    }

    private MemorySegment back(MemorySegment dev, AttentionFixture f) {
        MemorySegment h = f.arena.allocate(dev.byteSize(), 64);
        cuda.memory().copyToHost(dev, h, dev.byteSize());
        return h;
    }

    private KvCacheView devCache(AttentionFixture f) {
        KvCacheView c = f.cache;
        return new KvCacheView(dev(c.kCache()), dev(c.vCache()), c.layout(), c.kScale(), c.vScale());
    }

    private static AttentionParams params(Case c) {
        return new AttentionParams(c.numKvHeads() * c.group(), (float) (1 / Math.sqrt(c.headDim())), c.cap(),
                c.window());
    }

    private static void compare(String what, AttentionFixture f, DType io, MemorySegment want, MemorySegment got,
                                long n, MemorySegment wantLse, MemorySegment gotLse, long rows, Case c) {
        AttentionFixture.assertClose(what + " out [" + c + "]", AttentionFixture.toFloats(want, io, n),
                AttentionFixture.toFloats(got, io, n), AttentionFixture.tolerance(c.cacheDtype(), io));
        AttentionFixture.assertClose(what + " lse [" + c + "]", AttentionFixture.toFloats(wantLse, DType.F32, rows),
                AttentionFixture.toFloats(gotLse, DType.F32, rows), 1e-4);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("cases")
    void decodePlannedOnceRunPerLayerMatchesTheReference(Case c) {
        try (AttentionFixture f = new AttentionFixture(c.cacheDtype(), c.pageSize(), c.numKvHeads(), c.headDim(),
                c.lens(), 42)) {
            AttentionParams p = params(c);
            int batch = c.lens().length;
            long rows = (long) batch * p.numQoHeads();
            long n = rows * c.headDim();
            KvCacheView dc = devCache(f);
            PageTableCsr table = f.table();
            AttentionPlan plan = cuda.attention().plan(f.layout, table, MemorySegment.NULL, p.numQoHeads());
            for (int layer = 0; layer < 2; layer++) {  // one plan, several layers with different queries
                MemorySegment q = f.randomTensor(c.ioDtype(), n);
                MemorySegment want = f.sentinel(c.ioDtype(), n), wantLse = f.sentinel(DType.F32, rows);
                ref.decode(q, c.ioDtype(), want, c.ioDtype(), wantLse, f.cache, table, p);
                MemorySegment out = cuda.memory().allocate(n * c.ioDtype().bytes());
                MemorySegment lse = cuda.memory().allocate(4 * rows);
                cuda.attention().run(plan, dev(q), c.ioDtype(), out, c.ioDtype(), lse, dc, p);
                cuda.memory().synchronize();
                compare("decode layer " + layer, f, c.ioDtype(), want, back(out, f), n, wantLse, back(lse, f), rows, c);
            }
            cuda.checkDeviceErrors();
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("cases")
    void appendPrefillPlannedOnceMatchesTheReference(Case c) {
        try (AttentionFixture f = new AttentionFixture(c.cacheDtype(), c.pageSize(), c.numKvHeads(), c.headDim(),
                c.lens(), 7)) {
            AttentionParams p = params(c);
            int batch = c.lens().length;
            int[] qo = new int[batch + 1];
            for (int b = 0; b < batch; b++) {
                // a whole prompt, a chunk after a cached prefix, a single token
                long len = c.lens()[b];
                long qLen = switch (b % 3) {
                    case 0 -> Math.min(len, 160);
                    case 1 -> Math.min(len, 37);
                    default -> Math.min(len, 1);
                };
                qo[b + 1] = qo[b] + (int) qLen;
            }
            long rows = (long) qo[batch] * p.numQoHeads();
            long n = rows * c.headDim();
            MemorySegment qoIndptr = f.ints(qo);
            KvCacheView dc = devCache(f);
            PageTableCsr table = f.table();
            AttentionPlan plan = cuda.attention().plan(f.layout, table, qoIndptr, p.numQoHeads());
            assertEquals(false, plan.decode());
            for (int layer = 0; layer < 2; layer++) {
                MemorySegment q = f.randomTensor(c.ioDtype(), n);
                MemorySegment want = f.sentinel(c.ioDtype(), n), wantLse = f.sentinel(DType.F32, rows);
                ref.appendPrefill(q, c.ioDtype(), want, c.ioDtype(), wantLse, qoIndptr, f.cache, table,
                        MemorySegment.NULL, MemorySegment.NULL, p);
                MemorySegment out = cuda.memory().allocate(Math.max(1, n * c.ioDtype().bytes()));
                MemorySegment lse = cuda.memory().allocate(Math.max(4, 4 * rows));
                cuda.attention().run(plan, dev(q), c.ioDtype(), out, c.ioDtype(), lse, dc, p);
                cuda.memory().synchronize();
                compare("prefill layer " + layer + " qo " + Arrays.toString(qo), f, c.ioDtype(), want, back(out, f),
                        n, wantLse, back(lse, f), rows, c);
            }
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("cases")
    void perCallFormsWithBidirectionalRegionsMatchTheReference(Case c) {
        try (AttentionFixture f = new AttentionFixture(c.cacheDtype(), c.pageSize(), c.numKvHeads(), c.headDim(),
                c.lens(), 3)) {
            AttentionParams p = params(c);
            int batch = c.lens().length;
            KvCacheView dc = devCache(f);
            PageTableCsr table = f.table();
            long rows = (long) batch * p.numQoHeads();
            long n = rows * c.headDim();
            MemorySegment q = f.randomTensor(c.ioDtype(), n);
            MemorySegment want = f.sentinel(c.ioDtype(), n), wantLse = f.sentinel(DType.F32, rows);
            ref.decode(q, c.ioDtype(), want, c.ioDtype(), wantLse, f.cache, table, p);
            MemorySegment out = cuda.memory().allocate(n * c.ioDtype().bytes());
            MemorySegment lse = cuda.memory().allocate(4 * rows);
            cuda.attention().decode(dev(q), c.ioDtype(), out, c.ioDtype(), lse, dc, table, p);
            compare("per-call decode", f, c.ioDtype(), want, back(out, f), n, wantLse, back(lse, f), rows, c);

            // every sequence prefills its last min(len, 20) tokens; an image region [len/4, len/2)
            int[] qo = new int[batch + 1];
            int[] bi = new int[batch + 1];
            int[] regions = new int[2 * batch];
            int nRegions = 0;
            for (int b = 0; b < batch; b++) {
                long len = c.lens()[b];
                qo[b + 1] = qo[b] + (int) Math.min(len, 20);
                if (len >= 4) {
                    regions[2 * nRegions] = (int) (len / 4);
                    regions[2 * nRegions + 1] = (int) (len / 2);
                    nRegions++;
                }
                bi[b + 1] = nRegions;
            }
            MemorySegment qoIndptr = f.ints(qo), biIndptr = f.ints(bi),
                    biRegions = f.ints(Arrays.copyOf(regions, Math.max(2 * nRegions, 1)));
            long prows = (long) qo[batch] * p.numQoHeads();
            long pn = prows * c.headDim();
            MemorySegment pq = f.randomTensor(c.ioDtype(), pn);
            MemorySegment pwant = f.sentinel(c.ioDtype(), pn), pwantLse = f.sentinel(DType.F32, prows);
            ref.appendPrefill(pq, c.ioDtype(), pwant, c.ioDtype(), pwantLse, qoIndptr, f.cache, table, biIndptr,
                    biRegions, p);
            MemorySegment pout = cuda.memory().allocate(pn * c.ioDtype().bytes());
            MemorySegment plse = cuda.memory().allocate(4 * prows);
            cuda.attention().appendPrefill(dev(pq), c.ioDtype(), pout, c.ioDtype(), plse, qoIndptr, dc, table,
                    biIndptr, biRegions, p);
            compare("per-call prefill with regions " + Arrays.toString(Arrays.copyOf(regions, 2 * nRegions)), f,
                    c.ioDtype(), pwant, back(pout, f), pn, pwantLse, back(plse, f), prows, c);
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("cases")
    void mergeStateMatchesTheReference(Case c) {
        try (AttentionFixture f = new AttentionFixture(DType.F32, 16, 1, c.headDim(), new long[] {1}, 11)) {
            int tokens = 5, heads = c.numKvHeads() * c.group();
            long rows = (long) tokens * heads;
            long n = rows * c.headDim();
            MemorySegment va = f.randomTensor(DType.F32, n), vb = f.randomTensor(DType.F32, n);
            MemorySegment sa = f.randomTensor(DType.F32, rows), sb = f.randomTensor(DType.F32, rows);
            // empty partial states on some rows
            JavaAttentionKernels.store(sa, DType.F32, 0, Double.NEGATIVE_INFINITY);
            JavaAttentionKernels.store(sb, DType.F32, 1, Double.NEGATIVE_INFINITY);
            JavaAttentionKernels.store(sa, DType.F32, 2, Double.NEGATIVE_INFINITY);
            JavaAttentionKernels.store(sb, DType.F32, 2, Double.NEGATIVE_INFINITY);
            MemorySegment vo = f.sentinel(DType.F32, n), so = f.sentinel(DType.F32, rows);
            ref.mergeState(va, sa, vb, sb, vo, so, tokens, heads, c.headDim());
            MemorySegment dva = dev(va), dsa = dev(sa);
            // in place: out aliases a
            cuda.attention().mergeState(dva, dsa, dev(vb), dev(sb), dva, dsa, tokens, heads, c.headDim());
            AttentionFixture.assertClose("merge v [" + c + "]", AttentionFixture.toFloats(vo, DType.F32, n),
                    AttentionFixture.toFloats(back(dva, f), DType.F32, n), 1e-5);
            AttentionFixture.assertClose("merge s [" + c + "]", AttentionFixture.toFloats(so, DType.F32, rows),
                    AttentionFixture.toFloats(back(dsa, f), DType.F32, rows), 1e-5);
        }
    }
}
