package io.radixkv.kernels;

import java.lang.foreign.MemorySegment;

/**
 * Allocates the memory a backend's kernels read and write, and moves bytes between it and
 * the host. For the CPU backends this is an {@link java.lang.foreign.Arena}; for CUDA it is
 * cudaMalloc'd device memory (segments whose address is a device pointer: never dereference
 * them from Java) and every copy is ordered on the backend's stream, after the kernels issued
 * before it. Everything allocated is freed by {@link #close()}.
 */
public interface BackendMemory extends AutoCloseable {
    /** Zero-filled allocation of {@code bytes} bytes aligned to at least 64 bytes. */
    MemorySegment allocate(long bytes);

    /**
     * Zero-filled host memory that Java reads and writes and this backend copies from and to
     * fastest (page-locked for CUDA, so {@link #copyFromHostAsync} really is asynchronous);
     * freed with this memory. Host backends return plain {@link #allocate} memory; device
     * memory must override this (its {@link #allocate} is not host memory).
     */
    default MemorySegment allocateHost(long bytes) {
        if (isDevice()) {
            throw new UnsupportedOperationException(getClass().getSimpleName() + " must provide host staging memory");
        }
        return allocate(bytes);
    }

    /**
     * Copies {@code bytes} from host segment {@code src} to backend segment {@code dst}; returns
     * once {@code src} may be reused.
     */
    void copyFromHost(MemorySegment src, MemorySegment dst, long bytes);

    /**
     * Enqueues a copy of {@code bytes} from host segment {@code src} (ideally {@link #allocateHost}
     * memory) to backend segment {@code dst} and returns at once: {@code src} must stay unchanged
     * until {@link #synchronize()} (host backends copy at once).
     */
    default void copyFromHostAsync(MemorySegment src, MemorySegment dst, long bytes) {
        copyFromHost(src, dst, bytes);
    }

    /**
     * Copies {@code bytes} from backend segment {@code src} to host segment {@code dst}, after
     * every kernel issued before it has finished; returns when {@code dst} holds the bytes.
     */
    void copyToHost(MemorySegment src, MemorySegment dst, long bytes);

    /**
     * {@code dst[dstOffset ..] = src[srcOffset ..]}, {@code bytes} bytes, both backend memory
     * (may be the same segment, not overlapping ranges); ordered like a kernel.
     */
    void copy(MemorySegment src, long srcOffset, MemorySegment dst, long dstOffset, long bytes);

    /**
     * A 2-D copy within backend memory: for r &lt; rows, {@code rowBytes} bytes from
     * {@code src + srcOffset + r*srcPitch} to {@code dst + dstOffset + r*dstPitch}; ordered like a
     * kernel. Used to slice column blocks out of row-major activations.
     */
    void copyRows(MemorySegment src, long srcOffset, long srcPitch, MemorySegment dst, long dstOffset, long dstPitch,
                  long rowBytes, long rows);

    /**
     * Records the kernels and copies {@code issue} enqueues on this memory's stream as a
     * {@link StepGraph}, without running them (CUDA stream capture): launching the graph later
     * replays them with the same arguments and buffers. {@code issue} must not synchronize or
     * read device memory back. Returns null when this memory cannot capture (host memory, or
     * a capture that failed: the caller then runs the work directly).
     */
    default StepGraph capture(Runnable issue) {
        return null;
    }

    /** Waits until every copy and kernel issued on this memory's stream has finished (host: nothing to wait for). */
    default void synchronize() {}

    boolean isDevice();

    @Override
    void close();
}
