package io.radixkv.kernels.cpu;

import io.radixkv.kernels.DType;
import io.radixkv.kernels.KvTestData;
import io.radixkv.kernels.NativeException;
import io.radixkv.kernels.PagedKvLayout;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.radixkv.bindings.radixkv_bench_h;
import io.radixkv.bindings.radixkv_h;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * libradixkv loads from -Dradixkv.native.dir, and its own argument checks (independent of the
 * Java ones) reject bad input with a status and a message, writing nothing; the benchmarks'
 * yardsticks come from libradixkv_bench, loaded beside it only when asked for.
 */
class NativeLibraryTest {
    @Test
    void loadsFromTheConfiguredDirectory() {
        Path p = NativeLibrary.loadCpu();
        assertTrue(Files.isRegularFile(p), p.toString());
        String dir = System.getProperty(NativeLibrary.DIR_PROPERTY);
        if (dir != null) {
            assertEquals(Path.of(dir).resolve("libradixkv.so"), p);
        }
        assertTrue(NativeLibrary.buildInfo().contains("omp_threads="), NativeLibrary.buildInfo());
        assertEquals(4, radixkv_h.rkv_dtype_size(DType.F32.code()));
        assertEquals(1, radixkv_h.rkv_dtype_size(DType.FP8_E5M2.code()));
    }

    @Test
    void nativeChecksRejectBadSlotsWithoutWriting() {
        NativeLibrary.loadCpu();
        try (Arena arena = Arena.ofConfined()) {
            PagedKvLayout l = new PagedKvLayout(DType.BF16, 3, 16, 2, 64);
            Random rnd = new Random(5);
            MemorySegment kc = KvTestData.randomBytes(arena, l.poolBytes(), rnd);
            MemorySegment before = KvTestData.copyOf(arena, kc);
            MemorySegment k = arena.allocate(4 * 2 * l.tokenElements());
            MemorySegment slots = KvTestData.longs(arena, 5, 48);
            // straight through the bindings: no Java validation in front
            int status = radixkv_h.rkv_reshape_and_cache(k, k, DType.F32.code(), slots, 2, 2, 64, kc, kc,
                    DType.BF16.code(), 3, 16, 1f, 1f);
            assertEquals(radixkv_h.RKV_ERR_INVALID_ARGUMENT(), status);
            assertTrue(NativeLibrary.lastError().contains("slot_mapping[1] = 48"), NativeLibrary.lastError());
            assertEquals(-1, kc.mismatch(before));
            NativeException e = org.junit.jupiter.api.Assertions.assertThrows(NativeException.class,
                    () -> NativeLibrary.check("rkv_reshape_and_cache", status));
            assertTrue(e.getMessage().contains("slot_mapping[1] = 48"));

            assertEquals(radixkv_h.RKV_ERR_INVALID_ARGUMENT(),
                    radixkv_h.rkv_convert(k, 7, k, DType.F32.code(), 4, 1f));
            assertTrue(NativeLibrary.lastError().contains("unknown src_dtype 7"), NativeLibrary.lastError());
            assertEquals(radixkv_h.RKV_ERR_INVALID_ARGUMENT(),
                    radixkv_h.rkv_fp8_quantize(MemorySegment.NULL, k, 4, DType.FP8_E4M3.code(), 1f));
            assertTrue(NativeLibrary.lastError().contains("src must not be NULL"), NativeLibrary.lastError());
            assertEquals(radixkv_h.RKV_ERR_INVALID_ARGUMENT(),
                    radixkv_h.rkv_fp8_quantize(k, k, 4, DType.FP8_E4M3.code(), -2f));
            MemorySegment map = KvTestData.longs(arena, 0, 1, 2, 1);
            MemorySegment ptrs = arena.allocate(ValueLayout.ADDRESS, 1);
            ptrs.set(ValueLayout.ADDRESS, 0, kc);
            assertEquals(radixkv_h.RKV_ERR_INVALID_ARGUMENT(),
                    radixkv_h.rkv_copy_blocks(ptrs, ptrs, 1, map, 2, l.pageBytes(), 3));
            assertTrue(NativeLibrary.lastError().contains("destination page 1 appears twice"), NativeLibrary.lastError());
            assertEquals(-1, kc.mismatch(before));
        }
    }

    @Test
    void bandwidthBaselinesRun() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment a = KvTestData.randomBytes(arena, (1 << 20) + 13, new Random(1));
            MemorySegment b = arena.allocate(a.byteSize());
            BandwidthBaselines.copy(b, a, a.byteSize());
            assertEquals(-1, a.mismatch(b));
            assertTrue(BandwidthBaselines.read(a) != 0);
        }
    }

    @Test
    void yardsticksLiveInTheBenchLibraryOnly() {
        Path cpu = NativeLibrary.loadCpu();
        Path bench = NativeLibrary.loadBench();
        assertEquals(cpu.resolveSibling("libradixkv_bench.so"), bench);
        assertEquals(radixkv_h.RKV_ABI_VERSION(), radixkv_bench_h.rkv_bench_abi_version());
        try (Arena arena = Arena.ofConfined()) {
            SymbolLookup product = SymbolLookup.libraryLookup(cpu, arena);
            assertTrue(product.find("rkv_decode_attention").isPresent());
            assertTrue(product.find("rkv_bench_read").isEmpty(), "libradixkv exports rkv_bench_read");
            assertTrue(SymbolLookup.libraryLookup(bench, arena).find("rkv_bench_read").isPresent());
        }
    }

    @Test
    void aLibraryOfAnotherAbiVersionIsRefused() {
        int mine = radixkv_h.RKV_ABI_VERSION();
        NativeLibrary.requireAbi("libradixkv_bench", Path.of("/x/libradixkv_bench.so"), mine);
        UnsatisfiedLinkError e = assertThrows(UnsatisfiedLinkError.class,
                () -> NativeLibrary.requireAbi("libradixkv_bench", Path.of("/x/libradixkv_bench.so"), mine - 1));
        assertTrue(e.getMessage().contains("ABI version " + (mine - 1)) && e.getMessage().contains("expect " + mine),
                e.getMessage());
    }

    @Test
    void fmaPeakIsPositiveAndBadSecondsAreRefused() {
        // A sanity check, not a performance assertion: on a loaded machine the window may see little CPU time.
        assertTrue(BandwidthBaselines.fmaPeakGflops(0.02) > 0);
        NativeException e = assertThrows(NativeException.class, () -> BandwidthBaselines.fmaPeakGflops(-1));
        assertTrue(e.getMessage().contains("seconds"), e.getMessage());
    }

    @Test
    void readGemvStreamsTheWeightsAndChecksRowsAndDtype() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment w = arena.allocate(4L * 4099, 64);
            assertEquals(0.0, BandwidthBaselines.readGemv(w, DType.F32, 8, 0));
            w.setAtIndex(ValueLayout.JAVA_FLOAT, 4098, 1f);
            for (DType d : new DType[] {DType.F32, DType.BF16, DType.F16}) {
                assertTrue(BandwidthBaselines.readGemv(w, d, 16, 0) > 0, d.toString());
                assertTrue(BandwidthBaselines.readGemv(w, d, 3, 8192) > 0, d.toString());
            }
            assertThrows(IllegalArgumentException.class, () -> BandwidthBaselines.readGemv(w, DType.F32, 0, 0));
            assertThrows(IllegalArgumentException.class, () -> BandwidthBaselines.readGemv(w, DType.F32, 17, 0));
            assertThrows(IllegalArgumentException.class, () -> BandwidthBaselines.readGemv(w, DType.F32, 1, -1));
            assertThrows(IllegalArgumentException.class, () -> BandwidthBaselines.readGemv(w, DType.FP8_E4M3, 1, 0));
        }
    }
}
