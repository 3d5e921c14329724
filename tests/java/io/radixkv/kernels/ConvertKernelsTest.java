package io.radixkv.kernels;

import io.radixkv.kernels.cpu.CpuBackend;
import io.radixkv.kernels.reference.JavaReferenceBackend;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Random;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** rkv_convert between every pair of dtypes against the Java reference, bit for bit (special values included). */
class ConvertKernelsTest {
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

    @Test
    void everyPairMatchesReference() {
        Random rnd = new Random(1);
        for (DType sd : DType.values()) {
            for (DType dd : DType.values()) {
                boolean fp8 = sd.isFp8() || dd.isFp8();
                for (float scale : fp8 ? new float[] {1f, 0.3f, 16f} : new float[] {1f}) {
                    for (int n : new int[] {1, 17, 4099, 150_001}) {
                        try (Arena arena = Arena.ofConfined()) {
                            MemorySegment src = KvTestData.values(arena, sd, n, 500f, rnd);
                            MemorySegment a = arena.allocate((long) n * dd.bytes());
                            MemorySegment b = arena.allocate((long) n * dd.bytes());
                            cpu.kv().convert(src, sd, a, dd, n, scale);
                            java.kv().convert(src, sd, b, dd, n, scale);
                            long m = a.mismatch(b);
                            assertEquals(-1, m, () -> sd + " -> " + dd + " n=" + n + " scale=" + scale
                                    + " differs at byte " + m + " (element " + m / dd.bytes() + ")");
                        }
                    }
                }
            }
        }
    }
}
