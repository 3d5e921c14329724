package io.radixkv.kernels.cuda;

import io.radixkv.bindings.radixkv_h;
import io.radixkv.kernels.BackendMemory;
import io.radixkv.kernels.Checks;
import io.radixkv.kernels.DType;
import io.radixkv.kernels.DenseChecks;
import io.radixkv.kernels.DenseKernels;
import io.radixkv.kernels.KernelBackend;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;

/**
 * {@link DenseKernels} of libradixkv_cuda over device segments (from {@link CudaMemory}): GEMMs
 * through cuBLAS (loaded at run time), the other ops as CUDA kernels sharing their per-element
 * arithmetic with the CPU ({@code native/src/rkv_dense_elem.h}). Every call is launched on
 * {@link #stream()} and returns without synchronizing.
 *
 * <p>The Java checks are the CPU class's for everything that lives in a segment's size
 * ({@link DenseChecks}); values inside device segments cannot be read from Java, so:
 * token ids are checked on the device ({@code rkv_cuda_embedding} zeroes the row of a bad id
 * and records it in the backend's device error record, which
 * {@link KernelBackend#checkDeviceErrors()} reads once per step and reports as a
 * NativeException naming the id and its index; nothing waits here); positions and inv_freq tables are not
 * re-checked here (the model builds both on the host, where they are checked; a negative
 * position would rotate backwards but can never address memory out of bounds).
 */
final class CudaDenseKernels implements DenseKernels {
    private final BackendMemory memory;
    private final MemorySegment stream;
    private final MemorySegment errorRecord;  // device, radixkv.h's error record
    private final Map<Long, MemorySegment> ropeTables = new HashMap<>();  // device inv_freq per (theta, headDim)

    /**
     * @param memory device memory (RoPE tables)
     * @param stream the backend's cudaStream_t
     * @param errorRecord the backend's device error record ({@link CudaDeviceErrors#record()})
     */
    CudaDenseKernels(BackendMemory memory, MemorySegment stream, MemorySegment errorRecord) {
        if (!memory.isDevice()) {
            throw new IllegalArgumentException("CudaDenseKernels needs device memory");
        }
        this.memory = memory;
        this.stream = stream;
        this.errorRecord = errorRecord;
    }

    /** RKV_OK when cuBLAS loads, else the loader's reason ("libcublas not found (tried ...)"). */
    static String blasUnavailableReason() {
        int st = radixkv_h.rkv_cuda_blas_available();
        return st == 0 ? "" : CudaKvCacheKernels.lastError();
    }

    MemorySegment stream() {
        return stream;
    }

    @Override
    public String name() {
        return "cuda";
    }

    /** f32 and bf16: cuBLAS would round activations to f16 for f16 weights (see {@link #linear}). */
    @Override
    public Set<DType> weightDtypes() {
        return EnumSet.of(DType.F32, DType.BF16);
    }

    @Override
    public void linear(MemorySegment x, MemorySegment w, DType wDtype, MemorySegment y, long m, long n, long k,
                       boolean accumulate) {
        DenseChecks.linear(x, w, wDtype, y, m, n, k);
        if (wDtype == DType.F16) {
            // cuBLAS multiplies f16 weights only with f16 activations: rounding x to f16 would
            // overflow past 65504, unlike the CPU's widening of f16 weights to f32
            throw new UnsupportedOperationException("CUDA linear takes f32 or bf16 weights, not f16: load f16 "
                    + "checkpoints as bf16 or f32 for the CUDA backend");
        }
        if ((m | n | k) > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("cuBLAS dims are int32: m=" + m + " n=" + n + " k=" + k);
        }
        if (m == 0 || n == 0) {
            return;
        }
        CudaKvCacheKernels.check("rkv_cuda_linear",
                radixkv_h.rkv_cuda_linear(x, w, wDtype.code(), y, m, n, k, accumulate ? 1 : 0, stream));
    }

    @Override
    public void rmsnorm(MemorySegment x, MemorySegment w, MemorySegment y, long rows, int dim, float eps,
                        float weightOffset) {
        DenseChecks.rmsnorm(x, w, y, rows, dim, eps, weightOffset);
        CudaKvCacheKernels.check("rkv_cuda_rmsnorm",
                radixkv_h.rkv_cuda_rmsnorm(x, w, y, rows, dim, eps, weightOffset, stream));
    }

    /**
     * The default RoPE as a table: inv_freq[i] = theta^(-2i/d) in double (the CPU kernel's
     * formula), uploaded once per (theta, headDim) and kept for the backend's lifetime.
     */
    @Override
    public void rope(MemorySegment q, MemorySegment k, MemorySegment positions, long numTokens, int numQHeads,
                     int numKvHeads, int headDim, float theta) {
        DenseChecks.ropeShapes(q, k, positions, numTokens, numQHeads, numKvHeads, headDim);
        if (!Float.isFinite(theta) || theta <= 0f) {
            throw new IllegalArgumentException("rope theta must be positive and finite, got " + theta);
        }
        ropeTable(q, k, positions, numTokens, numQHeads, numKvHeads, headDim, defaultTable(theta, headDim));
    }

    private synchronized MemorySegment defaultTable(float theta, int headDim) {
        return ropeTables.computeIfAbsent(((long) Float.floatToIntBits(theta) << 32) | headDim, key -> {
            MemorySegment dev = memory.allocate(8L * (headDim / 2));
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment host = arena.allocate(ValueLayout.JAVA_DOUBLE, headDim / 2);
                for (int i = 0; i < headDim / 2; i++) {
                    host.setAtIndex(ValueLayout.JAVA_DOUBLE, i, Math.pow(theta, -2.0 * i / headDim));
                }
                memory.copyFromHost(host, dev, 8L * (headDim / 2));
            }
            return dev;
        });
    }

    @Override
    public void ropeTable(MemorySegment q, MemorySegment k, MemorySegment positions, long numTokens, int numQHeads,
                          int numKvHeads, int headDim, MemorySegment invFreq) {
        DenseChecks.ropeShapes(q, k, positions, numTokens, numQHeads, numKvHeads, headDim);
        Checks.requireBytes("invFreq", invFreq, 8L * (headDim / 2));
        MemorySegment qa = numQHeads > 0 && numTokens > 0 ? q : MemorySegment.NULL;
        MemorySegment ka = numKvHeads > 0 && numTokens > 0 ? k : MemorySegment.NULL;
        CudaKvCacheKernels.check("rkv_cuda_rope_table", radixkv_h.rkv_cuda_rope_table(qa, ka, positions, numTokens,
                numQHeads, numKvHeads, headDim, invFreq, stream));
    }

    @Override
    public void geluTanhMul(MemorySegment gateUp, MemorySegment out, long rows, int inter) {
        DenseChecks.siluMul(gateUp, out, rows, inter);
        CudaKvCacheKernels.check("rkv_cuda_gelu_tanh_mul", radixkv_h.rkv_cuda_gelu_tanh_mul(gateUp, out, rows, inter,
                stream));
    }

    @Override
    public void addBias(MemorySegment y, MemorySegment bias, long rows, int n) {
        DenseChecks.addBias(y, bias, rows, n);
        CudaKvCacheKernels.check("rkv_cuda_add_bias", radixkv_h.rkv_cuda_add_bias(y, bias, rows, n, stream));
    }

    @Override
    public void softCap(MemorySegment x, long n, float cap) {
        DenseChecks.softCap(x, n, cap);
        CudaKvCacheKernels.check("rkv_cuda_soft_cap", radixkv_h.rkv_cuda_soft_cap(x, n, cap, stream));
    }

    @Override
    public void scale(MemorySegment x, long n, float s) {
        DenseChecks.scale(x, n, s);
        CudaKvCacheKernels.check("rkv_cuda_scale", radixkv_h.rkv_cuda_scale(x, n, s, stream));
    }

    @Override
    public void siluMul(MemorySegment gateUp, MemorySegment out, long rows, int inter) {
        DenseChecks.siluMul(gateUp, out, rows, inter);
        CudaKvCacheKernels.check("rkv_cuda_silu_mul", radixkv_h.rkv_cuda_silu_mul(gateUp, out, rows, inter, stream));
    }

    @Override
    public void embedding(MemorySegment ids, long n, MemorySegment table, DType dtype, int vocab, int dim,
                          MemorySegment out) {
        Checks.requireNonNegative("n", n);
        Checks.requirePositive("vocab", vocab);
        Checks.requirePositive("dim", dim);
        Checks.requireDtype("table dtype", dtype, DType.F32, DType.BF16);
        Checks.requireBytes("ids", ids, Math.multiplyExact(4L, n));
        Checks.requireElements("table", table, (long) vocab * dim, dtype);
        Checks.requireElements("out", out, Math.multiplyExact(n, (long) dim), DType.F32);
        if (n == 0) {
            return;
        }
        CudaKvCacheKernels.check("rkv_cuda_embedding", radixkv_h.rkv_cuda_embedding(ids, n, table, dtype.code(), vocab,
                dim, out, errorRecord, stream));
    }

    @Override
    public void addInplace(MemorySegment y, MemorySegment x, long n) {
        DenseChecks.addInplace(y, x, n);
        CudaKvCacheKernels.check("rkv_cuda_add_inplace", radixkv_h.rkv_cuda_add_inplace(y, x, n, stream));
    }

    @Override
    public void argmax(MemorySegment logits, long rows, int vocab, MemorySegment out) {
        DenseChecks.argmax(logits, rows, vocab, out);
        CudaKvCacheKernels.check("rkv_cuda_argmax", radixkv_h.rkv_cuda_argmax(logits, rows, vocab, out, stream));
    }
}
