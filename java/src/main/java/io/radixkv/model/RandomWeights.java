package io.radixkv.model;

import io.radixkv.checkpoint.ElementConversion;
import io.radixkv.checkpoint.ParamSpec;
import io.radixkv.checkpoint.ParameterStore;
import io.radixkv.quant.BlockFormat;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.stream.IntStream;

/**
 * Deterministic pseudo-random parameters: every block that is not an alias draws uniform values
 * (of its {@link WeightLayout.Init}) from its own stream, seeded by the seed and the block's
 * position, so the result does not depend on threads.
 */
final class RandomWeights {
    private RandomWeights() {}

    /** A new store of {@code layout}'s blocks filled from {@code seed}; the caller closes it. */
    static ParameterStore create(WeightLayout layout, long seed) {
        ParameterStore store = ParameterStore.allocateUninitialized(layout.params()); // every element is drawn
        try {
            List<ParamSpec> own = new ArrayList<>();
            for (ParamSpec p : layout.params()) {
                if (p.tiedTo() == null) {
                    own.add(p);
                }
            }
            IntStream.range(0, own.size()).parallel().forEach(i -> {
                ParamSpec p = own.get(i);
                WeightLayout.Init init = layout.init().get(p.name());
                if (init == null) {
                    throw new IllegalStateException("layout has no random init for block " + p.name());
                }
                fill(store.get(p.name()), p, init, mix(seed, i));
            });
            return store;
        } catch (RuntimeException e) {
            store.close();
            throw e;
        }
    }

    private static long mix(long seed, long index) {
        long z = seed + 0x9E3779B97F4A7C15L * (index + 1);
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }

    private static void fill(MemorySegment seg, ParamSpec p, WeightLayout.Init init, long seed) {
        SplittableRandom r = new SplittableRandom(seed);
        double mean = init.mean();
        double a = init.std() * Math.sqrt(3);
        long n = p.elements();
        if (p.quantized()) {
            // the values a dense block would hold, row by row, quantized as ggml's reference quantizer does
            int k = Math.toIntExact(p.shape()[1]);
            float[] row = new float[k];
            long offset = 0;
            for (long i = 0; i < p.shape()[0]; i++) {
                for (int c = 0; c < k; c++) {
                    row[c] = (float) (mean + (2 * r.nextDouble() - 1) * a);
                }
                BlockFormat f = p.formatOfRow(i);
                byte[] q = new byte[(int) f.rowBytes(k)];
                f.quantize(row, 0, k, q, 0);
                MemorySegment.copy(q, 0, seg, ValueLayout.JAVA_BYTE, offset, q.length);
                offset += q.length;
            }
            return;
        }
        for (long i = 0; i < n; i++) {
            ElementConversion.store(seg, i, p.dtype(), (float) (mean + (2 * r.nextDouble() - 1) * a));
        }
    }
}
