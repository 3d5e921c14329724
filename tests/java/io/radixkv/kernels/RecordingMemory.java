package io.radixkv.kernels;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;

/**
 * Test memory: host memory of its own arena that may claim to be a device (so the code under
 * test takes its device path while the kernels stay on the CPU), logging the transfers in
 * issue order: {@code "allocateHost N"}, {@code "copyFromHost N"} (synchronous upload),
 * {@code "upload N"} (asynchronous upload), {@code "download N"}, {@code "sync"}. Device
 * allocations are counted, not logged.
 */
public final class RecordingMemory implements BackendMemory {
    private final Arena arena = Arena.ofShared();
    private final boolean device;
    private final List<String> log;
    private int allocations;
    private boolean captures;

    /** @param device what {@link #isDevice()} claims */
    public RecordingMemory(boolean device) {
        this(device, new ArrayList<>());
    }

    /** Logging into {@code log} (shared with the test's other stubs, to see one order). */
    public RecordingMemory(boolean device, List<String> log) {
        this.device = device;
        this.log = log;
    }

    public List<String> log() {
        return log;
    }

    /** Entries of operation {@code op} ("upload", "download", ...). */
    public long count(String op) {
        return log.stream().filter(e -> e.equals(op) || e.startsWith(op + " ")).count();
    }

    /** Bytes moved by operation {@code op}. */
    public long bytes(String op) {
        return log.stream().filter(e -> e.startsWith(op + " ")).mapToLong(e -> Long.parseLong(e.substring(op.length() + 1)))
                .sum();
    }

    /**
     * Lets {@link #capture} record (logging "capture"): its graphs log "launch" and re-run the
     * recorded work, as a replay re-runs the recorded kernels. Off: capture returns null.
     */
    public void enableCapture(boolean on) {
        captures = on;
    }

    @Override
    public StepGraph capture(Runnable issue) {
        if (!captures) {
            return null;
        }
        log.add("capture");
        return new StepGraph() {
            @Override
            public void launch() {
                log.add("launch");
                issue.run();
            }

            @Override
            public void close() {
                log.add("close-graph");
            }
        };
    }

    /** {@link #allocate} calls so far. */
    public int allocations() {
        return allocations;
    }

    @Override
    public MemorySegment allocate(long bytes) {
        Checks.requireNonNegative("bytes", bytes);
        allocations++;
        return arena.allocate(bytes, 64);
    }

    @Override
    public MemorySegment allocateHost(long bytes) {
        Checks.requireNonNegative("bytes", bytes);
        log.add("allocateHost " + bytes);
        return arena.allocate(bytes, 64);
    }

    @Override
    public void copyFromHost(MemorySegment src, MemorySegment dst, long bytes) {
        log.add("copyFromHost " + bytes);
        MemorySegment.copy(src, 0, dst, 0, bytes);
    }

    @Override
    public void copyFromHostAsync(MemorySegment src, MemorySegment dst, long bytes) {
        log.add("upload " + bytes);
        MemorySegment.copy(src, 0, dst, 0, bytes);
    }

    @Override
    public void copyToHost(MemorySegment src, MemorySegment dst, long bytes) {
        log.add("download " + bytes);
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
    public void synchronize() {
        log.add("sync");
    }

    @Override
    public boolean isDevice() {
        return device;
    }

    @Override
    public void close() {
        arena.close();
    }
}
