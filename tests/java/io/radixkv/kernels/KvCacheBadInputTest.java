package io.radixkv.kernels;

import io.radixkv.kernels.cpu.CpuBackend;
import io.radixkv.kernels.reference.JavaReferenceBackend;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.Random;
import java.util.function.Consumer;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Bad arguments are rejected with an IllegalArgumentException naming the bad value, before
 * anything is written: the pools are byte-for-byte unchanged afterwards. Run against the
 * native and the Java backend.
 */
class KvCacheBadInputTest {
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

    /** Backend names, not instances: JUnit would close AutoCloseable arguments after each test. */
    static Stream<String> backends() {
        return Stream.of("cpu", "java");
    }

    private static KernelBackend backend(String name) {
        return name.equals("cpu") ? cpu : java;
    }

    /** Pools, inputs and a valid call's arguments. */
    record Fixture(Arena arena, PagedKvLayout layout, KvCacheView cache, MemorySegment k, MemorySegment v,
                   MemorySegment slots, int numTokens, MemorySegment kBefore, MemorySegment vBefore) {
        void assertUnchanged() {
            assertEquals(-1, cache.kCache().mismatch(kBefore), "K pool was modified by a rejected call");
            assertEquals(-1, cache.vCache().mismatch(vBefore), "V pool was modified by a rejected call");
        }
    }

    private static void withFixture(DType cacheDtype, Consumer<Fixture> body) {
        Random rnd = new Random(9);
        try (Arena arena = Arena.ofConfined()) {
            PagedKvLayout layout = new PagedKvLayout(cacheDtype, 4, 16, 2, 64);
            MemorySegment kc = KvTestData.randomBytes(arena, layout.poolBytes(), rnd);
            MemorySegment vc = KvTestData.randomBytes(arena, layout.poolBytes(), rnd);
            float s = cacheDtype.isFp8() ? 0.5f : 1f;
            KvCacheView cache = new KvCacheView(kc, vc, layout, s, s);
            int n = 5;
            MemorySegment k = KvTestData.values(arena, DType.F32, n * layout.tokenElements(), 3f, rnd);
            MemorySegment v = KvTestData.values(arena, DType.F32, n * layout.tokenElements(), 3f, rnd);
            MemorySegment slots = KvTestData.longs(arena, 3, 17, -1, 40, 63);
            body.accept(new Fixture(arena, layout, cache, k, v, slots, n, KvTestData.copyOf(arena, kc),
                    KvTestData.copyOf(arena, vc)));
        }
    }

    private static void rejects(Fixture f, String expectedInMessage, Runnable call) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, call::run);
        assertTrue(e.getMessage().contains(expectedInMessage),
                () -> "message '" + e.getMessage() + "' does not mention '" + expectedInMessage + "'");
        f.assertUnchanged();
    }

    @ParameterizedTest
    @MethodSource("backends")
    void scatterRejectsBadArguments(String name) {
        KernelBackend b = backend(name);
        for (DType cd : DType.values()) {
            withFixture(cd, f -> {
                KvCacheKernels kv = b.kv();
                // slot == numPages * pageSize (64), last token: everything before it is valid
                MemorySegment bad = KvTestData.longs(f.arena(), 3, 17, -1, 40, 64);
                rejects(f, "slot 64", () -> kv.reshapeAndCache(f.k(), f.v(), DType.F32, bad, f.numTokens(), f.cache()));
                MemorySegment huge = KvTestData.longs(f.arena(), 3, Long.MAX_VALUE, -1, 40, 63);
                rejects(f, "slot " + Long.MAX_VALUE,
                        () -> kv.reshapeAndCache(f.k(), f.v(), DType.F32, huge, f.numTokens(), f.cache()));
                MemorySegment dup = KvTestData.longs(f.arena(), 3, 17, -1, 17, 63);
                rejects(f, "slot 17 appears twice",
                        () -> kv.reshapeAndCache(f.k(), f.v(), DType.F32, dup, f.numTokens(), f.cache()));
                rejects(f, "k holds", () -> kv.reshapeAndCache(f.k().asSlice(0, f.k().byteSize() - 4), f.v(), DType.F32,
                        f.slots(), f.numTokens(), f.cache()));
                rejects(f, "v holds", () -> kv.reshapeAndCache(f.k(), f.v().asSlice(0, 8), DType.F32, f.slots(),
                        f.numTokens(), f.cache()));
                rejects(f, "k holds", () -> kv.reshapeAndCache(f.k(), f.v(), DType.F32, f.slots(), f.numTokens() + 1,
                        f.cache()));
                rejects(f, "slotMapping holds", () -> kv.reshapeAndCache(f.k(), f.v(), DType.F32,
                        f.slots().asSlice(0, 32), f.numTokens(), f.cache()));
                rejects(f, "k must not be null",
                        () -> kv.reshapeAndCache(null, f.v(), DType.F32, f.slots(), f.numTokens(), f.cache()));
                rejects(f, "v must not be null", () -> kv.reshapeAndCache(f.k(), MemorySegment.NULL, DType.F32,
                        f.slots(), f.numTokens(), f.cache()));
                rejects(f, "slotMapping must not be null",
                        () -> kv.reshapeAndCache(f.k(), f.v(), DType.F32, null, f.numTokens(), f.cache()));
                rejects(f, "cache must not be null",
                        () -> kv.reshapeAndCache(f.k(), f.v(), DType.F32, f.slots(), f.numTokens(), null));
                rejects(f, "srcDtype fp8_e4m3 is not supported",
                        () -> kv.reshapeAndCache(f.k(), f.v(), DType.FP8_E4M3, f.slots(), f.numTokens(), f.cache()));
                rejects(f, "srcDtype must not be null",
                        () -> kv.reshapeAndCache(f.k(), f.v(), null, f.slots(), f.numTokens(), f.cache()));
                rejects(f, "numTokens must not be negative",
                        () -> kv.reshapeAndCache(f.k(), f.v(), DType.F32, f.slots(), -1, f.cache()));
            });
        }
    }

    @ParameterizedTest
    @MethodSource("backends")
    void badScalesAndDtypesAreRejected(String name) {
        KernelBackend b = backend(name);
        withFixture(DType.FP8_E4M3, f -> {
            PagedKvLayout l = f.layout();
            for (float s : new float[] {0f, -1f, Float.NaN, Float.POSITIVE_INFINITY}) {
                rejects(f, "kScale", () -> new KvCacheView(f.cache().kCache(), f.cache().vCache(), l, s, 1f));
                rejects(f, "scale", () -> b.kv().fp8Quantize(f.k(), f.cache().kCache(), 4, DType.FP8_E4M3, s));
                rejects(f, "scale", () -> b.kv().fp8Dequantize(f.cache().kCache(), f.k(), 4, DType.FP8_E5M2, s));
                rejects(f, "scale", () -> b.kv().convert(f.k(), DType.F32, f.cache().kCache(), DType.FP8_E5M2, 4, s));
            }
            rejects(f, "fp8Dtype bf16", () -> b.kv().fp8Quantize(f.k(), f.cache().kCache(), 4, DType.BF16, 1f));
            rejects(f, "unknown dtype code 9", () -> DType.fromCode(9));
            rejects(f, "scale must be 1", () -> b.kv().convert(f.k(), DType.F32, f.cache().kCache(), DType.F16, 4, 2f));
            rejects(f, "src holds", () -> b.kv().fp8Quantize(f.k(), f.cache().kCache(), l.poolBytes() + 1,
                    DType.FP8_E4M3, 1f));
            rejects(f, "src must not be null", () -> b.kv().convert(MemorySegment.NULL, DType.F32, f.cache().kCache(),
                    DType.FP8_E4M3, 4, 1f));
        });
    }

    @ParameterizedTest
    @MethodSource("backends")
    void copyBlocksRejectsBadMappings(String name) {
        KernelBackend b = backend(name);
        withFixture(DType.BF16, f -> {
            List<KvCacheView> layers = List.of(f.cache());
            rejects(f, "page 4 is out of range", () -> b.kv().copyBlocks(layers, KvTestData.longs(f.arena(), 0, 1, 2, 4), 2));
            rejects(f, "page -1 is out of range", () -> b.kv().copyBlocks(layers, KvTestData.longs(f.arena(), -1, 1), 1));
            rejects(f, "destination page 1 appears twice",
                    () -> b.kv().copyBlocks(layers, KvTestData.longs(f.arena(), 0, 1, 2, 1), 2));
            rejects(f, "destination page 3 is also a source",
                    () -> b.kv().copyBlocks(layers, KvTestData.longs(f.arena(), 0, 1, 2, 3, 3, 2), 3));
            rejects(f, "blockMapping holds", () -> b.kv().copyBlocks(layers, KvTestData.longs(f.arena(), 0, 1), 2));
            rejects(f, "layers must not be null", () -> b.kv().copyBlocks(List.of(), KvTestData.longs(f.arena(), 0, 1), 1));
            PagedKvLayout other = new PagedKvLayout(DType.BF16, 4, 16, 2, 32);
            KvCacheView small = KvCacheView.of(f.cache().kCache(), f.cache().vCache(), other);
            rejects(f, "layers[1] has layout",
                    () -> b.kv().copyBlocks(List.of(f.cache(), small), KvTestData.longs(f.arena(), 0, 1), 1));
        });
    }
}
