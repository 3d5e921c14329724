package io.radixkv.model;

import java.util.List;
import java.util.Locale;

/**
 * How one layer kind's rotary embedding turns a position into angles: the base {@code theta}
 * and the frequency scaling of the checkpoint's {@code rope_type}, as transformers computes
 * its {@code inv_freq} table, or explicit per-frequency factors as a GGUF file's
 * {@code rope_freqs} tensor carries them. Rotation is always rotate-half over the whole head
 * (pairs {@code (i, i + d/2)}).
 *
 * @param theta RoPE base; {@code inv_freq[i] = theta^(-2i/d)} before scaling
 * @param scaling the frequency scaling
 * @param factor {@code factor} of linear and llama3 scaling (1 for none)
 * @param lowFreqFactor llama3 {@code low_freq_factor}
 * @param highFreqFactor llama3 {@code high_freq_factor}
 * @param originalMaxPositions llama3 {@code original_max_position_embeddings}
 * @param freqFactors {@link Scaling#FACTORS}: per frequency {@code i} the divisor of
 *     {@code theta^(-2i/d)} ({@code d/2} values, each finite and positive); empty otherwise
 */
public record RopeSpec(double theta, Scaling scaling, double factor, double lowFreqFactor, double highFreqFactor,
                       int originalMaxPositions, List<Double> freqFactors) {
    /**
     * The {@code rope_type}s radixkv computes ({@code default}, {@code linear}, {@code llama3}),
     * and explicit per-frequency factors (llama.cpp's {@code freq_factors}, which have no
     * {@code config.json} form).
     */
    public enum Scaling {
        NONE, LINEAR, LLAMA3, FACTORS;

        /** The HF {@code rope_type} name. */
        public String hfName() {
            return this == NONE ? "default" : name().toLowerCase(Locale.ROOT);
        }
    }

    public RopeSpec {
        if (!Double.isFinite(theta) || theta <= 0) {
            throw new IllegalArgumentException("rope_theta must be positive and finite, got " + theta);
        }
        if (scaling == null) {
            throw new IllegalArgumentException("rope scaling must not be null");
        }
        if (!Double.isFinite(factor) || factor <= 0) {
            throw new IllegalArgumentException("rope factor must be positive and finite, got " + factor);
        }
        if (scaling == Scaling.LLAMA3) {
            if (!(lowFreqFactor > 0) || !(highFreqFactor > lowFreqFactor) || !Double.isFinite(highFreqFactor)) {
                throw new IllegalArgumentException("llama3 rope needs 0 < low_freq_factor < high_freq_factor, got "
                        + lowFreqFactor + ", " + highFreqFactor);
            }
            if (originalMaxPositions <= 0) {
                throw new IllegalArgumentException("llama3 rope needs original_max_position_embeddings > 0, got "
                        + originalMaxPositions);
            }
        }
        if (freqFactors == null) {
            throw new IllegalArgumentException("freqFactors must not be null");
        }
        freqFactors = List.copyOf(freqFactors);
        if ((scaling == Scaling.FACTORS) == freqFactors.isEmpty()) {
            throw new IllegalArgumentException("per-frequency factors are given exactly with FACTORS scaling");
        }
        for (double f : freqFactors) {
            if (!Double.isFinite(f) || f <= 0) {
                throw new IllegalArgumentException("rope frequency factors must be positive and finite, got " + f);
            }
        }
    }

    /** Plain RoPE with base theta. */
    public static RopeSpec plain(double theta) {
        return new RopeSpec(theta, Scaling.NONE, 1, 0, 0, 0, List.of());
    }

    /** Linear (position interpolation) scaling: every frequency divided by factor. */
    public static RopeSpec linear(double theta, double factor) {
        return new RopeSpec(theta, Scaling.LINEAR, factor, 0, 0, 0, List.of());
    }

    /** Llama 3.x frequency bands. */
    public static RopeSpec llama3(double theta, double factor, double low, double high, int originalMaxPositions) {
        return new RopeSpec(theta, Scaling.LLAMA3, factor, low, high, originalMaxPositions, List.of());
    }

    /**
     * This rotation with every inverse frequency {@code i} further divided by {@code factors[i]},
     * as llama.cpp applies a {@code rope_freqs} tensor on top of the file's base and linear scale.
     *
     * @throws IllegalArgumentException for llama3 bands (which a GGUF expresses as factors
     *     alone), or a factor that is not finite and positive
     */
    public RopeSpec withFreqFactors(double[] factors) {
        if (scaling != Scaling.NONE && scaling != Scaling.LINEAR) {
            throw new IllegalArgumentException("rope frequency factors cannot combine with " + scaling + " scaling");
        }
        Double[] combined = new Double[factors.length];
        for (int i = 0; i < factors.length; i++) {
            combined[i] = factors[i] * factor;
        }
        return new RopeSpec(theta, Scaling.FACTORS, 1, 0, 0, 0, List.of(combined));
    }

    /**
     * The {@code headDim / 2} inverse frequencies (radians per position) as transformers'
     * {@code _compute_*_parameters} derive them: llama3 leaves wavelengths below
     * {@code L / high_freq_factor} alone, divides those above {@code L / low_freq_factor} by
     * factor and blends linearly in between.
     */
    public double[] invFreq(int headDim) {
        if (headDim <= 0 || headDim % 2 != 0) {
            throw new IllegalArgumentException("headDim must be positive and even, got " + headDim);
        }
        if (scaling == Scaling.FACTORS && freqFactors.size() != headDim / 2) {
            throw new IllegalArgumentException(freqFactors.size() + " rope frequency factors for head size " + headDim
                    + " (need " + headDim / 2 + ")");
        }
        double[] inv = new double[headDim / 2];
        for (int i = 0; i < inv.length; i++) {
            double f = 1.0 / Math.pow(theta, 2.0 * i / headDim);
            inv[i] = switch (scaling) {
                case NONE -> f;
                case LINEAR -> f / factor;
                case LLAMA3 -> llama3Band(f);
                case FACTORS -> f / freqFactors.get(i);
            };
        }
        return inv;
    }

    private double llama3Band(double f) {
        double wavelen = 2 * Math.PI / f;
        double lowWavelen = originalMaxPositions / lowFreqFactor;
        double highWavelen = originalMaxPositions / highFreqFactor;
        if (wavelen < highWavelen) {
            return f;
        }
        if (wavelen > lowWavelen) {
            return f / factor;
        }
        double s = (originalMaxPositions / wavelen - lowFreqFactor) / (highFreqFactor - lowFreqFactor);
        return (1 - s) * f / factor + s * f;
    }
}
