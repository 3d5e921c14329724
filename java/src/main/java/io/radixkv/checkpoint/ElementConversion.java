package io.radixkv.checkpoint;

import io.radixkv.kernels.Bf16;
import io.radixkv.kernels.DType;
import io.radixkv.quant.BlockFormat;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * Element conversions between the checkpoint dtypes (f32, bf16, f16), little-endian as
 * safetensors stores them, and dequantization of GGUF's block formats into them. Round to nearest even; NaN stays a (quiet) NaN; bf16 to f32 is exact.
 */
public final class ElementConversion {
    private static final ValueLayout.OfInt I32 = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfShort I16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfFloat F32_LE = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private ElementConversion() {}

    /** Element {@code i} of {@code seg} (of {@code type}) as a float. */
    public static float load(MemorySegment seg, long i, DType type) {
        return switch (type) {
            case F32 -> Float.intBitsToFloat(seg.getAtIndex(I32, i));
            case BF16 -> Bf16.toFloat(seg.getAtIndex(I16, i));
            case F16 -> Float.float16ToFloat(seg.getAtIndex(I16, i));
            default -> throw new IllegalArgumentException("unsupported dtype " + type);
        };
    }

    /** Stores {@code v} rounded to {@code type} as element {@code i} of {@code seg}. */
    public static void store(MemorySegment seg, long i, DType type, float v) {
        switch (type) {
            case F32 -> seg.setAtIndex(I32, i, Float.floatToRawIntBits(v));
            case BF16 -> seg.setAtIndex(I16, i, Bf16.fromFloat(v));
            case F16 -> seg.setAtIndex(I16, i, Float.floatToFloat16(v));
            default -> throw new IllegalArgumentException("unsupported dtype " + type);
        }
    }

    private static boolean convertible(DType t) {
        return t == DType.F32 || t == DType.BF16 || t == DType.F16;
    }

    /** Elements converted per round trip through the heap arrays. */
    private static final int BLOCK = 1 << 14;

    /**
     * Copies {@code n} elements of {@code src} (type {@code srcType}) into {@code dst} (type
     * {@code dstType}) starting at element {@code dstOffset}: a plain copy when the types match,
     * else converted in blocks (bulk copies into small heap arrays, a tight loop the JIT can
     * vectorise, a bulk copy out).
     */
    public static void convert(MemorySegment src, DType srcType, MemorySegment dst, DType dstType, long dstOffset,
                               long n) {
        if (srcType == dstType) {
            MemorySegment.copy(src, 0, dst, dstOffset * dstType.bytes(), n * dstType.bytes());
            return;
        }
        if (!convertible(srcType) || !convertible(dstType)) {
            throw new IllegalArgumentException("no conversion from " + srcType + " to " + dstType);
        }
        int sb = srcType.bytes();
        int db = dstType.bytes();
        short[] in16 = sb == 2 ? new short[BLOCK] : null;
        int[] in32 = sb == 4 ? new int[BLOCK] : null;
        short[] out16 = db == 2 ? new short[BLOCK] : null;
        int[] out32 = db == 4 ? new int[BLOCK] : null;
        for (long done = 0; done < n; done += BLOCK) {
            int m = (int) Math.min(BLOCK, n - done);
            if (in16 != null) {
                MemorySegment.copy(src, I16, done * 2, in16, 0, m);
            } else {
                MemorySegment.copy(src, I32, done * 4, in32, 0, m);
            }
            switch (srcType.label() + ">" + dstType.label()) {
                case "bf16>f32" -> {
                    for (int i = 0; i < m; i++) { // exact widening: the bits shift up
                        out32[i] = (in16[i] & 0xFFFF) << 16;
                    }
                }
                case "f16>f32" -> {
                    for (int i = 0; i < m; i++) { // exact widening
                        out32[i] = Float.floatToRawIntBits(Float.float16ToFloat(in16[i]));
                    }
                }
                case "f32>bf16" -> {
                    for (int i = 0; i < m; i++) {
                        out16[i] = Bf16.fromFloat(Float.intBitsToFloat(in32[i]));
                    }
                }
                case "f32>f16" -> {
                    for (int i = 0; i < m; i++) {
                        out16[i] = Float.floatToFloat16(Float.intBitsToFloat(in32[i]));
                    }
                }
                case "f16>bf16" -> {
                    for (int i = 0; i < m; i++) {
                        out16[i] = Bf16.fromFloat(Float.float16ToFloat(in16[i]));
                    }
                }
                case "bf16>f16" -> {
                    for (int i = 0; i < m; i++) {
                        out16[i] = Float.floatToFloat16(Bf16.toFloat(in16[i]));
                    }
                }
                default -> throw new IllegalArgumentException("no conversion from " + srcType + " to " + dstType);
            }
            if (out16 != null) {
                MemorySegment.copy(out16, 0, dst, I16, (dstOffset + done) * 2, m);
            } else {
                MemorySegment.copy(out32, 0, dst, I32, (dstOffset + done) * 4, m);
            }
        }
    }

    /**
     * Dequantizes {@code n} values of {@code format} blocks from {@code src} into {@code dst} (f32,
     * bf16 or f16) from element {@code dstOffset}, a few blocks at a time through heap arrays.
     * {@code n} is a whole number of blocks.
     */
    public static void dequantize(MemorySegment src, BlockFormat format, MemorySegment dst, DType dstType,
                                  long dstOffset, long n) {
        if (!convertible(dstType)) {
            throw new IllegalArgumentException("no conversion from " + format + " to " + dstType);
        }
        int piece = BLOCK / format.blockElements() * format.blockElements();
        byte[] in = new byte[(int) format.rowBytes(piece)];
        float[] out = new float[piece];
        for (long done = 0; done < n; done += piece) {
            int m = (int) Math.min(piece, n - done);
            int bytes = (int) format.rowBytes(m);
            MemorySegment.copy(src, ValueLayout.JAVA_BYTE, format.rowBytes(done), in, 0, bytes);
            format.dequantize(in, 0, out, 0, m);
            if (dstType == DType.F32) {
                MemorySegment.copy(out, 0, dst, F32_LE, (dstOffset + done) * 4, m);
            } else {
                for (int i = 0; i < m; i++) {
                    store(dst, dstOffset + done + i, dstType, out[i]);
                }
            }
        }
    }

    /**
     * Quantizes {@code n} elements of {@code src} (f32, bf16 or f16; {@code n} a whole number of
     * blocks) into {@code format} blocks of {@code dst} from byte {@code dstByteOffset}, exactly as
     * ggml's reference quantizer does from the f32 values.
     *
     * @throws IllegalArgumentException for a value that is NaN or infinite
     */
    public static void quantize(MemorySegment src, DType srcType, BlockFormat format, MemorySegment dst,
                                long dstByteOffset, long n) {
        if (!convertible(srcType)) {
            throw new IllegalArgumentException("no conversion from " + srcType + " to " + format);
        }
        int piece = BLOCK / format.blockElements() * format.blockElements();
        float[] in = new float[piece];
        byte[] out = new byte[(int) format.rowBytes(piece)];
        for (long done = 0; done < n; done += piece) {
            int m = (int) Math.min(piece, n - done);
            if (srcType == DType.F32) {
                MemorySegment.copy(src, F32_LE, done * 4, in, 0, m);
            } else {
                for (int i = 0; i < m; i++) {
                    in[i] = load(src, done + i, srcType);
                }
            }
            format.quantize(in, 0, m, out, 0);
            MemorySegment.copy(out, 0, dst, ValueLayout.JAVA_BYTE, dstByteOffset + format.rowBytes(done),
                    (int) format.rowBytes(m));
        }
    }
}
