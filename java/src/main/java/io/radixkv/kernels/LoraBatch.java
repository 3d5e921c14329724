package io.radixkv.kernels;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * One projection's LoRA deltas over a batch whose rows come in segments by adapter slot (the
 * SGMV shape), for {@link DenseKernels#lora}: for every row of segment {@code i} whose slot
 * {@code s = segSlot[i]} has factors, {@code y[row, yOffset + j] += scale_s · (B_s (A_s x[row]))[j]}
 * for {@code j < n}; rows of slot -1 (the base model) and slots with no factors for this
 * projection are left as they are.
 *
 * @param x {@code [rows, k]} f32
 * @param y {@code [rows, yPitch]} f32; the delta goes to the column slice {@code [yOffset, yOffset + n)}
 * @param rows rows of the batch
 * @param k input features
 * @param n output features of this projection
 * @param yPitch floats per row of y (a fused q|k|v or gate|up row)
 * @param yOffset first column of this projection in a y row
 * @param segIndptr {@code [segments + 1]}: segment i is rows {@code segIndptr[i] .. segIndptr[i+1])}
 * @param segSlot {@code [segments]}: each segment's slot, -1 for none
 * @param segments number of segments
 * @param slots the slots' factors of this projection (null where a slot does not adapt it)
 * @param maxRank bound on every slot's rank (sizes the kernels' scratch)
 */
public record LoraBatch(MemorySegment x, MemorySegment y, int rows, int k, int n, long yPitch, long yOffset,
                        int[] segIndptr, int[] segSlot, int segments, List<LoraFactors> slots, int maxRank) {
    public LoraBatch {
        Checks.requireNonNegative("rows", rows);
        Checks.requirePositive("k", k);
        Checks.requirePositive("n", n);
        if (yOffset < 0 || yOffset + n > yPitch) {
            throw new IllegalArgumentException("columns [" + yOffset + ", " + (yOffset + n) + ") lie outside a y row of "
                    + yPitch);
        }
        Checks.requireNonNegative("segments", segments);
        if (segIndptr.length < segments + 1 || segSlot.length < segments) {
            throw new IllegalArgumentException("segIndptr / segSlot are shorter than " + segments + " segments");
        }
        slots = Collections.unmodifiableList(new ArrayList<>(slots)); // nulls allowed: slots without this projection
        if (rows > 0) {
            if (segments == 0 || segIndptr[0] != 0 || segIndptr[segments] != rows) {
                throw new IllegalArgumentException("segIndptr must run from 0 to rows (" + rows + ")");
            }
            Checks.requireElements("x", x, (long) rows * k, DType.F32);
            Checks.requireElements("y", y, (long) rows * yPitch, DType.F32);
            DenseChecks.noOverlap("y", y, 4L * rows * yPitch, "x", x, 4L * rows * k);
        }
        for (int i = 0; i < segments; i++) {
            if (segIndptr[i] > segIndptr[i + 1]) {
                throw new IllegalArgumentException("segIndptr decreases at segment " + i);
            }
            int s = segSlot[i];
            if (s < -1 || s >= slots.size()) {
                throw new IllegalArgumentException("segSlot[" + i + "] = " + s + " is outside [-1, " + slots.size() + ")");
            }
            LoraFactors f = s < 0 ? null : slots.get(s);
            if (f != null) {
                if (f.rank() > maxRank) {
                    throw new IllegalArgumentException("slot " + s + " has rank " + f.rank() + " over maxRank " + maxRank);
                }
                Checks.requireElements("a of slot " + s, f.a(), (long) f.rank() * k, DType.F32);
                Checks.requireElements("b of slot " + s, f.b(), (long) n * f.rank(), DType.F32);
            }
        }
    }

    /** The factors row {@code row}'s segment uses, or null (binary search over the segments). */
    public LoraFactors factorsOf(int row) {
        int lo = 0;
        int hi = segments - 1;
        while (lo < hi) {
            int mid = (lo + hi + 1) >>> 1;
            if (segIndptr[mid] <= row) {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        int s = segSlot[lo];
        return s < 0 ? null : slots.get(s);
    }
}
