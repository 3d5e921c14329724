package io.radixkv.kernels.cpu;

import io.radixkv.bindings.radixkv_h;
import io.radixkv.bindings.rkv_lora_params;
import io.radixkv.bindings.rkv_lora_slot;
import io.radixkv.bindings.rkv_quant_linear_params;
import io.radixkv.bindings.rkv_quant_rows_params;
import io.radixkv.kernels.Checks;
import io.radixkv.kernels.DType;
import io.radixkv.kernels.DenseChecks;
import io.radixkv.kernels.DenseKernels;
import io.radixkv.kernels.LoraBatch;
import io.radixkv.kernels.LoraFactors;
import io.radixkv.kernels.QuantChecks;
import io.radixkv.quant.BlockFormat;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.util.EnumSet;
import java.util.Set;

/**
 * Dense kernels of libradixkv (oneDNN GEMM, vectorized OpenMP loops). Arguments are fully
 * validated in Java first; segments must be native. The short element-wise ops go through
 * {@code critical} downcall handles (no thread-state transition: they run for micro- to
 * milliseconds and never block); {@code linear} uses a regular handle because large GEMMs
 * run long enough that a critical call would hold up GC safepoints.
 */
public final class CpuDenseKernels implements DenseKernels {
    private static final MethodHandle RMSNORM;
    private static final MethodHandle ROPE;
    private static final MethodHandle SILU_MUL;
    private static final MethodHandle EMBEDDING;
    private static final MethodHandle ADD_INPLACE;
    private static final MethodHandle ARGMAX;
    private static final MethodHandle ROPE_TABLE;
    private static final MethodHandle GELU_TANH_MUL;
    private static final MethodHandle ADD_BIAS;
    private static final MethodHandle SOFT_CAP;
    private static final MethodHandle SCALE;

    static {
        NativeLibrary.loadCpu();
        RMSNORM = critical(radixkv_h.rkv_rmsnorm$address(), radixkv_h.rkv_rmsnorm$descriptor());
        ROPE = critical(radixkv_h.rkv_rope$address(), radixkv_h.rkv_rope$descriptor());
        SILU_MUL = critical(radixkv_h.rkv_silu_mul$address(), radixkv_h.rkv_silu_mul$descriptor());
        EMBEDDING = critical(radixkv_h.rkv_embedding$address(), radixkv_h.rkv_embedding$descriptor());
        ADD_INPLACE = critical(radixkv_h.rkv_add_inplace$address(), radixkv_h.rkv_add_inplace$descriptor());
        ARGMAX = critical(radixkv_h.rkv_argmax$address(), radixkv_h.rkv_argmax$descriptor());
        ROPE_TABLE = critical(radixkv_h.rkv_rope_table$address(), radixkv_h.rkv_rope_table$descriptor());
        GELU_TANH_MUL = critical(radixkv_h.rkv_gelu_tanh_mul$address(), radixkv_h.rkv_gelu_tanh_mul$descriptor());
        ADD_BIAS = critical(radixkv_h.rkv_add_bias$address(), radixkv_h.rkv_add_bias$descriptor());
        SOFT_CAP = critical(radixkv_h.rkv_soft_cap$address(), radixkv_h.rkv_soft_cap$descriptor());
        SCALE = critical(radixkv_h.rkv_scale$address(), radixkv_h.rkv_scale$descriptor());
    }

    private static MethodHandle critical(MemorySegment address, FunctionDescriptor desc) {
        return Linker.nativeLinker().downcallHandle(address, desc, Linker.Option.critical(false));
    }

    public CpuDenseKernels() {
        NativeLibrary.loadCpu();
    }

    @Override
    public String name() {
        return "cpu";
    }

    @Override
    public void linear(MemorySegment x, MemorySegment w, DType wDtype, MemorySegment y, long m, long n, long k,
                       boolean accumulate) {
        DenseChecks.linear(x, w, wDtype, y, m, n, k);
        natives("x", x, "w", w, "y", y);
        NativeLibrary.check("rkv_linear", radixkv_h.rkv_linear(x, w, wDtype.code(), y, m, n, k, accumulate ? 1 : 0));
    }

    /**
     * f32, f16 and bf16 weights with n % 64 == 0 and k % 16 == 0 (bf16: k % 32 == 0) on a CPU with
     * AVX-512 (bf16: AVX512-BF16) (radixkv.h, rkv_linear_pack).
     */
    @Override
    public boolean packsLinearWeights(DType wDtype, long n, long k) {
        return wDtype != null && n > 0 && k > 0 && radixkv_h.rkv_linear_pack_supported(wDtype.code(), n, k) == 1;
    }

    @Override
    public void packLinearWeights(MemorySegment w, DType wDtype, long n, long k, boolean unpack) {
        Checks.requireDtype("wDtype", wDtype, DType.F32, DType.BF16, DType.F16);
        if (!packsLinearWeights(wDtype, n, k)) {
            DenseKernels.super.packLinearWeights(w, wDtype, n, k, unpack);
        }
        Checks.requireElements("w", w, Math.multiplyExact(n, k), wDtype);
        DenseChecks.requireNative("w", w);
        NativeLibrary.check(unpack ? "rkv_linear_unpack" : "rkv_linear_pack", unpack
                ? radixkv_h.rkv_linear_unpack(w, wDtype.code(), n, k)
                : radixkv_h.rkv_linear_pack(w, wDtype.code(), n, k));
    }

    @Override
    public void linearPacked(MemorySegment x, MemorySegment w, DType wDtype, MemorySegment y, long m, long n, long k,
                             boolean accumulate) {
        DenseChecks.linear(x, w, wDtype, y, m, n, k);
        if (!packsLinearWeights(wDtype, n, k)) {
            DenseKernels.super.linearPacked(x, w, wDtype, y, m, n, k, accumulate);
        }
        natives("x", x, "w", w, "y", y);
        NativeLibrary.check("rkv_linear_packed",
                radixkv_h.rkv_linear_packed(x, w, wDtype.code(), y, m, n, k, accumulate ? 1 : 0));
    }

    /** Every block format: Q8_0, Q4_0, Q5_0, Q4_K and Q6_K (radixkv.h, rkv_quant_linear). */
    @Override
    public Set<BlockFormat> quantizedFormats() {
        return EnumSet.allOf(BlockFormat.class);
    }

    @Override
    public void linearQuantized(MemorySegment x, long ldx, MemorySegment w, BlockFormat format, MemorySegment y,
                                long ldy, long m, long n, long k, boolean accumulate) {
        QuantChecks.linear(x, ldx, w, format, y, ldy, m, n, k);
        natives("x", x, "w", w, "y", y);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment p = rkv_quant_linear_params.allocate(arena);
            rkv_quant_linear_params.x(p, x);
            rkv_quant_linear_params.ldx(p, ldx);
            rkv_quant_linear_params.w(p, w);
            rkv_quant_linear_params.format(p, format.ggmlType());
            rkv_quant_linear_params.y(p, y);
            rkv_quant_linear_params.ldy(p, ldy);
            rkv_quant_linear_params.m(p, m);
            rkv_quant_linear_params.n(p, n);
            rkv_quant_linear_params.k(p, k);
            rkv_quant_linear_params.accumulate(p, accumulate ? 1 : 0);
            NativeLibrary.check("rkv_quant_linear", radixkv_h.rkv_quant_linear(p));
        }
    }

    @Override
    public void embeddingQuantized(MemorySegment ids, long n, MemorySegment table, BlockFormat format, int vocab,
                                   int dim, MemorySegment out) {
        QuantChecks.embedding(ids, n, table, format, vocab, dim, out);
        natives("ids", ids, "table", table, "out", out);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment p = rkv_quant_rows_params.allocate(arena);
            rkv_quant_rows_params.w(p, table);
            rkv_quant_rows_params.format(p, format.ggmlType());
            rkv_quant_rows_params.rows(p, vocab);
            rkv_quant_rows_params.k(p, dim);
            rkv_quant_rows_params.ids(p, ids);
            rkv_quant_rows_params.n(p, n);
            rkv_quant_rows_params.out(p, out);
            NativeLibrary.check("rkv_quant_dequantize_rows", radixkv_h.rkv_quant_dequantize_rows(p));
        }
    }

    @Override
    public void rmsnorm(MemorySegment x, MemorySegment w, MemorySegment y, long rows, int dim, float eps,
                        float weightOffset) {
        DenseChecks.rmsnorm(x, w, y, rows, dim, eps, weightOffset);
        natives("x", x, "w", w, "y", y);
        NativeLibrary.call("rkv_rmsnorm", () -> (int) RMSNORM.invokeExact(x, w, y, rows, dim, eps, weightOffset));
    }

    @Override
    public void rope(MemorySegment q, MemorySegment k, MemorySegment positions, long numTokens, int numQHeads,
                     int numKvHeads, int headDim, float theta) {
        DenseChecks.rope(q, k, positions, numTokens, numQHeads, numKvHeads, headDim, theta);
        MemorySegment qa = numQHeads > 0 && numTokens > 0 ? q : MemorySegment.NULL;
        MemorySegment ka = numKvHeads > 0 && numTokens > 0 ? k : MemorySegment.NULL;
        natives("q", qa, "k", ka, "positions", positions);
        NativeLibrary.call("rkv_rope", () -> (int) ROPE.invokeExact(qa, ka, positions, numTokens, numQHeads, numKvHeads, headDim, theta));
    }

    @Override
    public void ropeTable(MemorySegment q, MemorySegment k, MemorySegment positions, long numTokens, int numQHeads,
                          int numKvHeads, int headDim, MemorySegment invFreq) {
        DenseChecks.ropeTable(q, k, positions, numTokens, numQHeads, numKvHeads, headDim, invFreq);
        MemorySegment qa = numQHeads > 0 && numTokens > 0 ? q : MemorySegment.NULL;
        MemorySegment ka = numKvHeads > 0 && numTokens > 0 ? k : MemorySegment.NULL;
        natives("q", qa, "k", ka, "positions", positions);
        DenseChecks.requireNative("invFreq", invFreq);
        NativeLibrary.call("rkv_rope_table", () -> (int) ROPE_TABLE.invokeExact(qa, ka, positions, numTokens, numQHeads, numKvHeads, headDim, invFreq));
    }

    @Override
    public void geluTanhMul(MemorySegment gateUp, MemorySegment out, long rows, int inter) {
        DenseChecks.siluMul(gateUp, out, rows, inter);
        natives("gateUp", gateUp, "out", out, "out", out);
        NativeLibrary.call("rkv_gelu_tanh_mul", () -> (int) GELU_TANH_MUL.invokeExact(gateUp, out, rows, inter));
    }

    @Override
    public void addBias(MemorySegment y, MemorySegment bias, long rows, int n) {
        DenseChecks.addBias(y, bias, rows, n);
        natives("y", y, "bias", bias, "bias", bias);
        NativeLibrary.call("rkv_add_bias", () -> (int) ADD_BIAS.invokeExact(y, bias, rows, n));
    }

    @Override
    public void softCap(MemorySegment x, long n, float cap) {
        DenseChecks.softCap(x, n, cap);
        natives("x", x, "x", x, "x", x);
        NativeLibrary.call("rkv_soft_cap", () -> (int) SOFT_CAP.invokeExact(x, n, cap));
    }

    @Override
    public void scale(MemorySegment x, long n, float s) {
        DenseChecks.scale(x, n, s);
        natives("x", x, "x", x, "x", x);
        NativeLibrary.call("rkv_scale", () -> (int) SCALE.invokeExact(x, n, s));
    }

    @Override
    public void siluMul(MemorySegment gateUp, MemorySegment out, long rows, int inter) {
        DenseChecks.siluMul(gateUp, out, rows, inter);
        natives("gateUp", gateUp, "out", out, "out", out);
        NativeLibrary.call("rkv_silu_mul", () -> (int) SILU_MUL.invokeExact(gateUp, out, rows, inter));
    }

    @Override
    public void embedding(MemorySegment ids, long n, MemorySegment table, DType dtype, int vocab, int dim,
                          MemorySegment out) {
        DenseChecks.embedding(ids, n, table, dtype, vocab, dim, out);
        natives("ids", ids, "table", table, "out", out);
        NativeLibrary.call("rkv_embedding", () -> (int) EMBEDDING.invokeExact(ids, n, table, dtype.code(), vocab, dim, out));
    }

    @Override
    public void addInplace(MemorySegment y, MemorySegment x, long n) {
        DenseChecks.addInplace(y, x, n);
        natives("y", y, "x", x, "x", x);
        NativeLibrary.call("rkv_add_inplace", () -> (int) ADD_INPLACE.invokeExact(y, x, n));
    }

    @Override
    public void argmax(MemorySegment logits, long rows, int vocab, MemorySegment out) {
        DenseChecks.argmax(logits, rows, vocab, out);
        natives("logits", logits, "out", out, "out", out);
        NativeLibrary.call("rkv_argmax", () -> (int) ARGMAX.invokeExact(logits, rows, vocab, out));
    }

    /** rkv_lora_apply's argument memory, grown on demand and reused (guarded by this object). */
    private MemorySegment loraArgs = MemorySegment.NULL;

    @Override
    public synchronized void lora(LoraBatch b) {
        if (b.rows() == 0) {
            return;
        }
        natives("x", b.x(), "y", b.y(), "y", b.y());
        int slots = b.slots().size();
        long paramsBytes = rkv_lora_params.sizeof();
        long slotBytes = rkv_lora_slot.sizeof() * Math.max(1, slots);
        long intBytes = 4L * (2L * b.segments() + 1);
        long scratchBytes = 4L * b.rows() * Math.max(1, b.maxRank());
        long total = paramsBytes + slotBytes + intBytes + scratchBytes + 64;
        if (loraArgs.byteSize() < total) {
            loraArgs = Arena.ofAuto().allocate(Math.max(total, 2 * loraArgs.byteSize()), 64);
        }
        MemorySegment params = loraArgs.asSlice(0, paramsBytes);
        MemorySegment slotArray = loraArgs.asSlice(paramsBytes, slotBytes);
        MemorySegment indptr = loraArgs.asSlice(paramsBytes + slotBytes, 4L * (b.segments() + 1));
        MemorySegment segSlot = loraArgs.asSlice(indptr.address() - loraArgs.address() + indptr.byteSize(),
                4L * Math.max(1, b.segments()));
        long scratchOffset = (segSlot.address() - loraArgs.address() + segSlot.byteSize() + 63) & ~63L;
        MemorySegment scratch = loraArgs.asSlice(scratchOffset, scratchBytes);
        for (int s = 0; s < slots; s++) {
            LoraFactors f = b.slots().get(s);
            MemorySegment e = rkv_lora_slot.asSlice(slotArray, s);
            if (f != null) {
                DenseChecks.requireNative("a", f.a());
                DenseChecks.requireNative("b", f.b());
            }
            rkv_lora_slot.a(e, f == null ? MemorySegment.NULL : f.a());
            rkv_lora_slot.b(e, f == null ? MemorySegment.NULL : f.b());
            rkv_lora_slot.rank(e, f == null ? 0 : f.rank());
            rkv_lora_slot.scale(e, f == null ? 0f : f.scale());
        }
        MemorySegment.copy(b.segIndptr(), 0, indptr, ValueLayout.JAVA_INT, 0, b.segments() + 1);
        MemorySegment.copy(b.segSlot(), 0, segSlot, ValueLayout.JAVA_INT, 0, b.segments());
        rkv_lora_params.x(params, b.x());
        rkv_lora_params.y(params, b.y());
        rkv_lora_params.rows(params, b.rows());
        rkv_lora_params.k(params, b.k());
        rkv_lora_params.n(params, b.n());
        rkv_lora_params.y_pitch(params, b.yPitch());
        rkv_lora_params.y_offset(params, b.yOffset());
        rkv_lora_params.num_segments(params, b.segments());
        rkv_lora_params.seg_indptr(params, indptr);
        rkv_lora_params.seg_slot(params, segSlot);
        rkv_lora_params.slots(params, slotArray);
        rkv_lora_params.num_slots(params, slots);
        rkv_lora_params.max_rank(params, b.maxRank());
        rkv_lora_params.scratch(params, scratch);
        NativeLibrary.check("rkv_lora_apply", radixkv_h.rkv_lora_apply(params));
    }

    private static void natives(String an, MemorySegment a, String bn, MemorySegment b, String cn, MemorySegment c) {
        DenseChecks.requireNative(an, a);
        DenseChecks.requireNative(bn, b);
        DenseChecks.requireNative(cn, c);
    }
}
