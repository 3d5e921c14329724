package io.radixkv.kernels.cuda;

import io.radixkv.kernels.NativeException;
import io.radixkv.kernels.RecordingMemory;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.radixkv.bindings.radixkv_h;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The device error path without a GPU: a stub device memory holds the error record as a kernel
 * would leave it; {@link CudaDeviceErrors#check()} reads it with one copy, names the kernel, the
 * row and the bad value, and resets it so the next step starts clean.
 */
class CudaDeviceErrorsTest {
    private final Arena arena = Arena.ofShared();
    private final RecordingMemory stubDevice = new RecordingMemory(true);

    @AfterEach
    void close() {
        stubDevice.close();
        arena.close();
    }

    /** What a kernel's record_error leaves behind. */
    private static void record(MemorySegment rec, long code, long row, long value, long bound) {
        rec.setAtIndex(ValueLayout.JAVA_LONG, 0, code);
        rec.setAtIndex(ValueLayout.JAVA_LONG, 1, row);
        rec.setAtIndex(ValueLayout.JAVA_LONG, 2, value);
        rec.setAtIndex(ValueLayout.JAVA_LONG, 3, bound);
    }

    @Test
    void aRecordedErrorIsReportedOnceWithItsKernelRowAndValue() {
        CudaDeviceErrors errors = new CudaDeviceErrors(stubDevice);
        assertEquals(8L * radixkv_h.RKV_CUDA_ERROR_RECORD_SLOTS(), errors.record().byteSize());
        errors.check();  // all zero: nothing to report
        assertEquals(1, stubDevice.count("download"), "one small copy per check");

        record(errors.record(), radixkv_h.RKV_CUDA_DEVERR_BAD_SLOT(), 5, 4096, 1024);
        NativeException slot = assertThrows(NativeException.class, errors::check);
        assertTrue(slot.getMessage().contains("rkv_cuda_reshape_and_cache")
                && slot.getMessage().contains("slot_mapping[5] = 4096") && slot.getMessage().contains("[0, 1024)"),
                slot.getMessage());
        assertEquals(radixkv_h.RKV_ERR_INVALID_ARGUMENT(), slot.status());
        assertArrayEquals(new long[4], errors.record().toArray(ValueLayout.JAVA_LONG), "reset after reporting");
        errors.check();

        record(errors.record(), radixkv_h.RKV_CUDA_DEVERR_BAD_TOKEN(), 2, -7, 32000);
        NativeException token = assertThrows(NativeException.class, errors::check);
        assertTrue(token.getMessage().contains("rkv_cuda_embedding") && token.getMessage().contains("token id -7 (ids[2])")
                && token.getMessage().contains("[0, 32000)"), token.getMessage());

        record(errors.record(), radixkv_h.RKV_CUDA_DEVERR_BAD_PAGE(), 1, 99, 64);
        NativeException page = assertThrows(NativeException.class, errors::check);
        assertTrue(page.getMessage().contains("rkv_cuda_copy_blocks") && page.getMessage().contains("page 99"),
                page.getMessage());
        errors.check();
    }
}
