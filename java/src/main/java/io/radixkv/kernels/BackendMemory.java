package io.radixkv.kernels;

import java.lang.foreign.MemorySegment;

/**
 * Allocates the memory a backend's kernels read and write, and moves bytes between it and
 * the host. For the CPU backends this is an {@link java.lang.foreign.Arena}; for CUDA it is
 * cudaMalloc'd device memory (segments whose address is a device pointer: never dereference
 * them from Java). Everything allocated is freed by {@link #close()}.
 */
public interface BackendMemory extends AutoCloseable {
    /** Zero-filled allocation of {@code bytes} bytes aligned to at least 64 bytes. */
    MemorySegment allocate(long bytes);

    /** Copies {@code bytes} from host segment {@code src} to backend segment {@code dst}. */
    void copyFromHost(MemorySegment src, MemorySegment dst, long bytes);

    /** Copies {@code bytes} from backend segment {@code src} to host segment {@code dst}. */
    void copyToHost(MemorySegment src, MemorySegment dst, long bytes);

    boolean isDevice();

    @Override
    void close();
}
