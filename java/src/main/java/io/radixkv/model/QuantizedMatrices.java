package io.radixkv.model;

import io.radixkv.checkpoint.ParamSpec;
import io.radixkv.kernels.DenseKernels;
import io.radixkv.quant.BlockFormat;
import java.lang.foreign.MemorySegment;
import java.util.Set;
import java.util.TreeSet;

/**
 * The model's calls into the quantized dense kernels: a quantized matrix multiplies band by band
 * (each band's rows write their own columns of y), and a quantized embedding table dequantizes
 * the looked-up rows.
 */
final class QuantizedMatrices {
    private QuantizedMatrices() {}

    /** {@code y[m, n] (+)= x[m, k] · wᵀ} for the quantized matrix {@code spec} held in {@code w}. */
    static void linear(DenseKernels dense, ParamSpec spec, MemorySegment x, MemorySegment w, MemorySegment y, long m,
                       long n, long k, boolean accumulate) {
        long row = 0;
        long offset = 0;
        for (ParamSpec.Band b : spec.bands()) {
            long bytes = b.rows() * b.format().rowBytes(k);
            dense.linearQuantized(x, k, w.asSlice(offset, bytes), b.format(), y.asSlice(row * 4), n, m, b.rows(), k,
                    accumulate);
            row += b.rows();
            offset += bytes;
        }
    }

    /** The one format of a quantized embedding table (its rows are looked up by token id). */
    static BlockFormat tableFormat(ParamSpec spec) {
        if (spec.bands().size() != 1) {
            throw new IllegalArgumentException("embedding table " + spec + " mixes formats");
        }
        return spec.bands().get(0).format();
    }

    /**
     * Refuses weights whose block formats {@code dense} does not run, naming them.
     *
     * @throws IllegalArgumentException e.g. quantized weights on the CUDA backend
     */
    static void requireSupported(DenseKernels dense, ModelWeights weights) {
        Set<String> missing = new TreeSet<>();
        for (ParamSpec p : weights.store().specs()) {
            for (ParamSpec.Band b : p.bands()) {
                if (!dense.quantizedFormats().contains(b.format())) {
                    missing.add(b.format().label());
                }
            }
        }
        if (!missing.isEmpty()) {
            throw new IllegalArgumentException("the " + dense.name() + " dense kernels do not run block-quantized weights "
                    + missing + ": load the model with --weights-dtype f32, bf16 or f16 (quantized GGUF tensors "
                    + "dequantized: QuantRecipe.DEQUANTIZE)");
        }
    }
}
