package io.radixkv.checkpoint;

import io.radixkv.kernels.DType;
import io.radixkv.quant.BlockFormat;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;

/**
 * One named block of a {@link ParameterStore}: element type and row-major shape, or an alias of
 * another block ({@code tiedTo}, e.g. an output projection tied to the embedding table). A
 * matrix {@code [n, k]} may instead hold block-quantized rows ({@code bands}): consecutive bands of
 * rows, each in one {@link BlockFormat} as ggml stores it (a fused q/k/v block of a Q4_K_M model
 * holds Q4_K q and k rows and Q6_K v rows); {@code dtype} then only names the type its values are
 * dequantized to, and the block's bytes are the bands' rows.
 *
 * @param name block name, unique within a store
 * @param dtype element type (an alias has its target's)
 * @param shape row-major dimensions (an alias has its target's)
 * @param tiedTo the block this one shares memory with, or null for a block of its own
 * @param bands the quantized rows, in order, covering all n rows; empty for a dense block
 */
public record ParamSpec(String name, DType dtype, long[] shape, String tiedTo, List<Band> bands) {
    /**
     * {@code rows} consecutive rows of a quantized matrix, each {@code format.rowBytes(k)} bytes.
     *
     * @param rows rows in the band, positive
     * @param format their block format
     */
    public record Band(long rows, BlockFormat format) {
        public Band {
            Objects.requireNonNull(format, "format");
            if (rows <= 0) {
                throw new IllegalArgumentException("a band holds a positive number of rows, not " + rows);
            }
        }
    }

    public ParamSpec {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(dtype, "dtype");
        shape = shape.clone();
        bands = List.copyOf(bands);
        long n = 1;
        for (long d : shape) {
            if (d <= 0) {
                throw new IllegalArgumentException("block " + name + " has a non-positive dimension in "
                        + Arrays.toString(shape));
            }
            n = Math.multiplyExact(n, d);
        }
        Math.multiplyExact(n, (long) dtype.bytes());
        if (!bands.isEmpty()) {
            if (shape.length != 2 || bands.stream().mapToLong(Band::rows).sum() != shape[0]) {
                throw new IllegalArgumentException("block " + name + Arrays.toString(shape)
                        + ": quantized bands must cover the rows of a matrix, not " + bands);
            }
            for (Band b : bands) {
                b.format().rowBytes(shape[1]); // whole blocks per row
            }
        }
    }

    /** A block of its own. */
    public static ParamSpec of(String name, DType dtype, long... shape) {
        return new ParamSpec(name, dtype, shape, null, List.of());
    }

    /**
     * A matrix {@code [n, k]} of quantized rows; adjacent bands of one format are merged.
     *
     * @throws IllegalArgumentException when the bands do not cover n rows or k is not a whole
     *     number of some band's blocks
     */
    public static ParamSpec quantized(String name, DType dtype, long n, long k, List<Band> bands) {
        List<Band> merged = new ArrayList<>();
        for (Band b : bands) {
            Band last = merged.isEmpty() ? null : merged.get(merged.size() - 1);
            if (last != null && last.format() == b.format()) {
                merged.set(merged.size() - 1, new Band(last.rows() + b.rows(), b.format()));
            } else {
                merged.add(b);
            }
        }
        return new ParamSpec(name, dtype, new long[] {n, k}, null, merged);
    }

    /** A block sharing {@code target}'s memory. */
    public static ParamSpec tied(String name, ParamSpec target) {
        if (target.tiedTo() != null) {
            throw new IllegalArgumentException(name + ": cannot tie to " + target.name() + ", itself an alias");
        }
        return new ParamSpec(name, target.dtype(), target.shape(), target.name(), target.bands());
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

    /** True when the rows are block-quantized ({@link #bands}). */
    public boolean quantized() {
        return !bands.isEmpty();
    }

    public long bytes() {
        return quantized() ? rowByteOffset(shape[0]) : elements() * dtype.bytes();
    }

    /** Byte offset of row {@code row} (0..n) of a matrix, dense or quantized. */
    public long rowByteOffset(long row) {
        if (!quantized()) {
            return row * (shape.length == 0 ? 1 : elements() / shape[0]) * dtype.bytes();
        }
        long offset = 0;
        long left = row;
        for (Band b : bands) {
            long r = Math.min(left, b.rows());
            offset += r * b.format().rowBytes(shape[1]);
            left -= r;
        }
        if (left != 0 || row < 0) {
            throw new IllegalArgumentException("row " + row + " outside " + this);
        }
        return offset;
    }

    /** The block format of row {@code row} of a quantized matrix, or null for a dense block. */
    public BlockFormat formatOfRow(long row) {
        long left = row;
        for (Band b : bands) {
            if (left < b.rows()) {
                return b.format();
            }
            left -= b.rows();
        }
        return null;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof ParamSpec p && name.equals(p.name) && dtype == p.dtype && Arrays.equals(shape, p.shape)
                && Objects.equals(tiedTo, p.tiedTo) && bands.equals(p.bands);
    }

    @Override
    public int hashCode() {
        return Objects.hash(name, dtype, Arrays.hashCode(shape), tiedTo, bands);
    }

    @Override
    public String toString() {
        return name + (tiedTo != null ? " (tied to " + tiedTo + ")" : "") + " "
                + (quantized() ? bands.toString() : dtype.toString()) + Arrays.toString(shape);
    }
}
