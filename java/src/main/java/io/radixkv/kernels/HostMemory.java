package io.radixkv.kernels;

import io.radixkv.platform.LargePages;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * Host memory from a shared {@link Arena} owned by this object (CPU and Java backends); blocks of
 * 2 MiB or more on transparent huge pages ({@link LargePages}).
 */
public final class HostMemory implements BackendMemory {
    private final Arena arena = Arena.ofShared();
    private boolean closed;

    @Override
    public MemorySegment allocate(long bytes) {
        Checks.requireNonNegative("bytes", bytes);
        return LargePages.allocate(arena, bytes, 64); // zeroed
    }

    @Override
    public void copyFromHost(MemorySegment src, MemorySegment dst, long bytes) {
        MemorySegment.copy(src, 0, dst, 0, bytes);
    }

    @Override
    public void copyToHost(MemorySegment src, MemorySegment dst, long bytes) {
        MemorySegment.copy(src, 0, dst, 0, bytes);
    }

    @Override
    public void copy(MemorySegment src, long srcOffset, MemorySegment dst, long dstOffset, long bytes) {
        HostCopies.copy(src, srcOffset, dst, dstOffset, bytes);
    }

    @Override
    public void copyRows(MemorySegment src, long srcOffset, long srcPitch, MemorySegment dst, long dstOffset,
                         long dstPitch, long rowBytes, long rows) {
        HostCopies.copyRows(src, srcOffset, srcPitch, dst, dstOffset, dstPitch, rowBytes, rows);
    }

    @Override
    public boolean isDevice() {
        return false;
    }

    /** Frees every allocation; idempotent. */
    @Override
    public synchronized void close() {
        if (!closed) {
            closed = true;
            arena.close();
        }
    }
}
