package io.radixkv.checkpoint.gguf;

import java.util.HashMap;
import java.util.Locale;
import java.util.Map;

/**
 * The ggml tensor types a GGUF file may declare, with ggml's type ids and block geometry
 * ({@code blockElements} consecutive values of a row stored in {@code blockBytes} bytes; 1 and
 * the element size for the plain types). Only types whose geometry is listed here can be read;
 * a file naming another id (the IQ and ternary formats, or an id ggml has retired) is refused.
 *
 * <p>Ids and sizes are ggml's ({@code enum ggml_type} and the block structs of
 * {@code ggml-common.h}): Q4_0 {@code {f16 d; u8 qs[16]}}, Q8_0 {@code {f16 d; i8 qs[32]}},
 * the k-quants super-blocks of 256 values.
 */
public enum GgmlType {
    F32(0, 1, 4),
    F16(1, 1, 2),
    Q4_0(2, 32, 18),
    Q4_1(3, 32, 20),
    Q5_0(6, 32, 22),
    Q5_1(7, 32, 24),
    Q8_0(8, 32, 34),
    Q8_1(9, 32, 36),
    Q2_K(10, 256, 84),
    Q3_K(11, 256, 110),
    Q4_K(12, 256, 144),
    Q5_K(13, 256, 176),
    Q6_K(14, 256, 210),
    Q8_K(15, 256, 292),
    I8(24, 1, 1),
    I16(25, 1, 2),
    I32(26, 1, 4),
    I64(27, 1, 8),
    F64(28, 1, 8),
    BF16(30, 1, 2);

    private static final Map<Integer, GgmlType> BY_ID = new HashMap<>();

    static {
        for (GgmlType t : values()) {
            BY_ID.put(t.id, t);
        }
    }

    private final int id;
    private final int blockElements;
    private final int blockBytes;

    GgmlType(int id, int blockElements, int blockBytes) {
        this.id = id;
        this.blockElements = blockElements;
        this.blockBytes = blockBytes;
    }

    /** The type with ggml id {@code id}, or null when this reader does not know it. */
    public static GgmlType byId(int id) {
        return BY_ID.get(id);
    }

    public int id() {
        return id;
    }

    /** Values per block (1 for the plain types). */
    public int blockElements() {
        return blockElements;
    }

    /** Bytes per block. */
    public int blockBytes() {
        return blockBytes;
    }

    /** True for the block-quantized types. */
    public boolean quantized() {
        return blockElements > 1;
    }

    /** The name gguf-py and llama.cpp print (Q4_K, BF16, ...). */
    public String label() {
        return name().toUpperCase(Locale.ROOT);
    }
}
