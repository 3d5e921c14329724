package io.radixkv.model;

import io.radixkv.checkpoint.Checkpoint;
import io.radixkv.checkpoint.CheckpointException;
import io.radixkv.checkpoint.CheckpointLoader;
import io.radixkv.checkpoint.ParamSpec;
import io.radixkv.checkpoint.ParameterStore;
import io.radixkv.checkpoint.TensorEntry;
import io.radixkv.checkpoint.TensorSpec;
import io.radixkv.checkpoint.gguf.GgufFile;
import io.radixkv.checkpoint.gguf.GgufTensor;
import io.radixkv.kernels.DType;
import io.radixkv.quant.BlockFormat;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

/**
 * Loads a model from a GGUF file: the config from its metadata ({@link GgufConfig}), its tensors
 * renamed to the Hugging Face names {@link WeightLayout} asks for and loaded by the same
 * {@link CheckpointLoader}, then two conversions llama.cpp's
 * converter applied undone in place:
 *
 * <ul>
 *   <li>llama: q and k projection rows were permuted per head from rotate-half order to
 *       interleaved pairs (GGUF row {@code 2i + j} is HF row {@code j·headDim/2 + i}); they are
 *       put back, so the one decoder's rotate-half RoPE applies;
 *   <li>gemma3: every RMSNorm weight was stored as {@code 1 + w}; 1 is subtracted, so
 *       {@link Architecture.Norm#ONE_PLUS_WEIGHT} applies as for a Hugging Face checkpoint (the
 *       sum {@code 1 + w} the norm then forms is the stored f32 value exactly).
 * </ul>
 *
 * Every tensor of the file must be one the model uses (else it is refused naming the tensor);
 * llama's {@code rope_freqs.weight} is read into the config's RoPE by {@link GgufConfig}.
 * Block-quantized tensors (Q8_0, Q4_0, Q5_0, Q4_K, Q6_K) stay in their blocks as stored (copied
 * byte for byte; the dense kernels multiply them as they are), or are dequantized into the weights'
 * dtype with {@link QuantRecipe#DEQUANTIZE}; other quantized types are refused naming the tensor.
 */
final class GgufWeights {
    private static final Logger LOG = LogManager.getLogger(GgufWeights.class);

    private GgufWeights() {}

    /** Loads {@code file}; matrices become {@code dtype}, quantized ones stay as stored. */
    static Loaded load(Path file, DType dtype) throws IOException {
        return load(file, dtype, QuantRecipe.AS_STORED);
    }

    /** Loads {@code file}; matrices are held as {@code recipe} says ({@link QuantRecipe}), else as {@code dtype}. */
    static Loaded load(Path file, DType dtype, QuantRecipe recipe) throws IOException {
        try (GgufFile f = GgufFile.open(file)) {
            String arch = GgufConfig.architecture(f);
            ModelConfig config = GgufConfig.read(f);
            WeightLayout layout = WeightLayout.of(config, dtype, formats(f, config, recipe));
            Checkpoint checkpoint = checkpoint(f, config, layout);
            ParameterStore store = CheckpointLoader.load(checkpoint, layout.params(), layout.tensors());
            logQuantized(f, checkpoint, dtype, recipe);
            try {
                if (arch.equals("llama")) {
                    unpermuteQk(store, config);
                }
                if (config.arch().norm() == Architecture.Norm.ONE_PLUS_WEIGHT) {
                    subtractOneFromNorms(store, layout);
                }
            } catch (RuntimeException | Error e) {
                store.close();
                throw e;
            }
            return new Loaded(config, store);
        }
    }

    /**
     * Each matrix's format: a quantized tensor's own (unless {@code recipe} dequantizes), a dense
     * one's from the recipe.
     */
    private static WeightLayout.Formats formats(GgufFile f, ModelConfig config, QuantRecipe recipe) {
        boolean sandwich = config.arch().sandwichNorms();
        return (hfName, k) -> {
            GgufTensor t = f.tensors().get(ggufName(hfName, sandwich));
            BlockFormat stored = t == null ? null : blockFormat(t.type().label());
            if (stored != null) {
                return recipe == QuantRecipe.DEQUANTIZE ? null : stored;
            }
            return recipe.formatOf(hfName, k, config.layers(), config.tiedEmbeddings());
        };
    }

    /** The block format named by a GGUF tensor type label, or null for a dense (or unknown) one. */
    static BlockFormat blockFormat(String label) {
        for (BlockFormat b : BlockFormat.values()) {
            if (b.name().equals(label)) {
                return b;
            }
        }
        return null;
    }

    /** A config and the store loaded for it (the caller closes the store). */
    record Loaded(ModelConfig config, ParameterStore store) {}

    /** The GGUF name of a Hugging Face tensor name. */
    static String ggufName(String hf, boolean sandwichNorms) {
        switch (hf) {
            case "model.embed_tokens.weight" -> {
                return "token_embd.weight";
            }
            case "model.norm.weight" -> {
                return "output_norm.weight";
            }
            case "lm_head.weight" -> {
                return "output.weight";
            }
            default -> { }
        }
        String prefix = "model.layers.";
        if (!hf.startsWith(prefix)) {
            throw new IllegalArgumentException("no GGUF name for " + hf);
        }
        int dot = hf.indexOf('.', prefix.length());
        String layer = hf.substring(prefix.length(), dot);
        String rest = hf.substring(dot + 1);
        String part = switch (rest) {
            case "self_attn.q_proj.weight" -> "attn_q.weight";
            case "self_attn.k_proj.weight" -> "attn_k.weight";
            case "self_attn.v_proj.weight" -> "attn_v.weight";
            case "self_attn.q_proj.bias" -> "attn_q.bias";
            case "self_attn.k_proj.bias" -> "attn_k.bias";
            case "self_attn.v_proj.bias" -> "attn_v.bias";
            case "self_attn.o_proj.weight" -> "attn_output.weight";
            case "self_attn.q_norm.weight" -> "attn_q_norm.weight";
            case "self_attn.k_norm.weight" -> "attn_k_norm.weight";
            case "mlp.gate_proj.weight" -> "ffn_gate.weight";
            case "mlp.up_proj.weight" -> "ffn_up.weight";
            case "mlp.down_proj.weight" -> "ffn_down.weight";
            case "input_layernorm.weight" -> "attn_norm.weight";
            case "post_attention_layernorm.weight" -> sandwichNorms ? "post_attention_norm.weight" : "ffn_norm.weight";
            case "pre_feedforward_layernorm.weight" -> "ffn_norm.weight";
            case "post_feedforward_layernorm.weight" -> "post_ffw_norm.weight";
            default -> throw new IllegalArgumentException("no GGUF name for " + hf);
        };
        return "blk." + layer + "." + part;
    }

    /**
     * The file's tensors under the Hugging Face names of {@code layout}, after checking that each
     * required one is present and the file holds nothing else.
     */
    static Checkpoint checkpoint(GgufFile f, ModelConfig config, WeightLayout layout) throws CheckpointException {
        boolean sandwich = config.arch().sandwichNorms();
        Map<String, TensorEntry> entries = new LinkedHashMap<>();
        Set<String> used = new LinkedHashSet<>();
        for (TensorSpec spec : layout.tensors()) {
            String name = ggufName(spec.hfName(), sandwich);
            GgufTensor t = f.tensors().get(name);
            if (t == null) {
                if (spec.optional()) {
                    continue;
                }
                throw new CheckpointException(f.file() + ": no tensor " + name + " (" + spec.hfName() + ")");
            }
            used.add(name);
            entries.put(spec.hfName(), new TensorEntry(name, f.file(), t.type().label(), t.shape(), t.offset(),
                    t.bytes()));
        }
        if (config.layerAttention().get(0).rope().scaling() == RopeSpec.Scaling.FACTORS) {
            used.add(GgufConfig.ROPE_FREQS); // read into the config (GgufConfig)
        }
        for (String name : f.tensors().keySet()) {
            if (!used.contains(name)) {
                throw new CheckpointException(f.file() + ": tensor " + name + " is not part of the "
                        + config.arch().modelType() + " model radixkv runs");
            }
        }
        return new Checkpoint(f.file(), List.of(f), entries);
    }

    private static void logQuantized(GgufFile f, Checkpoint checkpoint, DType dtype, QuantRecipe recipe) {
        Map<String, Integer> quantized = new TreeMap<>();
        for (TensorEntry t : checkpoint.tensors().values()) {
            if (!Set.of("F32", "F16", "BF16").contains(t.dtype())) {
                quantized.merge(t.dtype(), 1, Integer::sum);
            }
        }
        if (!quantized.isEmpty()) {
            LOG.info(f.file() + ": quantized tensors " + quantized + (recipe == QuantRecipe.DEQUANTIZE
                    ? " were dequantized to " + dtype.label() + " at load" : " are kept as stored"));
        }
    }

    /** Puts llama's q and k rows back in rotate-half order, head by head (rows of any format: dense or quantized). */
    private static void unpermuteQk(ParameterStore store, ModelConfig c) {
        int half = c.headDim() / 2;
        for (int l = 0; l < c.layers(); l++) {
            String name = WeightLayout.layer(l, WeightLayout.QKV);
            ParamSpec spec = store.spec(name);
            MemorySegment qkv = store.get(name);
            for (int h = 0; h < c.heads() + c.kvHeads(); h++) {
                long row0 = (long) h * c.headDim(); // k heads follow the q heads
                long base = spec.rowByteOffset(row0);
                long headBytes = spec.rowByteOffset(row0 + c.headDim()) - base;
                long rowBytes = headBytes / c.headDim(); // a head's rows share one format
                MemorySegment head = MemorySegment.ofArray(new byte[Math.toIntExact(headBytes)]);
                MemorySegment.copy(qkv, base, head, 0, headBytes);
                for (int i = 0; i < half; i++) {
                    for (int j = 0; j < 2; j++) {
                        MemorySegment.copy(head, (2L * i + j) * rowBytes, qkv, base + ((long) j * half + i) * rowBytes,
                                rowBytes);
                    }
                }
            }
        }
    }

    /** The blocks holding RMSNorm weights: the final norm and these parts of each layer. */
    private static final Set<String> NORM_PARTS = Set.of(WeightLayout.INPUT_NORM, WeightLayout.POST_NORM,
            WeightLayout.Q_NORM, WeightLayout.K_NORM, WeightLayout.POST_ATTN_NORM, WeightLayout.POST_FF_NORM);

    /** Turns every stored {@code 1 + w} norm weight (f32) back into {@code w}. */
    private static void subtractOneFromNorms(ParameterStore store, WeightLayout layout) {
        for (var p : layout.params()) {
            String n = p.name();
            if (!n.equals(WeightLayout.FINAL_NORM) && !NORM_PARTS.contains(n.substring(n.lastIndexOf('.') + 1))) {
                continue;
            }
            MemorySegment s = store.get(n);
            for (long i = 0; i < p.elements(); i++) {
                s.setAtIndex(ValueLayout.JAVA_FLOAT, i, s.getAtIndex(ValueLayout.JAVA_FLOAT, i) - 1f);
            }
        }
    }
}
