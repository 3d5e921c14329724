package io.radixkv.checkpoint;

import java.nio.file.Path;
import java.util.Arrays;
import java.util.Objects;

/**
 * A tensor as a safetensors header declares it, already checked against its file: the byte
 * range {@code [offset, offset + bytes)} lies inside the file and holds exactly
 * {@code product(shape)} elements of {@code dtype}.
 *
 * @param name tensor name
 * @param file the file holding it
 * @param dtype the safetensors dtype name (F32, BF16, I8, ...)
 * @param shape dimensions
 * @param offset first byte, from the start of the file
 * @param bytes length in bytes
 */
public record TensorEntry(String name, Path file, String dtype, long[] shape, long offset, long bytes) {
    public TensorEntry {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(file, "file");
        Objects.requireNonNull(dtype, "dtype");
        shape = shape.clone();
    }

    @Override
    public long[] shape() {
        return shape.clone();
    }

    /** True when the shape equals {@code expected}. */
    public boolean hasShape(long[] expected) {
        return Arrays.equals(shape, expected);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof TensorEntry t && name.equals(t.name) && file.equals(t.file) && dtype.equals(t.dtype)
                && Arrays.equals(shape, t.shape) && offset == t.offset && bytes == t.bytes;
    }

    @Override
    public int hashCode() {
        return Objects.hash(name, file, dtype, Arrays.hashCode(shape), offset, bytes);
    }

    @Override
    public String toString() {
        return name + " " + dtype + Arrays.toString(shape) + " at " + file + "[" + offset + ", " + (offset + bytes) + ")";
    }
}
