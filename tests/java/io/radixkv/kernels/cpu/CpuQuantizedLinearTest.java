package io.radixkv.kernels.cpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.radixkv.quant.BlockFormat;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Random;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * libradixkv's quantized dense kernels through the Java API, against references built from the
 * Java codecs: {@code linearQuantized} against the dequantized weights' product with x in double
 * (within half a step of the 8-bit activations' grid per value, the kernel's documented rounding:
 * 32-value blocks for Q8_0 / Q4_0 / Q5_0, 256 for Q4_K / Q6_K), every format and m in 1, 2, 8, 16
 * (integer dot products) and 64 (dequantized panels); {@code embeddingQuantized} bit-exact with
 * {@link BlockFormat#dequantize}; bad arguments refused before the native call. The native test
 * {@code quant_test} runs the same products on every ISA path (RADIXKV_ISA).
 */
class CpuQuantizedLinearTest {
    private final CpuDenseKernels dense = new CpuDenseKernels();

    static Stream<Arguments> formatsAndRows() {
        return Stream.of(BlockFormat.values()).flatMap(f -> Stream.of(1, 2, 8, 16, 64).map(m -> Arguments.of(f, m)));
    }

    private static byte[] quantized(BlockFormat f, float[] w, int n, int k) {
        byte[] q = new byte[(int) (n * f.rowBytes(k))];
        for (int j = 0; j < n; j++) {
            f.quantize(w, j * k, k, q, (int) (j * f.rowBytes(k)));
        }
        return q;
    }

    @ParameterizedTest(name = "{0}, m = {1}")
    @MethodSource("formatsAndRows")
    void matchesTheDequantizedProductWithinTheActivationsRounding(BlockFormat f, int m) {
        int n = 37;
        int k = 512;
        int ldy = n + 5;
        Random r = new Random(f.ordinal() * 100 + m);
        float[] w = new float[n * k];
        for (int i = 0; i < w.length; i++) {
            w[i] = (float) (r.nextGaussian() * 0.05);
        }
        byte[] q = quantized(f, w, n, k);
        float[] deq = new float[n * k];
        f.dequantize(q, 0, deq, 0, n * k);
        float[] x = new float[m * k];
        for (int i = 0; i < x.length; i++) {
            x[i] = (float) r.nextGaussian();
        }
        try (Arena a = Arena.ofConfined()) {
            MemorySegment xs = a.allocateFrom(ValueLayout.JAVA_FLOAT, x);
            MemorySegment ws = a.allocateFrom(ValueLayout.JAVA_BYTE, q);
            MemorySegment ys = a.allocate(4L * m * ldy);
            ys.fill((byte) 0x3F); // 0.75f in every float: the columns past n stay so
            boolean acc = m % 2 == 0;
            dense.linearQuantized(xs, k, ws, f, ys, ldy, m, n, k, acc);
            int block = f.blockElements() == 256 ? 256 : 32;
            float before = Float.intBitsToFloat(0x3F3F3F3F);
            for (int i = 0; i < m; i++) {
                for (int j = 0; j < n; j++) {
                    double ref = acc ? before : 0;
                    double bound = 0;
                    for (int b = 0; b < k / block; b++) {
                        double amax = 0;
                        double wabs = 0;
                        for (int c = b * block; c < (b + 1) * block; c++) {
                            ref += (double) deq[j * k + c] * x[i * k + c];
                            amax = Math.max(amax, Math.abs(x[i * k + c]));
                            wabs += Math.abs(deq[j * k + c]);
                        }
                        bound += wabs * amax / 127 / 2;
                    }
                    bound = bound * 1.01 + 1e-4 * (1 + Math.abs(ref));
                    float got = ys.getAtIndex(ValueLayout.JAVA_FLOAT, (long) i * ldy + j);
                    assertEquals(ref, got, bound, f + " m " + m + " y[" + i + ", " + j + "]");
                }
                for (int j = n; j < ldy; j++) {
                    assertEquals(before, ys.getAtIndex(ValueLayout.JAVA_FLOAT, (long) i * ldy + j), "column " + j);
                }
            }
        }
    }

    @Test
    void embeddingRowsAreTheCodecsDequantizationBitForBit() {
        for (BlockFormat f : BlockFormat.values()) {
            int vocab = 11;
            int dim = 512;
            Random r = new Random(f.ordinal());
            float[] w = new float[vocab * dim];
            for (int i = 0; i < w.length; i++) {
                w[i] = (float) (r.nextGaussian() * 0.3);
            }
            byte[] q = quantized(f, w, vocab, dim);
            float[] deq = new float[vocab * dim];
            f.dequantize(q, 0, deq, 0, vocab * dim);
            int[] ids = {10, 0, 3, 3};
            try (Arena a = Arena.ofConfined()) {
                MemorySegment out = a.allocate(4L * ids.length * dim);
                dense.embeddingQuantized(a.allocateFrom(ValueLayout.JAVA_INT, ids), ids.length,
                        a.allocateFrom(ValueLayout.JAVA_BYTE, q), f, vocab, dim, out);
                for (int i = 0; i < ids.length; i++) {
                    for (int c = 0; c < dim; c++) {
                        assertEquals(Float.floatToRawIntBits(deq[ids[i] * dim + c]),
                                Float.floatToRawIntBits(out.getAtIndex(ValueLayout.JAVA_FLOAT, (long) i * dim + c)),
                                f + " id " + ids[i] + " value " + c);
                    }
                }
                MemorySegment bad = a.allocateFrom(ValueLayout.JAVA_INT, 2, 11);
                var e = assertThrows(IllegalArgumentException.class, () -> dense.embeddingQuantized(bad, 2,
                        a.allocateFrom(ValueLayout.JAVA_BYTE, q), f, vocab, dim, out));
                assertTrue(e.getMessage().contains("token id 11 (ids[1])"), e.getMessage());
            }
        }
    }

    @Test
    void badShapesAndShortSegmentsAreRefusedBeforeTheNativeCall() {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment x = a.allocate(4L * 2 * 256);
            MemorySegment w = a.allocate(BlockFormat.Q4_K.rowBytes(256) * 3);
            MemorySegment y = a.allocate(4L * 2 * 3);
            dense.linearQuantized(x, 256, w, BlockFormat.Q4_K, y, 3, 2, 3, 256, false); // fits exactly
            var e = assertThrows(IllegalArgumentException.class,
                    () -> dense.linearQuantized(x, 256, w, BlockFormat.Q4_K, y, 3, 2, 3, 128, false));
            assertTrue(e.getMessage().contains("whole blocks of 256"), e.getMessage());
            e = assertThrows(IllegalArgumentException.class,
                    () -> dense.linearQuantized(x, 256, w, BlockFormat.Q4_K, y, 3, 2, 4, 256, false));
            assertTrue(e.getMessage().startsWith("ldx 256 must be at least k 256 and ldy 3 at least n 4"), e.getMessage());
            e = assertThrows(IllegalArgumentException.class,
                    () -> dense.linearQuantized(x, 256, w, BlockFormat.Q6_K, y, 3, 2, 3, 256, false));
            assertTrue(e.getMessage().startsWith("w holds"), e.getMessage());
            e = assertThrows(IllegalArgumentException.class,
                    () -> dense.linearQuantized(x, 256, w, BlockFormat.Q4_K, y, 3, 3, 3, 256, false));
            assertTrue(e.getMessage().startsWith("x holds"), e.getMessage());
            e = assertThrows(IllegalArgumentException.class,
                    () -> dense.linearQuantized(x, 256, w, BlockFormat.Q4_K, x.asSlice(8), 3, 2, 3, 256, false));
            assertTrue(e.getMessage().contains("must not overlap"), e.getMessage());
            e = assertThrows(IllegalArgumentException.class, () -> dense.linearQuantized(
                    MemorySegment.ofArray(new float[512]), 256, w, BlockFormat.Q4_K, y, 3, 2, 3, 256, false));
            assertTrue(e.getMessage().contains("native"), e.getMessage());
        }
    }
}
