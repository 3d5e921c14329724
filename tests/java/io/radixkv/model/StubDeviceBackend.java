package io.radixkv.model;

import io.radixkv.kernels.AttentionKernels;
import io.radixkv.kernels.AttentionParams;
import io.radixkv.kernels.AttentionPlan;
import io.radixkv.kernels.BackendMemory;
import io.radixkv.kernels.DType;
import io.radixkv.kernels.DenseKernels;
import io.radixkv.kernels.KernelBackend;
import io.radixkv.kernels.KvCacheKernels;
import io.radixkv.kernels.KvCacheView;
import io.radixkv.kernels.NativeException;
import io.radixkv.kernels.PageTableCsr;
import io.radixkv.kernels.PagedKvLayout;
import io.radixkv.kernels.RecordingMemory;
import io.radixkv.kernels.cpu.CpuBackend;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;

/**
 * A stand-in for a GPU backend on a machine without one: the CPU backend's kernels over host
 * memory that claims to be device memory ({@link RecordingMemory}), so the model and engine take
 * their device path (weights uploaded, inputs staged, logits copied back), while every transfer
 * and attention plan/run is logged in order. {@link #failNextErrorCheck} makes the next
 * {@link #checkDeviceErrors()} report a device-side error, as the CUDA backend does for a bad
 * slot or token id found by a kernel.
 */
public final class StubDeviceBackend implements KernelBackend {
    private final CpuBackend cpu = new CpuBackend();
    /** Operations in issue order: "plan", "run", "check-errors" and the memory's ("upload N", "download N", "sync", ...). */
    public final List<String> log = new ArrayList<>();
    private final RecordingMemory memory = new RecordingMemory(true, log);
    private final Attention attention = new Attention(cpu.attention());
    private String pendingError;

    /** The next {@link #checkDeviceErrors()} throws naming {@code what}. */
    public void failNextErrorCheck(String what) {
        pendingError = what;
    }

    /** Entries of operation {@code op} ("plan", "upload", "download", ...). */
    public long count(String op) {
        return memory.count(op);
    }

    /** Bytes copied device → host so far. */
    public long downloadedBytes() {
        return memory.bytes("download");
    }

    @Override
    public String name() {
        return "stub-device";
    }

    @Override
    public KvCacheKernels kv() {
        return cpu.kv();
    }

    @Override
    public AttentionKernels attention() {
        return attention;
    }

    @Override
    public DenseKernels dense() {
        return cpu.dense();
    }

    @Override
    public BackendMemory memory() {
        return memory;
    }

    @Override
    public boolean deviceMemory() {
        return true;
    }

    @Override
    public void checkDeviceErrors() {
        log.add("check-errors");
        if (pendingError != null) {
            String e = pendingError;
            pendingError = null;
            throw new NativeException("rkv_cuda_reshape_and_cache", -1, e);
        }
    }

    @Override
    public void close() {
        memory.close();
        cpu.close();
    }

    private final class Attention implements AttentionKernels {
        private final AttentionKernels inner;

        Attention(AttentionKernels inner) {
            this.inner = inner;
        }

        @Override
        public AttentionPlan plan(PagedKvLayout layout, PageTableCsr table, MemorySegment qoIndptr, int numQoHeads) {
            log.add("plan");
            return inner.plan(layout, table, qoIndptr, numQoHeads);
        }

        @Override
        public void run(AttentionPlan plan, MemorySegment q, DType qDtype, MemorySegment out, DType outDtype,
                        MemorySegment lse, KvCacheView cache, AttentionParams params) {
            log.add("run");
            inner.run(plan, q, qDtype, out, outDtype, lse, cache, params);
        }

        @Override
        public void decode(MemorySegment q, DType qDtype, MemorySegment out, DType outDtype, MemorySegment lse,
                           KvCacheView cache, PageTableCsr table, AttentionParams params) {
            throw new AssertionError("a device model must run planned attention, not per-call host tables");
        }

        @Override
        public void appendPrefill(MemorySegment q, DType qDtype, MemorySegment out, DType outDtype, MemorySegment lse,
                                  MemorySegment qoIndptr, KvCacheView cache, PageTableCsr table,
                                  MemorySegment bidirIndptr, MemorySegment bidirRegions, AttentionParams params) {
            throw new AssertionError("a device model must run planned attention, not per-call host tables");
        }

        @Override
        public void mergeState(MemorySegment va, MemorySegment sa, MemorySegment vb, MemorySegment sb,
                               MemorySegment vOut, MemorySegment sOut, long numTokens, int numHeads, int headDim) {
            inner.mergeState(va, sa, vb, sb, vOut, sOut, numTokens, numHeads, headDim);
        }
    }
}
