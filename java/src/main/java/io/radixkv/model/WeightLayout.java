package io.radixkv.model;

import io.radixkv.checkpoint.ParamSpec;
import io.radixkv.checkpoint.TensorSpec;
import io.radixkv.kernels.DType;
import io.radixkv.quant.BlockFormat;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * What a model's parameters are and where they come from: the store blocks ({@link ParamSpec}s,
 * matrices in the weights dtype, norm weights f32), how random weights initialise each block,
 * and the Hugging Face tensors ({@link TensorSpec}s) that fill them from a checkpoint. Q/K/V
 * projections fill one fused {@code [qDim + 2*kvDim, hidden]} block and gate/up one
 * {@code [2*intermediate, hidden]} block, so each is a single GEMM; with tied embeddings the
 * output projection is the embedding block and {@code lm_head.weight} is not read.
 *
 * @param params store blocks, in a fixed order (random init seeds by position)
 * @param init random initialisation of each block that is not an alias
 * @param tensors checkpoint tensors and their destinations
 */
public record WeightLayout(List<ParamSpec> params, Map<String, Init> init, List<TensorSpec> tensors) {
    public static final String EMBED = "embed";
    public static final String FINAL_NORM = "final_norm";
    public static final String LM_HEAD = "lm_head";
    public static final String QKV = "qkv";
    public static final String O = "o";
    public static final String GATE_UP = "gate_up";
    public static final String DOWN = "down";
    public static final String INPUT_NORM = "input_norm";
    public static final String POST_NORM = "post_norm";
    public static final String QKV_BIAS = "qkv_bias";
    public static final String Q_NORM = "q_norm";
    public static final String K_NORM = "k_norm";
    public static final String POST_ATTN_NORM = "post_attn_norm";
    public static final String POST_FF_NORM = "post_ff_norm";

    /**
     * Uniform random values of this mean and standard deviation.
     *
     * @param mean mean
     * @param std standard deviation
     */
    public record Init(double mean, double std) {}

    public WeightLayout {
        params = List.copyOf(params);
        init = Collections.unmodifiableMap(new LinkedHashMap<>(init));
        tensors = List.copyOf(tensors);
    }

    /** Name of a layer's block, e.g. {@code layers.3.qkv}. */
    public static String layer(int layer, String part) {
        return "layers." + layer + "." + part;
    }

    /**
     * The layout of the model {@code c} describes. Every model has the Llama blocks; its
     * {@link Architecture} adds q/k/v biases ({@code qkv_bias}, f32, filled from
     * {@code q_proj.bias}/{@code k_proj.bias}/{@code v_proj.bias}), per-head q/k norms
     * ({@code self_attn.q_norm}/{@code k_norm}) and Gemma's sandwich norms. With sandwich norms
     * HF's {@code post_attention_layernorm} is the norm after attention ({@code post_attn_norm})
     * and {@code pre_feedforward_layernorm} the one before the MLP ({@code post_norm}); without
     * them {@code post_attention_layernorm} is the pre-MLP norm.
     *
     * <p>Random projections use standard deviation 1/sqrt(fan_in) (unit-RMS activations),
     * embeddings 1 (1/sqrt(hidden) when they are scaled by sqrt(hidden)), biases 0.5, norm
     * weights act as 1 ± 0.1 (stored 0 ± 0.1 for x̂·(1+w)), the output projection
     * 2/sqrt(hidden) (logits spread a few units, so greedy decoding depends on the context
     * instead of tying).
     */
    public static WeightLayout of(ModelConfig c, DType dtype) {
        return of(c, dtype, Formats.DENSE);
    }

    /**
     * The block format each checkpoint matrix is held in: null for the weights dtype.
     */
    @FunctionalInterface
    public interface Formats {
        /** Every matrix dense. */
        Formats DENSE = (hfName, k) -> null;

        /** The format of tensor {@code hfName}, whose rows hold {@code k} values; null: dense. */
        BlockFormat of(String hfName, long k);
    }

    /**
     * {@link #of(ModelConfig, DType)} with the matrices {@code formats} names held as quantized
     * rows ({@link ParamSpec#quantized}): a fused block takes one band per tensor (a Q4_K_M
     * model's q/k/v block: Q4_K q and k rows, Q6_K v rows).
     *
     * @throws IllegalArgumentException when one fused block would mix quantized and dense tensors
     */
    public static WeightLayout of(ModelConfig c, DType dtype, Formats formats) {
        WeightLayout dense = dense(c, dtype);
        List<ParamSpec> params = new ArrayList<>();
        Map<String, ParamSpec> byName = new LinkedHashMap<>();
        for (ParamSpec p : dense.params()) {
            ParamSpec q = p.tiedTo() != null ? ParamSpec.tied(p.name(), byName.get(p.tiedTo())) : quantized(p, dense, formats);
            params.add(q);
            byName.put(q.name(), q);
        }
        return new WeightLayout(params, dense.init(), dense.tensors());
    }

    private static ParamSpec quantized(ParamSpec p, WeightLayout layout, Formats formats) {
        long[] shape = p.shape();
        if (shape.length != 2) {
            return p;
        }
        List<TensorSpec> parts = layout.tensors().stream().filter(t -> t.param().equals(p.name()))
                .sorted(java.util.Comparator.comparingLong(TensorSpec::offset)).toList();
        List<ParamSpec.Band> bands = new ArrayList<>();
        List<String> dense = new ArrayList<>();
        for (TensorSpec t : parts) {
            BlockFormat f = formats.of(t.hfName(), shape[1]);
            if (f == null) {
                dense.add(t.hfName());
            } else {
                bands.add(new ParamSpec.Band(t.elements() / shape[1], f));
            }
        }
        if (bands.isEmpty()) {
            return p;
        }
        if (!dense.isEmpty()) {
            throw new IllegalArgumentException("block " + p.name() + " would mix quantized tensors with dense ones "
                    + dense + ": a fused block is held in one kind");
        }
        return ParamSpec.quantized(p.name(), p.dtype(), shape[0], shape[1], bands);
    }

    private static WeightLayout dense(ModelConfig c, DType dtype) {
        if (dtype != DType.F32 && dtype != DType.BF16 && dtype != DType.F16) {
            throw new IllegalArgumentException("weight dtype " + dtype + " is not supported (f32, bf16 or f16)");
        }
        int h = c.hidden();
        int q = c.qDim();
        int kv = c.kvDim();
        int inter = c.intermediate();
        long vocab = c.vocab();
        Architecture a = c.arch();
        // Norm weights act as 1 +- 0.1 either way: stored w for x.w, w - 1 for x.(1+w).
        Init norm = new Init(1 - a.norm().weightOffset(), 0.1 / Math.sqrt(3));
        List<ParamSpec> params = new ArrayList<>();
        Map<String, Init> init = new LinkedHashMap<>();
        List<TensorSpec> tensors = new ArrayList<>();

        ParamSpec embed = ParamSpec.of(EMBED, dtype, vocab, h);
        params.add(embed);
        init.put(EMBED, new Init(0, a.scaleEmbeddings() ? 1.0 / Math.sqrt(h) : 1.0));
        tensors.add(TensorSpec.of("model.embed_tokens.weight", EMBED, 0, vocab, h));
        for (int l = 0; l < c.layers(); l++) {
            String p = "model.layers." + l + ".";
            String qkv = layer(l, QKV);
            String o = layer(l, O);
            String gateUp = layer(l, GATE_UP);
            String down = layer(l, DOWN);
            String inNorm = layer(l, INPUT_NORM);
            String postNorm = layer(l, POST_NORM);
            params.add(ParamSpec.of(qkv, dtype, c.qkvDim(), h));
            params.add(ParamSpec.of(o, dtype, h, q));
            params.add(ParamSpec.of(gateUp, dtype, 2L * inter, h));
            params.add(ParamSpec.of(down, dtype, h, inter));
            params.add(ParamSpec.of(inNorm, DType.F32, h));
            params.add(ParamSpec.of(postNorm, DType.F32, h));
            init.put(qkv, new Init(0, 1.0 / Math.sqrt(h)));
            init.put(o, new Init(0, 1.0 / Math.sqrt(q)));
            init.put(gateUp, new Init(0, 1.0 / Math.sqrt(h)));
            init.put(down, new Init(0, 1.0 / Math.sqrt(inter)));
            init.put(inNorm, norm);
            init.put(postNorm, norm);
            tensors.add(TensorSpec.of(p + "self_attn.q_proj.weight", qkv, 0, q, h));
            tensors.add(TensorSpec.of(p + "self_attn.k_proj.weight", qkv, (long) q * h, kv, h));
            tensors.add(TensorSpec.of(p + "self_attn.v_proj.weight", qkv, (long) (q + kv) * h, kv, h));
            tensors.add(TensorSpec.of(p + "self_attn.o_proj.weight", o, 0, h, q));
            tensors.add(TensorSpec.of(p + "mlp.gate_proj.weight", gateUp, 0, inter, h));
            tensors.add(TensorSpec.of(p + "mlp.up_proj.weight", gateUp, (long) inter * h, inter, h));
            tensors.add(TensorSpec.of(p + "mlp.down_proj.weight", down, 0, h, inter));
            tensors.add(TensorSpec.of(p + "input_layernorm.weight", inNorm, 0, h));
            if (a.qkvBias()) {
                String bias = layer(l, QKV_BIAS);
                params.add(ParamSpec.of(bias, DType.F32, c.qkvDim()));
                init.put(bias, new Init(0, 0.5));
                tensors.add(TensorSpec.of(p + "self_attn.q_proj.bias", bias, 0, q));
                tensors.add(TensorSpec.of(p + "self_attn.k_proj.bias", bias, q, kv));
                tensors.add(TensorSpec.of(p + "self_attn.v_proj.bias", bias, (long) q + kv, kv));
            }
            if (a.qkNorm()) {
                for (String[] qk : new String[][] {{Q_NORM, "self_attn.q_norm.weight"}, {K_NORM, "self_attn.k_norm.weight"}}) {
                    String name = layer(l, qk[0]);
                    params.add(ParamSpec.of(name, DType.F32, c.headDim()));
                    init.put(name, norm);
                    tensors.add(TensorSpec.of(p + qk[1], name, 0, c.headDim()));
                }
            }
            if (a.sandwichNorms()) {
                String postAttn = layer(l, POST_ATTN_NORM);
                String postFf = layer(l, POST_FF_NORM);
                params.add(ParamSpec.of(postAttn, DType.F32, h));
                params.add(ParamSpec.of(postFf, DType.F32, h));
                init.put(postAttn, norm);
                init.put(postFf, norm);
                tensors.add(TensorSpec.of(p + "post_attention_layernorm.weight", postAttn, 0, h));
                tensors.add(TensorSpec.of(p + "pre_feedforward_layernorm.weight", postNorm, 0, h));
                tensors.add(TensorSpec.of(p + "post_feedforward_layernorm.weight", postFf, 0, h));
            } else {
                tensors.add(TensorSpec.of(p + "post_attention_layernorm.weight", postNorm, 0, h));
            }
        }
        params.add(ParamSpec.of(FINAL_NORM, DType.F32, h));
        init.put(FINAL_NORM, norm);
        tensors.add(TensorSpec.of("model.norm.weight", FINAL_NORM, 0, h));
        if (c.tiedEmbeddings()) {
            params.add(ParamSpec.tied(LM_HEAD, embed));
        } else {
            params.add(ParamSpec.of(LM_HEAD, dtype, vocab, h));
            init.put(LM_HEAD, new Init(0, 2.0 / Math.sqrt(h)));
            tensors.add(TensorSpec.of("lm_head.weight", LM_HEAD, 0, vocab, h));
        }
        return new WeightLayout(params, init, tensors);
    }
}
