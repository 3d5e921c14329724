package io.radixkv.checkpoint.gguf;

import java.util.Arrays;
import java.util.Objects;

/**
 * A tensor info of a GGUF file, checked against the file: its bytes lie inside the data section
 * at an aligned offset and hold exactly {@code ne} values of {@code type}.
 *
 * @param name tensor name as the file spells it ({@code blk.0.attn_q.weight})
 * @param ne ggml's dimensions, fastest-varying first ({@code ne[0]} is the row length)
 * @param type element or block type
 * @param offset first byte, from the start of the file
 * @param bytes length in bytes
 */
public record GgufTensor(String name, long[] ne, GgmlType type, long offset, long bytes) {
    public GgufTensor {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(type, "type");
        ne = ne.clone();
    }

    @Override
    public long[] ne() {
        return ne.clone();
    }

    /** The dimensions slowest-varying first, as safetensors and PyTorch write them: {@code ne} reversed. */
    public long[] shape() {
        long[] s = new long[ne.length];
        for (int i = 0; i < ne.length; i++) {
            s[i] = ne[ne.length - 1 - i];
        }
        return s;
    }

    /** Number of values. */
    public long elements() {
        long n = 1;
        for (long d : ne) {
            n *= d; // checked by the reader
        }
        return n;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof GgufTensor t && name.equals(t.name) && Arrays.equals(ne, t.ne) && type == t.type
                && offset == t.offset && bytes == t.bytes;
    }

    @Override
    public int hashCode() {
        return Objects.hash(name, Arrays.hashCode(ne), type, offset, bytes);
    }

    @Override
    public String toString() {
        return name + " " + type.label() + Arrays.toString(shape()) + " at [" + offset + ", " + (offset + bytes) + ")";
    }
}
