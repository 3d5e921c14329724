package io.radixkv.kernels.cuda;

import io.radixkv.bindings.cuda.cudart_h;
import io.radixkv.kernels.BackendMemory;
import io.radixkv.kernels.Checks;
import io.radixkv.kernels.HostCopies;
import io.radixkv.kernels.NativeException;
import io.radixkv.kernels.StepGraph;
import io.radixkv.kernels.cpu.NativeLibrary;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;

/**
 * Device memory and the one CUDA stream of a CUDA backend, owned by Java through the CUDA
 * runtime bindings. Device allocations are segments whose address is a device pointer and whose
 * size is the allocation's size (so size checks work); they must never be dereferenced from
 * Java. Pinned host memory ({@link #allocateHost}) is ordinary readable memory.
 *
 * <p>Every copy is enqueued on {@link #stream()} (a non-blocking stream: it does not
 * synchronize with the legacy default stream), the stream every kernel of the backend is
 * launched on, so copies and kernels run in the order they were issued. {@link #copyFromHost}
 * and {@link #copyToHost} wait for the stream; {@link #copyFromHostAsync}, {@link #copy} and
 * {@link #copyRows} do not. {@link #close()} runs the registered close actions, waits for the
 * stream, frees everything and destroys the stream.
 */
final class CudaMemory implements BackendMemory {
    private final List<MemorySegment> allocations = new ArrayList<>();
    private final List<MemorySegment> hostAllocations = new ArrayList<>();
    private final List<Runnable> onClose = new ArrayList<>();
    private final MemorySegment stream;
    private boolean closed;

    CudaMemory() {
        NativeLibrary.loadCudart();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment cell = arena.allocate(ValueLayout.ADDRESS);
            check("cudaStreamCreateWithFlags", cudart_h.cudaStreamCreateWithFlags(cell, cudart_h.cudaStreamNonBlocking()));
            stream = cell.get(ValueLayout.ADDRESS, 0);
        }
    }

    static void check(String what, int err) {
        if (err != cudart_h.cudaSuccess()) {
            String msg = cudart_h.cudaGetErrorString(err).reinterpret(Long.MAX_VALUE).getString(0);
            throw new NativeException(what, err, msg);
        }
    }

    /** The backend's cudaStream_t: every kernel and copy of the backend is ordered on it. */
    MemorySegment stream() {
        return stream;
    }

    /** Runs {@code action} at {@link #close()}, after the stream finished and before memory is freed (LIFO). */
    synchronized void onClose(Runnable action) {
        onClose.add(action);
    }

    private void open() {
        if (closed) {
            throw new IllegalStateException("CudaMemory is closed");
        }
    }

    @Override
    public synchronized MemorySegment allocate(long bytes) {
        Checks.requireNonNegative("bytes", bytes);
        open();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment cell = arena.allocate(ValueLayout.ADDRESS);
            // cudaMalloc aligns to at least 256 bytes; a 1-byte minimum keeps the pointer non-NULL
            check("cudaMalloc(" + bytes + ")", cudart_h.cudaMalloc(cell, Math.max(bytes, 1)));
            MemorySegment ptr = cell.get(ValueLayout.ADDRESS, 0);
            allocations.add(ptr);
            // zeroed in stream order: kernels issued later on the stream see zeros
            check("cudaMemsetAsync", cudart_h.cudaMemsetAsync(ptr, 0, Math.max(bytes, 1), stream));
            return ptr.reinterpret(bytes);
        }
    }

    /** Page-locked (pinned) host memory: {@link #copyFromHostAsync} from it is truly asynchronous. */
    @Override
    public synchronized MemorySegment allocateHost(long bytes) {
        Checks.requireNonNegative("bytes", bytes);
        open();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment cell = arena.allocate(ValueLayout.ADDRESS);
            check("cudaMallocHost(" + bytes + ")", cudart_h.cudaMallocHost(cell, Math.max(bytes, 1)));
            MemorySegment ptr = cell.get(ValueLayout.ADDRESS, 0);
            hostAllocations.add(ptr);
            MemorySegment seg = ptr.reinterpret(bytes);
            seg.fill((byte) 0);
            return seg;
        }
    }

    @Override
    public void copyFromHost(MemorySegment src, MemorySegment dst, long bytes) {
        copyFromHostAsync(src, dst, bytes);
        synchronize();
    }

    @Override
    public void copyFromHostAsync(MemorySegment src, MemorySegment dst, long bytes) {
        Checks.requireBytes("src", src, bytes);
        Checks.requireBytes("dst", dst, bytes);
        if (bytes > 0) {
            check("cudaMemcpyAsync(HostToDevice)", cudart_h.cudaMemcpyAsync(dst, src, bytes,
                    cudart_h.cudaMemcpyHostToDevice(), stream));
        }
    }

    @Override
    public void copyToHost(MemorySegment src, MemorySegment dst, long bytes) {
        Checks.requireBytes("src", src, bytes);
        Checks.requireBytes("dst", dst, bytes);
        if (bytes > 0) {
            check("cudaMemcpyAsync(DeviceToHost)", cudart_h.cudaMemcpyAsync(dst, src, bytes,
                    cudart_h.cudaMemcpyDeviceToHost(), stream));
        }
        synchronize();
    }

    @Override
    public void copy(MemorySegment src, long srcOffset, MemorySegment dst, long dstOffset, long bytes) {
        HostCopies.checkRange("src", src, srcOffset, bytes);
        HostCopies.checkRange("dst", dst, dstOffset, bytes);
        if (bytes > 0) {
            check("cudaMemcpyAsync(DeviceToDevice)", cudart_h.cudaMemcpyAsync(dst.asSlice(dstOffset),
                    src.asSlice(srcOffset), bytes, cudart_h.cudaMemcpyDeviceToDevice(), stream));
        }
    }

    @Override
    public void copyRows(MemorySegment src, long srcOffset, long srcPitch, MemorySegment dst, long dstOffset,
                         long dstPitch, long rowBytes, long rows) {
        HostCopies.checkRows(src, srcOffset, srcPitch, dst, dstOffset, dstPitch, rowBytes, rows);
        if (rows > 0 && rowBytes > 0) {
            check("cudaMemcpy2DAsync(DeviceToDevice)", cudart_h.cudaMemcpy2DAsync(dst.asSlice(dstOffset), dstPitch,
                    src.asSlice(srcOffset), srcPitch, rowBytes, rows, cudart_h.cudaMemcpyDeviceToDevice(), stream));
        }
    }

    @Override
    public void synchronize() {
        check("cudaStreamSynchronize", cudart_h.cudaStreamSynchronize(stream));
    }

    /** A cudaEvent_t without timing, destroyed at {@link #close()}: an upload fence ({@link #record}, {@link #await}). */
    synchronized MemorySegment newEvent() {
        open();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment cell = arena.allocate(ValueLayout.ADDRESS);
            check("cudaEventCreateWithFlags", cudart_h.cudaEventCreateWithFlags(cell, cudart_h.cudaEventDisableTiming()));
            MemorySegment event = cell.get(ValueLayout.ADDRESS, 0);
            onClose(() -> cudart_h.cudaEventDestroy(event));
            return event;
        }
    }

    /** Records {@code event} on the stream: it completes once everything issued before it has. */
    void record(MemorySegment event) {
        check("cudaEventRecord", cudart_h.cudaEventRecord(event, stream));
    }

    /** Waits on the host until {@code event} (and so everything issued before its record) completed. */
    void await(MemorySegment event) {
        check("cudaEventSynchronize", cudart_h.cudaEventSynchronize(event));
    }

    @Override
    public boolean isDevice() {
        return true;
    }

    /**
     * CUDA stream capture of {@code issue} (relaxed mode) into an instantiated graph; null, with
     * the stream and the error state as before, when the capture or instantiation fails (the
     * caller then runs the work directly). An exception from {@code issue} ends the capture and
     * propagates.
     */
    @Override
    public StepGraph capture(Runnable issue) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment cell = arena.allocate(ValueLayout.ADDRESS);
            if (cudart_h.cudaStreamBeginCapture(stream, cudart_h.cudaStreamCaptureModeRelaxed()) != cudart_h.cudaSuccess()) {
                cudart_h.cudaGetLastError();
                return null;
            }
            try {
                issue.run();
            } catch (RuntimeException | Error e) {
                endCapture(cell);
                throw e;
            }
            MemorySegment graph = endCapture(cell);
            if (graph == null) {
                return null;
            }
            int err = cudart_h.cudaGraphInstantiate(cell, graph, 0L);
            cudart_h.cudaGraphDestroy(graph);
            if (err != cudart_h.cudaSuccess()) {
                cudart_h.cudaGetLastError();
                return null;
            }
            return new CudaGraph(cell.get(ValueLayout.ADDRESS, 0), stream);
        }
    }

    /** Ends the stream's capture: the graph, or null (error state cleared) when the capture was invalidated. */
    private MemorySegment endCapture(MemorySegment cell) {
        cell.set(ValueLayout.ADDRESS, 0, MemorySegment.NULL);
        int err = cudart_h.cudaStreamEndCapture(stream, cell);
        MemorySegment graph = cell.get(ValueLayout.ADDRESS, 0);
        if (err != cudart_h.cudaSuccess() || graph.equals(MemorySegment.NULL)) {
            if (!graph.equals(MemorySegment.NULL)) {
                cudart_h.cudaGraphDestroy(graph);
            }
            cudart_h.cudaGetLastError(); // the capture's error must not surface at the next launch
            return null;
        }
        return graph;
    }

    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        // errors at teardown are not actionable: free what can be freed
        cudart_h.cudaStreamSynchronize(stream);
        for (int i = onClose.size() - 1; i >= 0; i--) {
            try {
                onClose.get(i).run();
            } catch (RuntimeException e) {
                // keep releasing the rest
            }
        }
        onClose.clear();
        for (MemorySegment p : allocations) {
            cudart_h.cudaFree(p);
        }
        allocations.clear();
        for (MemorySegment p : hostAllocations) {
            cudart_h.cudaFreeHost(p);
        }
        hostAllocations.clear();
        cudart_h.cudaStreamDestroy(stream);
    }
}
