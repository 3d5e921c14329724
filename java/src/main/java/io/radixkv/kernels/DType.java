package io.radixkv.kernels;

import java.util.Locale;

/**
 * Element types of tensors and KV caches. The codes are the {@code RKV_DTYPE_*} values of
 * radixkv.h, written out so that this interface layer does not load the native bindings
 * (BindingsDriftTest checks that they still agree).
 */
public enum DType {
    F32(0, 4, "f32"),
    F16(1, 2, "f16"),
    BF16(2, 2, "bf16"),
    /** FP8 E4M3, finite-only (no infinities), max 448. */
    FP8_E4M3(3, 1, "fp8_e4m3"),
    /** FP8 E5M2, max 57344. */
    FP8_E5M2(4, 1, "fp8_e5m2");

    private final int code;
    private final int bytes;
    private final String label;

    DType(int code, int bytes, String label) {
        this.code = code;
        this.bytes = bytes;
        this.label = label;
    }

    /** The {@code RKV_DTYPE_*} code passed to native functions. */
    public int code() {
        return code;
    }

    /** Size of one element in bytes. */
    public int bytes() {
        return bytes;
    }

    public boolean isFp8() {
        return this == FP8_E4M3 || this == FP8_E5M2;
    }

    /** The largest finite value of the type. */
    public float maxFinite() {
        return switch (this) {
            case F32 -> Float.MAX_VALUE;
            case F16 -> 65504f;
            case BF16 -> 3.3895314e38f;
            case FP8_E4M3 -> 448f;
            case FP8_E5M2 -> 57344f;
        };
    }

    public String label() {
        return label;
    }

    /** Parses names used on command lines and in configs: f32, f16, bf16, fp8 (= e4m3), fp8_e4m3, fp8_e5m2. */
    public static DType parse(String name) {
        String n = name.trim().toLowerCase(Locale.ROOT).replace('-', '_');
        return switch (n) {
            case "f32", "float32", "float" -> F32;
            case "f16", "float16", "half" -> F16;
            case "bf16", "bfloat16" -> BF16;
            case "fp8", "fp8_e4m3", "e4m3", "float8_e4m3fn" -> FP8_E4M3;
            case "fp8_e5m2", "e5m2", "float8_e5m2" -> FP8_E5M2;
            default -> throw new IllegalArgumentException(
                    "unknown dtype '" + name + "' (expected f32, f16, bf16, fp8, fp8_e4m3 or fp8_e5m2)");
        };
    }

    public static DType fromCode(int code) {
        for (DType d : values()) {
            if (d.code == code) {
                return d;
            }
        }
        throw new IllegalArgumentException("unknown dtype code " + code);
    }

    @Override
    public String toString() {
        return label;
    }
}
