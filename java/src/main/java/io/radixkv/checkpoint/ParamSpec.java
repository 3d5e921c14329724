package io.radixkv.checkpoint;

import io.radixkv.kernels.DType;
import java.util.Arrays;
import java.util.Objects;

/**
 * One named block of a {@link ParameterStore}: element type and row-major shape, or an alias of
 * another block ({@code tiedTo}, e.g. an output projection tied to the embedding table).
 *
 * @param name block name, unique within a store
 * @param dtype element type (an alias has its target's)
 * @param shape row-major dimensions (an alias has its target's)
 * @param tiedTo the block this one shares memory with, or null for a block of its own
 */
public record ParamSpec(String name, DType dtype, long[] shape, String tiedTo) {
    public ParamSpec {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(dtype, "dtype");
        shape = shape.clone();
        long n = 1;
        for (long d : shape) {
            if (d <= 0) {
                throw new IllegalArgumentException("block " + name + " has a non-positive dimension in "
                        + Arrays.toString(shape));
            }
            n = Math.multiplyExact(n, d);
        }
        Math.multiplyExact(n, (long) dtype.bytes());
    }

    /** A block of its own. */
    public static ParamSpec of(String name, DType dtype, long... shape) {
        return new ParamSpec(name, dtype, shape, null);
    }

    /** A block sharing {@code target}'s memory. */
    public static ParamSpec tied(String name, ParamSpec target) {
        if (target.tiedTo() != null) {
            throw new IllegalArgumentException(name + ": cannot tie to " + target.name() + ", itself an alias");
        }
        return new ParamSpec(name, target.dtype(), target.shape(), target.name());
    }

    @Override
    public long[] shape() {
        return shape.clone();
    }

    public long elements() {
        long n = 1;
        for (long d : shape) {
            n *= d; // checked in the constructor
        }
        return n;
    }

    public long bytes() {
        return elements() * dtype.bytes();
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof ParamSpec p && name.equals(p.name) && dtype == p.dtype && Arrays.equals(shape, p.shape)
                && Objects.equals(tiedTo, p.tiedTo);
    }

    @Override
    public int hashCode() {
        return Objects.hash(name, dtype, Arrays.hashCode(shape), tiedTo);
    }

    @Override
    public String toString() {
        return name + (tiedTo != null ? " (tied to " + tiedTo + ")" : "") + " " + dtype + Arrays.toString(shape);
    }
}
