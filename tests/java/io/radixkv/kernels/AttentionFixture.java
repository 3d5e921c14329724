package io.radixkv.kernels;

import io.radixkv.kernels.reference.JavaAttentionKernels;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.fail;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.SplittableRandom;

/**
 * Test data for the attention kernels: a K/V pool of any cache dtype filled with random values
 * written by this class's own encoders (not the scatter kernel), a page table whose pages are
 * randomly shuffled across the pool (non-contiguous), random queries, and comparisons with
 * dtype-appropriate tolerances.
 */
public final class AttentionFixture implements AutoCloseable {
    public final Arena arena = Arena.ofConfined();
    public final PagedKvLayout layout;
    public final KvCacheView cache;
    public final long[] lens;
    public final int[][] pages; // per sequence, in order
    public final SplittableRandom rnd;

    public AttentionFixture(DType cacheDtype, int pageSize, int numKvHeads, int headDim, long[] lens, long seed) {
        this.rnd = new SplittableRandom(seed);
        this.lens = lens.clone();
        int needed = 0;
        for (long len : lens) {
            needed += (int) ((len + pageSize - 1) / pageSize);
        }
        int numPages = needed + 3 + rnd.nextInt(5); // spare pages never referenced
        this.layout = new PagedKvLayout(cacheDtype, numPages, pageSize, numKvHeads, headDim);
        List<Integer> ids = new ArrayList<>();
        for (int i = 0; i < numPages; i++) {
            ids.add(i);
        }
        Collections.shuffle(ids, new java.util.Random(seed));
        pages = new int[lens.length][];
        int next = 0;
        for (int b = 0; b < lens.length; b++) {
            int n = (int) ((lens[b] + pageSize - 1) / pageSize);
            pages[b] = new int[n];
            for (int i = 0; i < n; i++) {
                pages[b][i] = ids.get(next++);
            }
        }
        MemorySegment k = arena.allocate(layout.poolBytes(), 64);
        MemorySegment v = arena.allocate(layout.poolBytes(), 64);
        fill(k, cacheDtype, layout.slots() * layout.tokenElements());
        fill(v, cacheDtype, layout.slots() * layout.tokenElements());
        float kScale = cacheDtype.isFp8() ? 0.75f : 1f;
        float vScale = cacheDtype.isFp8() ? 0.5f : 1f;
        this.cache = new KvCacheView(k, v, layout, kScale, vScale);
    }

    /** Page table of all sequences. */
    public PageTableCsr table() {
        int[][] sub = pages;
        long[] l = lens;
        return table(sub, l);
    }

    /** Page table over given page lists and lengths (sub-ranges of this fixture's sequences). */
    public PageTableCsr table(int[][] seqPages, long[] seqLens) {
        int batch = seqPages.length;
        int nnz = 0;
        for (int[] p : seqPages) {
            nnz += p.length;
        }
        MemorySegment indptr = arena.allocate(4L * (batch + 1));
        MemorySegment indices = arena.allocate(Math.max(4L, 4L * nnz));
        MemorySegment last = arena.allocate(Math.max(4L, 4L * batch));
        int pos = 0;
        for (int b = 0; b < batch; b++) {
            indptr.setAtIndex(ValueLayout.JAVA_INT, b, pos);
            for (int p : seqPages[b]) {
                indices.setAtIndex(ValueLayout.JAVA_INT, pos++, p);
            }
            long len = seqLens[b];
            int lastLen = len == 0 ? 0 : (int) (len - (long) (seqPages[b].length - 1) * layout.pageSize());
            last.setAtIndex(ValueLayout.JAVA_INT, b, len == 0 ? 1 : lastLen);
        }
        indptr.setAtIndex(ValueLayout.JAVA_INT, batch, pos);
        return new PageTableCsr(indptr, indices, last, batch);
    }

    /** The first {@code len} tokens of sequence b as its own page list. */
    public int[] prefixPages(int b, long len) {
        int n = (int) ((len + layout.pageSize() - 1) / layout.pageSize());
        return java.util.Arrays.copyOf(pages[b], n);
    }

    public MemorySegment ints(int... values) {
        MemorySegment s = arena.allocate(Math.max(4L, 4L * values.length));
        for (int i = 0; i < values.length; i++) {
            s.setAtIndex(ValueLayout.JAVA_INT, i, values[i]);
        }
        return s;
    }

    /** Random tensor of n elements in dtype (values in [-1, 1]). */
    public MemorySegment randomTensor(DType dtype, long n) {
        MemorySegment s = arena.allocate(Math.max(4L, n * dtype.bytes()), 64);
        for (long i = 0; i < n; i++) {
            float x = (float) (rnd.nextDouble() * 2 - 1);
            JavaAttentionKernels.store(s, dtype, i, x);
        }
        return s;
    }

    /** n elements of dtype filled with a sentinel pattern (to detect writes). */
    public MemorySegment sentinel(DType dtype, long n) {
        MemorySegment s = arena.allocate(Math.max(4L, n * dtype.bytes()), 64);
        s.fill((byte) 0x5A);
        return s;
    }

    private void fill(MemorySegment s, DType dtype, long n) {
        for (long i = 0; i < n; i++) {
            switch (dtype) {
                case FP8_E4M3 -> s.set(ValueLayout.JAVA_BYTE, i, (byte) randomFp8(4, 3, 9));
                case FP8_E5M2 -> s.set(ValueLayout.JAVA_BYTE, i, (byte) randomFp8(5, 2, 17));
                default -> JavaAttentionKernels.store(s, dtype, i, (float) (rnd.nextDouble() * 2 - 1));
            }
        }
    }

    /** A random finite fp8 code with biased exponent below maxExp (subnormals included). */
    private int randomFp8(int expBits, int manBits, int maxExp) {
        int exp = rnd.nextInt(maxExp);
        int man = rnd.nextInt(1 << manBits);
        int sign = rnd.nextBoolean() ? 0x80 : 0;
        return sign | (exp << manBits) | man;
    }

    public static float[] toFloats(MemorySegment s, DType dtype, long n) {
        float[] r = new float[(int) n];
        for (int i = 0; i < n; i++) {
            r[i] = (float) JavaAttentionKernels.load(s, dtype, i);
        }
        return r;
    }

    /** Absolute tolerance for outputs of |value| <= ~1 stored in outDtype from a cacheDtype cache. */
    public static double tolerance(DType cacheDtype, DType outDtype) {
        double accumulate = switch (cacheDtype) {
            case F32 -> 2e-5;
            case F16, BF16 -> 4e-5;
            case FP8_E4M3, FP8_E5M2 -> 1e-4; // larger dequantized magnitudes, sharper softmax
        };
        double rounding = switch (outDtype) {
            case F16 -> 1.0 / 1024; // one f16 ulp near 1 (both sides round independently)
            case BF16 -> 1.0 / 128;
            default -> 0;
        };
        return accumulate + rounding;
    }

    public static void assertClose(String what, float[] expected, float[] actual, double tol) {
        assertEquals(expected.length, actual.length, what + ": length");
        for (int i = 0; i < expected.length; i++) {
            double e = expected[i];
            double a = actual[i];
            if (Double.isInfinite(e) || Double.isInfinite(a)) {
                if (e != a) {
                    fail(what + "[" + i + "]: expected " + e + " but was " + a);
                }
                continue;
            }
            if (Double.isNaN(a) || Math.abs(e - a) > tol * Math.max(1, Math.abs(e))) {
                fail(what + "[" + i + "]: expected " + e + " but was " + a + " (tolerance " + tol + ")");
            }
        }
    }

    @Override
    public void close() {
        arena.close();
    }
}
