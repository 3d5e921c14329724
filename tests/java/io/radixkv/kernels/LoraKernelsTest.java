package io.radixkv.kernels;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.radixkv.kernels.cpu.CpuDenseKernels;
import io.radixkv.kernels.reference.JavaDenseKernels;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * The segmented LoRA kernel (rkv_lora_apply) against the double-precision reference: rows of
 * three adapters and of the base model in one call, the delta added to a column slice of a fused
 * row, base rows and the other columns left bit-for-bit as they were; bad segments refused.
 */
class LoraKernelsTest {
    private static final ValueLayout.OfFloat F = ValueLayout.JAVA_FLOAT;

    private static MemorySegment random(Arena arena, SplittableRandom r, long n) {
        MemorySegment s = arena.allocate(4 * n, 64);
        for (long i = 0; i < n; i++) {
            s.setAtIndex(F, i, (float) (2 * r.nextDouble() - 1));
        }
        return s;
    }

    @Test
    void mixedSegmentsMatchTheDoublePrecisionReferenceAndLeaveBaseRowsAlone() {
        int k = 96;
        int n = 80;
        long pitch = 3L * n + 8;
        long offset = n + 3;
        int rows = 37;
        try (Arena arena = Arena.ofConfined()) {
            SplittableRandom r = new SplittableRandom(3);
            MemorySegment x = random(arena, r, (long) rows * k);
            int[] ranks = {4, 16, 8};
            List<LoraFactors> slots = new ArrayList<>();
            for (int rk : ranks) {
                slots.add(new LoraFactors(random(arena, r, (long) rk * k), random(arena, r, (long) n * rk), rk,
                        (float) (16.0 / rk)));
            }
            slots.add(null); // a slot that does not adapt this projection
            int[] indptr = {0, 5, 6, 17, 20, 30, 31, rows};
            int[] slot = {0, -1, 2, 3, 1, 0, -1};
            MemorySegment y0 = random(arena, r, rows * pitch);
            MemorySegment yc = arena.allocate(y0.byteSize(), 64).copyFrom(y0);
            MemorySegment yj = arena.allocate(y0.byteSize(), 64).copyFrom(y0);
            new CpuDenseKernels().lora(new LoraBatch(x, yc, rows, k, n, pitch, offset, indptr, slot, slot.length, slots, 16));
            new JavaDenseKernels().lora(new LoraBatch(x, yj, rows, k, n, pitch, offset, indptr, slot, slot.length, slots, 16));
            double worst = 0;
            int changed = 0;
            for (int row = 0; row < rows; row++) {
                int seg = 0;
                while (indptr[seg + 1] <= row) {
                    seg++;
                }
                boolean adapted = slot[seg] >= 0 && slots.get(slot[seg]) != null;
                for (long c = 0; c < pitch; c++) {
                    long i = row * pitch + c;
                    float before = y0.getAtIndex(F, i);
                    if (!adapted || c < offset || c >= offset + n) {
                        assertEquals(before, yc.getAtIndex(F, i), "row " + row + " column " + c + " was touched");
                        continue;
                    }
                    changed += yc.getAtIndex(F, i) != before ? 1 : 0;
                    worst = Math.max(worst, Math.abs(yc.getAtIndex(F, i) - yj.getAtIndex(F, i)));
                }
            }
            assertTrue(changed > 20 * n, "only " + changed + " outputs changed");
            assertTrue(worst < 2e-5, "the CPU kernel differs from the reference by " + worst);
        }
    }

    @Test
    void aRowsDeltaIsTheSameBitsAloneAsInABatch() {
        int k = 203; // not a multiple of the vector width: rows start at every alignment
        int n = 300;
        int rows = 24;
        try (Arena arena = Arena.ofConfined()) {
            SplittableRandom r = new SplittableRandom(8);
            MemorySegment x = random(arena, r, (long) rows * k);
            List<LoraFactors> slots = List.of(
                    new LoraFactors(random(arena, r, 8L * k), random(arena, r, (long) n * 8), 8, 2f),
                    new LoraFactors(random(arena, r, 16L * k), random(arena, r, (long) n * 16), 16, 0.5f));
            int[] indptr = {0, 7, 9, rows};
            int[] slot = {1, -1, 0};
            MemorySegment batched = arena.allocate(4L * rows * n, 64);
            CpuDenseKernels cpu = new CpuDenseKernels();
            cpu.lora(new LoraBatch(x, batched, rows, k, n, n, 0, indptr, slot, 3, slots, 16));
            for (int row = 0; row < rows; row++) {
                int s = row < 7 ? 1 : row < 9 ? -1 : 0;
                MemorySegment alone = arena.allocate(4L * n, 64);
                cpu.lora(new LoraBatch(x.asSlice(4L * row * k, 4L * k), alone, 1, k, n, n, 0, new int[] {0, 1},
                        new int[] {s}, 1, slots, 16));
                assertEquals(-1, alone.mismatch(batched.asSlice(4L * row * n, 4L * n)), "row " + row);
            }
        }
    }

    @Test
    void badSegmentsAreRefusedBeforeAnythingIsWritten() {
        try (Arena arena = Arena.ofConfined()) {
            SplittableRandom r = new SplittableRandom(4);
            MemorySegment x = random(arena, r, 4 * 8);
            MemorySegment y = random(arena, r, 4 * 8);
            MemorySegment before = arena.allocate(y.byteSize()).copyFrom(y);
            List<LoraFactors> slots = List.of(new LoraFactors(random(arena, r, 2 * 8), random(arena, r, 8 * 2), 2, 1f));
            int[][][] bad = {{{0, 2, 4}, {0, 1}}, {{0, 3}, {0}}, {{0, 3, 2, 4}, {0, 0, 0}}, {{0, 4}, {-2}}};
            for (int[][] b : bad) {
                assertThrows(IllegalArgumentException.class, () -> new CpuDenseKernels().lora(new LoraBatch(x, y, 4, 8, 8,
                        8, 0, b[0], b[1], b[1].length, slots, 4)), Arrays.deepToString(b));
            }
            assertThrows(IllegalArgumentException.class, () -> new LoraBatch(x, y, 4, 8, 8, 8, 0, new int[] {0, 4},
                    new int[] {0}, 1, slots, 1), "rank over maxRank");
            assertEquals(-1, before.mismatch(y), "a refused call wrote y");
        }
    }
}
