package io.radixkv.kernels;

import io.radixkv.kernels.reference.JavaConversions;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Random;

/** Random inputs for the KV kernel tests (values with every special case sprinkled in). */
public final class KvTestData {
    private KvTestData() {}

    /**
     * n elements of dtype: mostly Gaussian values of the given spread (reaching past the FP8
     * ranges when spread is large), with NaNs, infinities, zeros, subnormals and random bit
     * patterns mixed in.
     */
    public static MemorySegment values(Arena arena, DType d, long n, float spread, Random rnd) {
        MemorySegment s = arena.allocate(n * d.bytes(), 64);
        for (long i = 0; i < n; i++) {
            int pick = rnd.nextInt(64);
            float x = switch (pick) {
                case 0 -> Float.NaN;
                case 1 -> rnd.nextBoolean() ? Float.POSITIVE_INFINITY : Float.NEGATIVE_INFINITY;
                case 2 -> rnd.nextBoolean() ? 0f : -0f;
                case 3 -> Float.intBitsToFloat(rnd.nextInt(0x00800000)) * (rnd.nextBoolean() ? 1 : -1);
                case 4 -> Float.intBitsToFloat(rnd.nextInt());
                case 5 -> (float) Math.scalb(rnd.nextGaussian(), -12 - rnd.nextInt(10)); // fp8 subnormal range
                default -> (float) (rnd.nextGaussian() * spread);
            };
            if (pick == 4 && d != DType.F32) {
                randomBits(s, i, d, rnd);
            } else {
                JavaConversions.store(s, i, d, x);
            }
        }
        return s;
    }

    private static void randomBits(MemorySegment s, long i, DType d, Random rnd) {
        switch (d.bytes()) {
            case 2 -> s.setAtIndex(ValueLayout.JAVA_SHORT_UNALIGNED, i, (short) rnd.nextInt());
            case 1 -> s.set(ValueLayout.JAVA_BYTE, i, (byte) rnd.nextInt());
            default -> s.setAtIndex(ValueLayout.JAVA_INT_UNALIGNED, i, rnd.nextInt());
        }
    }

    public static MemorySegment randomBytes(Arena arena, long bytes, Random rnd) {
        MemorySegment s = arena.allocate(bytes, 64);
        byte[] b = new byte[(int) Math.min(bytes, 1 << 20)];
        for (long off = 0; off < bytes; off += b.length) {
            rnd.nextBytes(b);
            int len = (int) Math.min(b.length, bytes - off);
            MemorySegment.copy(MemorySegment.ofArray(b), 0, s, off, len);
        }
        return s;
    }

    public static MemorySegment copyOf(Arena arena, MemorySegment s) {
        MemorySegment c = arena.allocate(s.byteSize(), 64);
        c.copyFrom(s);
        return c;
    }

    public static MemorySegment longs(Arena arena, long... v) {
        MemorySegment s = arena.allocate(ValueLayout.JAVA_LONG, Math.max(v.length, 1));
        for (int i = 0; i < v.length; i++) {
            s.setAtIndex(ValueLayout.JAVA_LONG, i, v[i]);
        }
        return s.asSlice(0, 8L * v.length);
    }

    /** First differing byte offset, or -1. */
    public static long mismatch(MemorySegment a, MemorySegment b) {
        return a.mismatch(b);
    }
}
