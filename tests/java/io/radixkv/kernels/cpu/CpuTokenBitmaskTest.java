package io.radixkv.kernels.cpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.radixkv.kernels.TokenBitmaskKernels;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * libradixkv's token masks against the plain-Java implementation: the same logits after masking
 * random rows (mixed, all-ones and all-zero words, a vocabulary ending mid-word) through a row
 * index list; bad arguments are refused before the native call.
 */
class CpuTokenBitmaskTest {
    @Test
    void nativeMasksEqualTheJavaReference() {
        SplittableRandom rnd = new SplittableRandom(3);
        try (Arena a = Arena.ofConfined()) {
            for (int vocab : new int[] {1, 33, 1000, 32_001}) {
                int rows = 5;
                MemorySegment x = a.allocate(ValueLayout.JAVA_FLOAT, (long) rows * vocab);
                MemorySegment y = a.allocate(ValueLayout.JAVA_FLOAT, (long) rows * vocab);
                for (long i = 0; i < (long) rows * vocab; i++) {
                    float v = (float) rnd.nextGaussian();
                    x.setAtIndex(ValueLayout.JAVA_FLOAT, i, v);
                    y.setAtIndex(ValueLayout.JAVA_FLOAT, i, v);
                }
                int words = (vocab + 31) / 32;
                int[][] masks = new int[3][words];
                for (int[] m : masks) {
                    for (int w = 0; w < words; w++) {
                        int k = rnd.nextInt(3);
                        m[w] = k == 0 ? -1 : k == 1 ? 0 : rnd.nextInt();
                    }
                }
                int[] rowIndex = {4, 0, 2};
                CpuTokenBitmask.instance().applyTokenBitmask(x, rows, vocab, masks, rowIndex);
                TokenBitmaskKernels.java().applyTokenBitmask(y, rows, vocab, masks, rowIndex);
                assertArrayEquals(y.toArray(ValueLayout.JAVA_FLOAT), x.toArray(ValueLayout.JAVA_FLOAT), "vocab " + vocab);
                long masked = 0;
                for (float v : x.toArray(ValueLayout.JAVA_FLOAT)) {
                    masked += v == Float.NEGATIVE_INFINITY ? 1 : 0;
                }
                assertEquals(true, masked > 0 || vocab == 1);
            }
        }
    }

    @Test
    void badArgumentsAreRefused() {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment x = a.allocate(ValueLayout.JAVA_FLOAT, 64);
            int[][] one = {new int[1]};
            assertThrows(IllegalArgumentException.class,
                    () -> CpuTokenBitmask.instance().applyTokenBitmask(x, 2, 33, one, new int[] {0}), "too few words");
            assertThrows(IllegalArgumentException.class,
                    () -> CpuTokenBitmask.instance().applyTokenBitmask(x, 2, 32, new int[][] {new int[1], new int[1]},
                            new int[] {1, 1}), "a repeated row");
            assertThrows(IllegalArgumentException.class,
                    () -> CpuTokenBitmask.instance().applyTokenBitmask(x, 2, 32, one, new int[] {2}), "a row outside");
            assertThrows(IllegalArgumentException.class,
                    () -> CpuTokenBitmask.instance().applyTokenBitmask(x, 3, 32, one, new int[] {0}), "logits too small");
        }
    }
}
