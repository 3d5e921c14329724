package io.radixkv.kernels.cuda;

import io.radixkv.bindings.radixkv_h;
import io.radixkv.kernels.BackendMemory;
import io.radixkv.kernels.NativeException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * The CUDA backend's device error record (radixkv.h: {@code RKV_CUDA_ERROR_RECORD_SLOTS} int64:
 * code, row, bad value, bound). Kernels that find bad device-resident input (a slot, token id or
 * page id out of range) skip that row and record the first such error there instead of
 * failing or waiting; {@link #check()} reads it once per step.
 */
final class CudaDeviceErrors {
    private static final int SLOTS = radixkv_h.RKV_CUDA_ERROR_RECORD_SLOTS();
    private final BackendMemory memory;
    private final MemorySegment record;  // device
    private final MemorySegment host;    // pinned copy
    private final MemorySegment zeros;   // pinned zeros

    CudaDeviceErrors(BackendMemory memory) {
        this.memory = memory;
        this.record = memory.allocate(8L * SLOTS);
        this.host = memory.allocateHost(8L * SLOTS);
        this.zeros = memory.allocateHost(8L * SLOTS);
    }

    /** The device record to pass to the kernels' {@code error_record} parameter. */
    MemorySegment record() {
        return record;
    }

    /**
     * Copies the record to the host (one small copy that waits for the stream: call it after
     * the step's synchronization), resets it and throws when a kernel recorded an error.
     *
     * @throws NativeException naming the kernel, the row and the bad value
     */
    void check() {
        memory.copyToHost(record, host, 8L * SLOTS);
        long code = host.getAtIndex(ValueLayout.JAVA_LONG, 0);
        if (code == radixkv_h.RKV_CUDA_DEVERR_NONE()) {
            return;
        }
        memory.copyFromHost(zeros, record, 8L * SLOTS);
        long row = host.getAtIndex(ValueLayout.JAVA_LONG, 1);
        long value = host.getAtIndex(ValueLayout.JAVA_LONG, 2);
        long bound = host.getAtIndex(ValueLayout.JAVA_LONG, 3);
        throw describe(code, row, value, bound);
    }

    static NativeException describe(long code, long row, long value, long bound) {
        int status = radixkv_h.RKV_ERR_INVALID_ARGUMENT();
        if (code == radixkv_h.RKV_CUDA_DEVERR_BAD_SLOT()) {
            return new NativeException("rkv_cuda_reshape_and_cache", status, "slot_mapping[" + row + "] = " + value
                    + " is outside [0, " + bound + ") (num_pages * page_size); that token's K/V were not written");
        }
        if (code == radixkv_h.RKV_CUDA_DEVERR_BAD_TOKEN()) {
            return new NativeException("rkv_cuda_embedding", status, "token id " + value + " (ids[" + row
                    + "]) is outside the vocabulary [0, " + bound + "); its row was zeroed");
        }
        if (code == radixkv_h.RKV_CUDA_DEVERR_BAD_PAGE()) {
            return new NativeException("rkv_cuda_copy_blocks", status, "pair " + row + " names page " + value
                    + ", outside [0, " + bound + "); the pair was not copied");
        }
        return new NativeException("device error record", status, "unknown code " + code + " (row " + row
                + ", value " + value + ", bound " + bound + ")");
    }
}
