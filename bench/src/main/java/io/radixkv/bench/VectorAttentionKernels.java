package io.radixkv.bench;

import io.radixkv.kernels.AttentionParams;
import io.radixkv.kernels.DType;
import io.radixkv.kernels.KvCacheView;
import io.radixkv.kernels.PageTableCsr;
import io.radixkv.kernels.PagedKvLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import jdk.incubator.vector.ByteVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.ShortVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/**
 * Paged decode attention with the Java Vector API: the strongest pure-Java peer of the native
 * kernel, for the benchmarks (kept in bench/ so the io.radixkv module does not depend on the
 * incubator module). Same algorithm as the native kernel: per (sequence, KV head) it reads each
 * K/V row once for the whole GQA group, converts the cache dtype in registers (bf16 by shift,
 * fp8 by bit placement), computes scores for blocks of 32 tokens, online softmax in f32.
 * Single-threaded; q/out f32; head_dim a multiple of 16. FP8 NaN codes are not special-cased.
 */
public final class VectorAttentionKernels {
    private static final VectorSpecies<Float> FS = FloatVector.SPECIES_512;
    private static final VectorSpecies<Short> SS = ShortVector.SPECIES_256;
    private static final VectorSpecies<Byte> BS = ByteVector.SPECIES_128;
    private static final VectorSpecies<Integer> IS = IntVector.SPECIES_512;
    private static final ByteOrder LE = ByteOrder.nativeOrder();
    private static final int BLOCK = 32;

    public void decode(MemorySegment q, MemorySegment out, MemorySegment lse, KvCacheView cache, PageTableCsr table,
                       AttentionParams params) {
        PagedKvLayout layout = cache.layout();
        int hd = layout.headDim();
        if (hd % FS.length() != 0) {
            throw new IllegalArgumentException("headDim must be a multiple of " + FS.length());
        }
        table.validate(layout);
        DType dt = layout.cacheDtype();
        int nkv = layout.numKvHeads();
        int nqo = params.numQoHeads();
        int group = nqo / nkv;
        int ps = layout.pageSize();
        // e4m3 bits placed in an f32 exponent field read as value * 2^-120 (exact, subnormals too)
        float factor = dt == DType.FP8_E4M3 ? 0x1p120f : 1f;
        float kMul = params.smScale() * (dt.isFp8() ? cache.kScale() : 1f) * factor;
        float vMul = (dt.isFp8() ? cache.vScale() : 1f) * factor;
        long rowBytes = (long) hd * dt.bytes();
        long tokenStride = nkv * rowBytes;
        float[][] qv = new float[group][hd];
        float[][] acc = new float[group][hd];
        float[] m = new float[group];
        float[] l = new float[group];
        float[] s = new float[group * BLOCK];
        long[] rowOff = new long[BLOCK];
        for (int b = 0; b < table.batchSize(); b++) {
            int first = table.kvIndptr().getAtIndex(ValueLayout.JAVA_INT, b);
            long len = table.sequenceLength(b, ps);
            for (int h = 0; h < nkv; h++) {
                for (int g = 0; g < group; g++) {
                    long qBase = ((long) b * nqo + (long) h * group + g) * hd;
                    for (int d = 0; d < hd; d++) {
                        qv[g][d] = q.getAtIndex(ValueLayout.JAVA_FLOAT, qBase + d) * kMul;
                    }
                    java.util.Arrays.fill(acc[g], 0f);
                    m[g] = Float.NEGATIVE_INFINITY;
                    l[g] = 0f;
                }
                for (long t0 = 0; t0 < len; t0 += BLOCK) {
                    int n = (int) Math.min(BLOCK, len - t0);
                    for (int j = 0; j < n; j++) {
                        long t = t0 + j;
                        long page = table.kvIndices().getAtIndex(ValueLayout.JAVA_INT, first + t / ps);
                        rowOff[j] = (page * ps + t % ps) * tokenStride + h * rowBytes;
                    }
                    MemorySegment k = cache.kCache();
                    for (int j = 0; j < n; j++) {
                        for (int g = 0; g < group; g++) {
                            FloatVector dot = FloatVector.zero(FS);
                            for (int d = 0; d < hd; d += FS.length()) {
                                dot = FloatVector.fromArray(FS, qv[g], d).fma(load(k, dt, rowOff[j], d), dot);
                            }
                            s[g * BLOCK + j] = dot.reduceLanes(VectorOperators.ADD);
                        }
                    }
                    for (int g = 0; g < group; g++) {
                        float mx = Float.NEGATIVE_INFINITY;
                        for (int j = 0; j < n; j++) {
                            mx = Math.max(mx, s[g * BLOCK + j]);
                        }
                        float mNew = Math.max(m[g], mx);
                        float sc = (float) Math.exp(m[g] - mNew);
                        float sum = 0;
                        for (int j = 0; j < n; j++) {
                            float p = (float) Math.exp(s[g * BLOCK + j] - mNew);
                            s[g * BLOCK + j] = p;
                            sum += p;
                        }
                        l[g] = l[g] * sc + sum;
                        m[g] = mNew;
                        if (sc != 1f) {
                            for (int d = 0; d < hd; d += FS.length()) {
                                FloatVector.fromArray(FS, acc[g], d).mul(sc).intoArray(acc[g], d);
                            }
                        }
                    }
                    MemorySegment v = cache.vCache();
                    for (int j = 0; j < n; j++) {
                        for (int d = 0; d < hd; d += FS.length()) {
                            FloatVector vv = load(v, dt, rowOff[j], d);
                            for (int g = 0; g < group; g++) {
                                FloatVector.fromArray(FS, acc[g], d).add(vv.mul(s[g * BLOCK + j])).intoArray(acc[g], d);
                            }
                        }
                    }
                }
                for (int g = 0; g < group; g++) {
                    long row = (long) b * nqo + (long) h * group + g;
                    float inv = l[g] > 0 ? vMul / l[g] : 0f;
                    for (int d = 0; d < hd; d++) {
                        out.setAtIndex(ValueLayout.JAVA_FLOAT, row * hd + d, acc[g][d] * inv);
                    }
                    if (lse != null) {
                        lse.setAtIndex(ValueLayout.JAVA_FLOAT, row,
                                l[g] > 0 ? (float) (m[g] + Math.log(l[g])) : Float.NEGATIVE_INFINITY);
                    }
                }
            }
        }
    }

    /** 16 elements of row `off` starting at element d, converted to f32 in registers. */
    private static FloatVector load(MemorySegment seg, DType dt, long off, int d) {
        return switch (dt) {
            case F32 -> FloatVector.fromMemorySegment(FS, seg, off + 4L * d, LE);
            case BF16 -> ((IntVector) ShortVector.fromMemorySegment(SS, seg, off + 2L * d, LE)
                    .convertShape(VectorOperators.S2I, IS, 0))
                    .lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats();
            case FP8_E4M3 -> ((IntVector) ByteVector.fromMemorySegment(BS, seg, off + d, LE)
                    .convertShape(VectorOperators.B2I, IS, 0))
                    .lanewise(VectorOperators.LSHL, 20).and(0x87F00000).reinterpretAsFloats();
            case FP8_E5M2 -> ((IntVector) ByteVector.fromMemorySegment(BS, seg, off + d, LE)
                    .convertShape(VectorOperators.B2I, IS, 0))
                    .lanewise(VectorOperators.LSHL, 21).and(0x8FE00000).reinterpretAsFloats().mul(0x1p112f);
            case F16 -> throw new IllegalArgumentException("f16 caches are not supported by the Vector API peer");
        };
    }
}
