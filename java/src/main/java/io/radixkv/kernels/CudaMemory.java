package io.radixkv.kernels;

import io.radixkv.bindings.cuda.cudart_h;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;

/**
 * Device memory owned by Java through the CUDA runtime bindings (cudaMalloc / cudaFree /
 * cudaMemcpy / cudaMemset). Allocations are returned as zero-length-free segments whose
 * address is a device pointer and whose size is the allocation's size (so size checks work);
 * they must never be dereferenced from Java. {@link #close()} frees everything.
 */
final class CudaMemory implements BackendMemory {
    private final List<MemorySegment> allocations = new ArrayList<>();
    private final Arena hostArena = Arena.ofShared();
    private boolean closed;

    CudaMemory() {
        NativeLibrary.loadCudart();
    }

    static void check(String what, int err) {
        if (err != cudart_h.cudaSuccess()) {
            String msg = cudart_h.cudaGetErrorString(err).reinterpret(Long.MAX_VALUE).getString(0);
            throw new NativeException(what, err, msg);
        }
    }

    @Override
    public synchronized MemorySegment allocate(long bytes) {
        Checks.requireNonNegative("bytes", bytes);
        if (closed) {
            throw new IllegalStateException("CudaMemory is closed");
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment cell = arena.allocate(ValueLayout.ADDRESS);
            // cudaMalloc aligns to at least 256 bytes; a 1-byte minimum keeps the pointer non-NULL
            check("cudaMalloc(" + bytes + ")", cudart_h.cudaMalloc(cell, Math.max(bytes, 1)));
            MemorySegment ptr = cell.get(ValueLayout.ADDRESS, 0);
            allocations.add(ptr);
            check("cudaMemset", cudart_h.cudaMemset(ptr, 0, Math.max(bytes, 1)));
            return ptr.reinterpret(bytes);
        }
    }

    /** Host memory for staging (plain off-heap for now; freed at close). */
    @Override
    public synchronized MemorySegment allocateHost(long bytes) {
        Checks.requireNonNegative("bytes", bytes);
        if (closed) {
            throw new IllegalStateException("CudaMemory is closed");
        }
        return hostArena.allocate(Math.max(bytes, 1), 64).asSlice(0, bytes);
    }

    @Override
    public void copyFromHost(MemorySegment src, MemorySegment dst, long bytes) {
        Checks.requireBytes("src", src, bytes);
        Checks.requireBytes("dst", dst, bytes);
        check("cudaMemcpy(HostToDevice)", cudart_h.cudaMemcpy(dst, src, bytes, cudart_h.cudaMemcpyHostToDevice()));
    }

    @Override
    public void copyToHost(MemorySegment src, MemorySegment dst, long bytes) {
        Checks.requireBytes("src", src, bytes);
        Checks.requireBytes("dst", dst, bytes);
        check("cudaMemcpy(DeviceToHost)", cudart_h.cudaMemcpy(dst, src, bytes, cudart_h.cudaMemcpyDeviceToHost()));
    }

    @Override
    public void copy(MemorySegment src, long srcOffset, MemorySegment dst, long dstOffset, long bytes) {
        HostCopies.checkRange("src", src, srcOffset, bytes);
        HostCopies.checkRange("dst", dst, dstOffset, bytes);
        if (bytes > 0) {
            check("cudaMemcpy(DeviceToDevice)", cudart_h.cudaMemcpy(dst.asSlice(dstOffset), src.asSlice(srcOffset), bytes,
                    cudart_h.cudaMemcpyDeviceToDevice()));
        }
    }

    @Override
    public void copyRows(MemorySegment src, long srcOffset, long srcPitch, MemorySegment dst, long dstOffset,
                         long dstPitch, long rowBytes, long rows) {
        HostCopies.checkRows(src, srcOffset, srcPitch, dst, dstOffset, dstPitch, rowBytes, rows);
        for (long r = 0; r < rows && rowBytes > 0; r++) { // TODO(cuda helper): cudaMemcpy2DAsync on the stream
            copy(src, srcOffset + r * srcPitch, dst, dstOffset + r * dstPitch, rowBytes);
        }
    }

    @Override
    public boolean isDevice() {
        return true;
    }

    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        for (MemorySegment p : allocations) {
            cudart_h.cudaFree(p); // errors at teardown are not actionable
        }
        allocations.clear();
        hostArena.close();
    }
}
