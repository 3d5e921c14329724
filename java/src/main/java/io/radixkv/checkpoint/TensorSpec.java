package io.radixkv.checkpoint;

import java.util.Arrays;
import java.util.Objects;

/**
 * A checkpoint tensor the model needs and where it goes: the tensor named {@code hfName} (as
 * transformers saves it) must have exactly {@code shape}; its elements are copied, converted to
 * the block's dtype, into store block {@code param} starting at element {@code offset}. Several
 * tensors can fill one block (q/k/v into one fused qkv block, gate/up into gateUp).
 *
 * @param hfName tensor name in the safetensors files
 * @param shape the shape the model requires
 * @param optional the tensor may be absent; its part of the block then stays zero
 * @param param destination block of the {@link ParameterStore}
 * @param offset first destination element within the block
 */
public record TensorSpec(String hfName, long[] shape, boolean optional, String param, long offset) {
    public TensorSpec {
        Objects.requireNonNull(hfName, "hfName");
        Objects.requireNonNull(param, "param");
        shape = shape.clone();
        long n = 1;
        for (long d : shape) {
            if (d < 0) {
                throw new IllegalArgumentException(hfName + ": negative dimension in " + Arrays.toString(shape));
            }
            n = Math.multiplyExact(n, d);
        }
        if (offset < 0) {
            throw new IllegalArgumentException(hfName + ": negative offset " + offset);
        }
    }

    /** A required tensor copied into {@code param} at element {@code offset}. */
    public static TensorSpec of(String hfName, String param, long offset, long... shape) {
        return new TensorSpec(hfName, shape, false, param, offset);
    }

    /** A tensor that may be absent (its part of the block then stays zero). */
    public static TensorSpec optional(String hfName, String param, long offset, long... shape) {
        return new TensorSpec(hfName, shape, true, param, offset);
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

    @Override
    public boolean equals(Object o) {
        return o instanceof TensorSpec t && hfName.equals(t.hfName) && Arrays.equals(shape, t.shape)
                && optional == t.optional && param.equals(t.param) && offset == t.offset;
    }

    @Override
    public int hashCode() {
        return Objects.hash(hfName, Arrays.hashCode(shape), optional, param, offset);
    }

    @Override
    public String toString() {
        return hfName + Arrays.toString(shape) + (optional ? "?" : "") + " -> " + param + "@" + offset;
    }
}
