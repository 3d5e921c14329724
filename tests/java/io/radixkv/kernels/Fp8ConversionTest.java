package io.radixkv.kernels;

import io.radixkv.kernels.cpu.CpuBackend;
import io.radixkv.kernels.reference.JavaConversions;
import io.radixkv.kernels.reference.JavaReferenceBackend;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Random;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** FP8 quantize / dequantize: native vs the Java reference bit for bit, and round-trip error bounds. */
class Fp8ConversionTest {
    private static CpuBackend cpu;
    private static JavaReferenceBackend java;
    private static final DType[] FP8 = {DType.FP8_E4M3, DType.FP8_E5M2};

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
    void allCodesDecodeLikeTheReference() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment codes = arena.allocate(256);
            for (int c = 0; c < 256; c++) {
                codes.set(ValueLayout.JAVA_BYTE, c, (byte) c);
            }
            for (DType d : FP8) {
                for (float scale : new float[] {1f, 0.37f, 8f}) {
                    MemorySegment a = arena.allocate(4 * 256);
                    MemorySegment b = arena.allocate(4 * 256);
                    cpu.kv().fp8Dequantize(codes, a, 256, d, scale);
                    java.kv().fp8Dequantize(codes, b, 256, d, scale);
                    for (int c = 0; c < 256; c++) {
                        int ga = a.getAtIndex(ValueLayout.JAVA_INT, c);
                        int gb = b.getAtIndex(ValueLayout.JAVA_INT, c);
                        assertEquals(gb, ga, d + " code " + c + " scale " + scale);
                    }
                }
                // known values
                assertEquals(d == DType.FP8_E4M3 ? 448f : 57344f, JavaConversions.fp8ToFloat(d == DType.FP8_E4M3 ? 0x7E : 0x7B, d));
                assertTrue(Float.isNaN(JavaConversions.fp8ToFloat(0x7F, d)));
            }
        }
    }

    @Test
    void quantizeMatchesReferenceBitForBit() {
        Random rnd = new Random(42);
        int n = 1 << 18;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment x = KvTestData.values(arena, DType.F32, n, 300f, rnd);
            // exact ties and their neighbours for both formats
            int o = 0;
            for (DType d : FP8) {
                for (int c = 0; c < 0x7B; c++) {
                    float lo = JavaConversions.fp8ToFloat(c, d);
                    float hi = JavaConversions.fp8ToFloat(c + 1, d);
                    float mid = (lo + hi) / 2;
                    for (float v : new float[] {mid, Math.nextDown(mid), Math.nextUp(mid), -mid}) {
                        x.setAtIndex(ValueLayout.JAVA_FLOAT, o++, v);
                    }
                }
            }
            for (DType d : FP8) {
                for (float scale : new float[] {1f, 0.37f, 0.125f, 3f}) {
                    MemorySegment a = arena.allocate(n);
                    MemorySegment b = arena.allocate(n);
                    cpu.kv().fp8Quantize(x, a, n, d, scale);
                    java.kv().fp8Quantize(x, b, n, d, scale);
                    long m = a.mismatch(b);
                    assertEquals(-1, m, () -> d + " scale " + scale + ": x=" + x.getAtIndex(ValueLayout.JAVA_FLOAT, m)
                            + " native 0x" + Integer.toHexString(a.get(ValueLayout.JAVA_BYTE, m) & 0xFF)
                            + " reference 0x" + Integer.toHexString(b.get(ValueLayout.JAVA_BYTE, m) & 0xFF));
                }
            }
        }
    }

    @Test
    void roundTripErrorBounds() {
        Random rnd = new Random(7);
        int n = 1 << 16;
        try (Arena arena = Arena.ofConfined()) {
            for (DType d : FP8) {
                int mbits = d == DType.FP8_E4M3 ? 3 : 2;
                double minNormal = d == DType.FP8_E4M3 ? 0x1p-6 : 0x1p-14;
                double minSub = minNormal / (1 << mbits);
                for (float scale : new float[] {1f, 0.02f, 5f}) {
                    MemorySegment x = arena.allocate(4L * n);
                    for (int i = 0; i < n; i++) {
                        x.setAtIndex(ValueLayout.JAVA_FLOAT, i, (float) (rnd.nextGaussian() * d.maxFinite() * scale / 4));
                    }
                    MemorySegment q = arena.allocate(n);
                    MemorySegment y = arena.allocate(4L * n);
                    cpu.kv().fp8Quantize(x, q, n, d, scale);
                    cpu.kv().fp8Dequantize(q, y, n, d, scale);
                    for (int i = 0; i < n; i++) {
                        double xi = x.getAtIndex(ValueLayout.JAVA_FLOAT, i);
                        double yi = y.getAtIndex(ValueLayout.JAVA_FLOAT, i);
                        double real = Math.abs(xi / scale);
                        double err = Math.abs(yi - xi) / scale;
                        if (real >= d.maxFinite()) {
                            assertEquals(Math.copySign(d.maxFinite() * (double) scale, xi), yi, Math.ulp((float) yi),
                                    "saturation of " + xi);
                        } else if (real >= minNormal) {
                            // half an ulp of the format, plus float rounding of the scaling steps
                            assertTrue(err <= real * Math.scalb(1.0, -(mbits + 1)) * (1 + 1e-5),
                                    () -> d + ": " + xi + " -> " + yi + " error " + err);
                        } else {
                            assertTrue(err <= minSub / 2 * (1 + 1e-5), () -> d + " subnormal: " + xi + " -> " + yi);
                        }
                    }
                }
            }
        }
    }
}
