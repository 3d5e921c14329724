package io.radixkv.quant;

/**
 * A block-quantized format: {@code blockElements} consecutive values of a row stored in
 * {@code blockBytes} bytes, little-endian, laid out as ggml's block struct of the same name.
 * Rows are whole blocks. Stateless and thread-safe.
 */
public enum BlockFormat {
    /** {@code {f16 d; i8 qs[32]}}: x = d·q. */
    Q8_0(32, 34, 8),
    /** {@code {f16 d; u8 qs[16]}}: x = d·(q − 8); byte j holds value j (low nibble) and j + 16 (high nibble). */
    Q4_0(32, 18, 2),
    /**
     * {@code {f16 d; u8 qh[4]; u8 qs[16]}}: x = d·(q − 16), q 5-bit: low 4 bits as in Q4_0, bit 4
     * of value j is bit j of the little-endian u32 {@code qh}.
     */
    Q5_0(32, 22, 6),
    /** {@code {f16 d, dmin; u8 scales[12]; u8 qs[128]}}: 8 sub-blocks of 32, x = d·sc·q − dmin·m (6-bit sc, m). */
    Q4_K(256, 144, 12),
    /** {@code {u8 ql[128]; u8 qh[64]; i8 scales[16]; f16 d}}: 16 sub-blocks of 16, x = d·sc·(q − 32), q 6-bit. */
    Q6_K(256, 210, 14);

    private final int blockElements;
    private final int blockBytes;
    private final int ggmlType;

    BlockFormat(int blockElements, int blockBytes, int ggmlType) {
        this.blockElements = blockElements;
        this.blockBytes = blockBytes;
        this.ggmlType = ggmlType;
    }

    /** ggml's type id of the format: the {@code RKV_QUANT_*} code of radixkv.h and the GGUF tensor type. */
    public int ggmlType() {
        return ggmlType;
    }

    /** Lower-case name, as on command lines: {@code q8_0}, {@code q4_k}, ... */
    public String label() {
        return name().toLowerCase(java.util.Locale.ROOT);
    }

    /** Bits per weight: block bytes × 8 / block values (Q8_0 8.5, Q4_0 4.5, Q5_0 5.5, Q4_K 4.5, Q6_K 6.5625). */
    public double bitsPerWeight() {
        return blockBytes * 8.0 / blockElements;
    }

    public int blockElements() {
        return blockElements;
    }

    public int blockBytes() {
        return blockBytes;
    }

    /** Bytes of a row of {@code n} values; {@code n} must be a whole number of blocks. */
    public long rowBytes(long n) {
        if (n < 0 || n % blockElements != 0) {
            throw new IllegalArgumentException(this + " rows hold whole blocks of " + blockElements + " values, not "
                    + n);
        }
        return n / blockElements * blockBytes;
    }

    /**
     * Quantizes {@code x[xOff, xOff + n)} into {@code y} from {@code yOff} ({@link #rowBytes} bytes)
     * exactly as ggml's reference quantizer does.
     *
     * @throws IllegalArgumentException when a value is NaN or infinite (naming its index), or
     *     {@code n} is not a whole number of blocks
     */
    public void quantize(float[] x, int xOff, int n, byte[] y, int yOff) {
        long bytes = rowBytes(n);
        java.util.Objects.checkFromIndexSize(xOff, n, x.length);
        java.util.Objects.checkFromIndexSize(yOff, bytes, y.length);
        for (int i = 0; i < n; i++) {
            float v = x[xOff + i];
            if (!Float.isFinite(v)) {
                throw new IllegalArgumentException("value " + i + " is " + v + ": " + this
                        + " quantization needs finite values");
            }
        }
        for (int b = 0; b < n / blockElements; b++) {
            int xs = xOff + b * blockElements;
            int ys = yOff + b * blockBytes;
            switch (this) {
                case Q8_0 -> LegacyBlocks.quantizeQ8_0(x, xs, y, ys);
                case Q4_0 -> LegacyBlocks.quantizeQ4_0(x, xs, y, ys);
                case Q5_0 -> LegacyBlocks.quantizeQ5_0(x, xs, y, ys);
                case Q4_K -> Q4KBlocks.quantize(x, xs, y, ys);
                case Q6_K -> Q6KBlocks.quantize(x, xs, y, ys);
                default -> throw new IllegalStateException();
            }
        }
    }

    /** Dequantizes {@code n} values ({@link #rowBytes} bytes of {@code y} from {@code yOff}) into {@code x} from {@code xOff}. */
    public void dequantize(byte[] y, int yOff, float[] x, int xOff, int n) {
        long bytes = rowBytes(n);
        java.util.Objects.checkFromIndexSize(xOff, n, x.length);
        java.util.Objects.checkFromIndexSize(yOff, bytes, y.length);
        for (int b = 0; b < n / blockElements; b++) {
            int xs = xOff + b * blockElements;
            int ys = yOff + b * blockBytes;
            switch (this) {
                case Q8_0 -> LegacyBlocks.dequantizeQ8_0(y, ys, x, xs);
                case Q4_0 -> LegacyBlocks.dequantizeQ4_0(y, ys, x, xs);
                case Q5_0 -> LegacyBlocks.dequantizeQ5_0(y, ys, x, xs);
                case Q4_K -> Q4KBlocks.dequantize(y, ys, x, xs);
                case Q6_K -> Q6KBlocks.dequantize(y, ys, x, xs);
                default -> throw new IllegalStateException();
            }
        }
    }

    /** f16 bits of {@code v}, rounded to nearest even (ggml's fp32 to fp16). */
    static short half(float v) {
        return Float.floatToFloat16(v);
    }

    static void putHalf(byte[] y, int at, float v) {
        short h = half(v);
        y[at] = (byte) h;
        y[at + 1] = (byte) (h >> 8);
    }

    static float getHalf(byte[] y, int at) {
        return Float.float16ToFloat((short) ((y[at] & 0xFF) | (y[at + 1] << 8)));
    }
}
