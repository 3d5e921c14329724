package io.radixkv.kernels;

import io.radixkv.kernels.cpu.CpuBackend;
import io.radixkv.kernels.reference.JavaReferenceBackend;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** Native (libradixkv) scatter and page copy against the plain-Java reference, byte for byte. */
class KvCacheKernelsTest {
    private static CpuBackend cpu;
    private static JavaReferenceBackend java;

    @BeforeAll
    static void setUp() {
        cpu = new CpuBackend();
        java = new JavaReferenceBackend();
    }

    @AfterAll
    static void tearDown() {
        cpu.close();
        java.close();
    }

    /** Every page size x head_dim x cache dtype x source dtype; kv heads rotate through 1..8. */
    static Stream<Arguments> scatterCases() {
        List<Arguments> cases = new ArrayList<>();
        int i = 0;
        for (int pageSize : new int[] {1, 16, 32}) {
            for (int headDim : new int[] {64, 128, 256}) {
                for (DType cache : DType.values()) {
                    for (DType src : new DType[] {DType.F32, DType.F16, DType.BF16}) {
                        cases.add(Arguments.of(pageSize, headDim, 1 + (i++ % 8), cache, src));
                    }
                }
            }
        }
        return cases.stream();
    }

    @ParameterizedTest(name = "page={0} head_dim={1} kv_heads={2} cache={3} src={4}")
    @MethodSource("scatterCases")
    void scatterMatchesReference(int pageSize, int headDim, int kvHeads, DType cacheDtype, DType srcDtype) {
        checkScatter(pageSize, headDim, kvHeads, cacheDtype, srcDtype, 1000L * pageSize + headDim * 31L + kvHeads);
    }

    @Test
    void scatterEveryHeadCount() {
        for (int heads = 1; heads <= 8; heads++) {
            checkScatter(16, 128, heads, DType.FP8_E4M3, DType.BF16, heads);
            checkScatter(16, 128, heads, DType.BF16, DType.F32, 100 + heads);
        }
    }

    private static void checkScatter(int pageSize, int headDim, int kvHeads, DType cacheDtype, DType srcDtype, long seed) {
        Random rnd = new Random(seed);
        long numPages = 6 + rnd.nextInt(6);
        PagedKvLayout layout = new PagedKvLayout(cacheDtype, numPages, pageSize, kvHeads, headDim);
        int numTokens = (int) Math.min(layout.slots(), 3 + rnd.nextInt(24));
        // distinct random slots over the whole pool (non-contiguous), some padding (-1, -7)
        List<Long> all = new ArrayList<>();
        for (long s = 0; s < layout.slots(); s++) {
            all.add(s);
        }
        Collections.shuffle(all, rnd);
        long[] slots = new long[numTokens];
        for (int t = 0; t < numTokens; t++) {
            slots[t] = rnd.nextInt(6) == 0 ? -1 - rnd.nextInt(8) : all.get(t);
        }
        float kScale = cacheDtype.isFp8() ? 0.05f + rnd.nextFloat() : 1f;
        float vScale = cacheDtype.isFp8() ? (rnd.nextBoolean() ? 0.25f : 1.7f) : 1f;
        try (Arena arena = Arena.ofConfined()) {
            long elems = numTokens * layout.tokenElements();
            MemorySegment k = KvTestData.values(arena, srcDtype, elems, 60f, rnd);
            MemorySegment v = KvTestData.values(arena, srcDtype, elems, 600f, rnd);
            MemorySegment slotSeg = KvTestData.longs(arena, slots);
            MemorySegment kc = KvTestData.randomBytes(arena, layout.poolBytes(), rnd);
            MemorySegment vc = KvTestData.randomBytes(arena, layout.poolBytes(), rnd);
            MemorySegment kr = KvTestData.copyOf(arena, kc);
            MemorySegment vr = KvTestData.copyOf(arena, vc);
            MemorySegment k0 = KvTestData.copyOf(arena, kc);
            cpu.kv().reshapeAndCache(k, v, srcDtype, slotSeg, numTokens, new KvCacheView(kc, vc, layout, kScale, vScale));
            java.kv().reshapeAndCache(k, v, srcDtype, slotSeg, numTokens, new KvCacheView(kr, vr, layout, kScale, vScale));
            assertEquals(-1, kc.mismatch(kr), () -> "K pool differs from the reference at byte " + kc.mismatch(kr));
            assertEquals(-1, vc.mismatch(vr), () -> "V pool differs from the reference at byte " + vc.mismatch(vr));
            boolean wrote = false;
            for (long s : slots) {
                wrote |= s >= 0;
            }
            // the test is not vacuous: something was written whenever a slot was not padding
            assertEquals(wrote, kc.mismatch(k0) >= 0 || layout.tokenBytes() == 0);
        }
    }

    @Test
    void copyBlocksMatchesReference() {
        Random rnd = new Random(3);
        for (DType d : DType.values()) {
            PagedKvLayout layout = new PagedKvLayout(d, 12, 16, 2, 64);
            try (Arena arena = Arena.ofConfined()) {
                List<KvCacheView> nat = new ArrayList<>();
                List<KvCacheView> ref = new ArrayList<>();
                for (int l = 0; l < 3; l++) {
                    MemorySegment k = KvTestData.randomBytes(arena, layout.poolBytes(), rnd);
                    MemorySegment v = KvTestData.randomBytes(arena, layout.poolBytes(), rnd);
                    float s = d.isFp8() ? 0.5f : 1f;
                    nat.add(new KvCacheView(k, v, layout, s, s));
                    ref.add(new KvCacheView(KvTestData.copyOf(arena, k), KvTestData.copyOf(arena, v), layout, s, s));
                }
                MemorySegment map = KvTestData.longs(arena, 0, 7, 3, 4, 11, 1, 3, 9);
                MemorySegment before = KvTestData.copyOf(arena, nat.get(1).kCache());
                cpu.kv().copyBlocks(nat, map, 4);
                java.kv().copyBlocks(ref, map, 4);
                for (int l = 0; l < 3; l++) {
                    assertEquals(-1, nat.get(l).kCache().mismatch(ref.get(l).kCache()), "K layer " + l);
                    assertEquals(-1, nat.get(l).vCache().mismatch(ref.get(l).vCache()), "V layer " + l);
                }
                // page 7 of layer 1 now holds page 0's bytes
                long pb = layout.pageBytes();
                assertEquals(-1, nat.get(1).kCache().asSlice(7 * pb, pb).mismatch(before.asSlice(0, pb)));
                assertTrue(before.asSlice(7 * pb, pb).mismatch(before.asSlice(0, pb)) >= 0);
            }
        }
    }
}
