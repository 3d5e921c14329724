package io.radixkv.kernels;

import java.lang.foreign.MemorySegment;

/** Bounds-checked copies within host memory: the {@link BackendMemory#copy}/{@link BackendMemory#copyRows} of host backends. */
public final class HostCopies {
    private HostCopies() {}

    public static void copy(MemorySegment src, long srcOffset, MemorySegment dst, long dstOffset, long bytes) {
        MemorySegment.copy(src, srcOffset, dst, dstOffset, bytes); // MemorySegment checks both ranges
    }

    public static void copyRows(MemorySegment src, long srcOffset, long srcPitch, MemorySegment dst, long dstOffset,
                         long dstPitch, long rowBytes, long rows) {
        checkRows(src, srcOffset, srcPitch, dst, dstOffset, dstPitch, rowBytes, rows);
        for (long r = 0; r < rows; r++) {
            MemorySegment.copy(src, srcOffset + r * srcPitch, dst, dstOffset + r * dstPitch, rowBytes);
        }
    }

    /** The checks of a 2-D copy, shared with device memory (whose segments carry their allocation size). */
    public static void checkRows(MemorySegment src, long srcOffset, long srcPitch, MemorySegment dst, long dstOffset,
                          long dstPitch, long rowBytes, long rows) {
        Checks.requireNonNegative("srcOffset", srcOffset);
        Checks.requireNonNegative("dstOffset", dstOffset);
        Checks.requireNonNegative("rowBytes", rowBytes);
        Checks.requireNonNegative("rows", rows);
        if (rows == 0 || rowBytes == 0) {
            return;
        }
        if (srcPitch < rowBytes || dstPitch < rowBytes) {
            throw new IllegalArgumentException("pitches (src " + srcPitch + ", dst " + dstPitch
                    + ") must be at least rowBytes " + rowBytes);
        }
        long srcEnd = Math.addExact(srcOffset, Math.addExact(Math.multiplyExact(rows - 1, srcPitch), rowBytes));
        long dstEnd = Math.addExact(dstOffset, Math.addExact(Math.multiplyExact(rows - 1, dstPitch), rowBytes));
        if (srcEnd > src.byteSize()) {
            throw new IllegalArgumentException("copyRows reads up to byte " + srcEnd + " of a " + src.byteSize()
                    + "-byte source");
        }
        if (dstEnd > dst.byteSize()) {
            throw new IllegalArgumentException("copyRows writes up to byte " + dstEnd + " of a " + dst.byteSize()
                    + "-byte destination");
        }
    }

    /** The checks of a 1-D copy for device segments (host segments check themselves). */
    public static void checkRange(String what, MemorySegment s, long offset, long bytes) {
        Checks.requireNonNegative(what + " offset", offset);
        Checks.requireNonNegative("bytes", bytes);
        if (Math.addExact(offset, bytes) > s.byteSize()) {
            throw new IllegalArgumentException(what + " range [" + offset + ", " + (offset + bytes)
                    + ") exceeds its " + s.byteSize() + " bytes");
        }
    }
}
