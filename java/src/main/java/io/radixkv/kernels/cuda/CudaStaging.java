package io.radixkv.kernels.cuda;

import io.radixkv.kernels.BackendMemory;
import java.lang.foreign.MemorySegment;

/**
 * A pinned host buffer and a device buffer for per-step metadata uploads (page tables,
 * qo_indptr, block mappings): the host buffer is filled by Java, then {@link #upload} enqueues
 * ONE asynchronous copy of it on the backend's stream. Both grow geometrically and are never
 * freed before the backend's memory (a superseded buffer may still feed an in-flight copy).
 *
 * <p>Reuse rule: an asynchronous copy reads the host buffer when the stream reaches it, so
 * {@link #host} first waits on the fence recorded after the previous upload (normally already
 * passed: the engine synchronizes once per step before planning the next).
 */
final class CudaStaging {
    /** An event on the backend's stream, recorded after each upload. */
    interface Fence {
        /** Marks the stream position after the upload just enqueued. */
        void record();

        /** Waits on the host until the stream passed the last {@link #record}. */
        void await();
    }

    private final BackendMemory memory;
    private final Fence fence;
    private MemorySegment host;
    private MemorySegment device;
    private boolean pending;

    CudaStaging(BackendMemory memory, Fence fence) {
        if (memory == null || !memory.isDevice() || fence == null) {
            throw new IllegalArgumentException("CudaStaging needs device memory and a fence");
        }
        this.memory = memory;
        this.fence = fence;
    }

    /** A staging whose fence is a CUDA event of {@code memory}'s stream. */
    static CudaStaging of(CudaMemory memory) {
        MemorySegment event = memory.newEvent();
        return new CudaStaging(memory, new Fence() {
            @Override
            public void record() {
                memory.record(event);
            }

            @Override
            public void await() {
                memory.await(event);
            }
        });
    }

    /**
     * The pinned host buffer, at least {@code bytes} long and safe to overwrite: waits for the
     * previous upload to have read it.
     */
    MemorySegment host(long bytes) {
        if (pending) {
            fence.await();
            pending = false;
        }
        if (host == null || host.byteSize() < bytes) {
            host = memory.allocateHost(grown(host, bytes));
        }
        return host;
    }

    /**
     * Enqueues the copy of the first {@code bytes} of the host buffer to the device buffer
     * (grown as needed) and returns the device buffer; the host buffer must not be written
     * until the next {@link #host} call.
     */
    MemorySegment upload(long bytes) {
        if (host == null || host.byteSize() < bytes) {
            throw new IllegalStateException("upload of " + bytes + " bytes without a host buffer that large");
        }
        if (device == null || device.byteSize() < bytes) {
            device = memory.allocate(grown(device, bytes));
        }
        memory.copyFromHostAsync(host, device, bytes);
        fence.record();
        pending = true;
        return device;
    }

    private static long grown(MemorySegment old, long bytes) {
        return Math.max(Math.max(bytes, 4096), old == null ? 0 : 2 * old.byteSize());
    }
}
