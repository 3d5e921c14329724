package io.radixkv.model;

import io.radixkv.checkpoint.Checkpoint;
import io.radixkv.checkpoint.CheckpointException;
import io.radixkv.checkpoint.CheckpointLoader;
import io.radixkv.checkpoint.ParameterStore;
import io.radixkv.checkpoint.TensorEntry;
import io.radixkv.checkpoint.TensorSpec;
import io.radixkv.checkpoint.gguf.GgufFile;
import io.radixkv.checkpoint.gguf.GgufTensor;
import io.radixkv.kernels.DType;
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
 * Block-quantized tensors (Q8_0, Q4_0, Q5_0, Q4_K, Q6_K) are dequantized into the weights' dtype at
 * load, with a log line saying so: the engine has no quantized kernels yet, so such a file takes
 * the memory of its f32/bf16 form; other quantized types are refused naming the tensor.
 */
final class GgufWeights {
    private static final Logger LOG = LogManager.getLogger(GgufWeights.class);

    private GgufWeights() {}

    /** Loads {@code file}; matrices become {@code dtype}. */
    static Loaded load(Path file, DType dtype) throws IOException {
        try (GgufFile f = GgufFile.open(file)) {
            String arch = GgufConfig.architecture(f);
            ModelConfig config = GgufConfig.read(f);
            WeightLayout layout = WeightLayout.of(config, dtype);
            Checkpoint checkpoint = checkpoint(f, config, layout);
            ParameterStore store = CheckpointLoader.load(checkpoint, layout.params(), layout.tensors());
            logDequantized(f, checkpoint, dtype);
            try {
                if (arch.equals("llama")) {
                    unpermuteQk(store, config, dtype);
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

    private static void logDequantized(GgufFile f, Checkpoint checkpoint, DType dtype) {
        Map<String, Integer> quantized = new TreeMap<>();
        for (TensorEntry t : checkpoint.tensors().values()) {
            if (!Set.of("F32", "F16", "BF16").contains(t.dtype())) {
                quantized.merge(t.dtype(), 1, Integer::sum);
            }
        }
        if (!quantized.isEmpty()) {
            LOG.info(f.file() + ": quantized tensors " + quantized + " were dequantized to " + dtype.label()
                    + " at load: the engine does not run quantized weights yet");
        }
    }

    /** Puts llama's q and k rows back in rotate-half order, head by head. */
    private static void unpermuteQk(ParameterStore store, ModelConfig c, DType dtype) {
        long rowBytes = (long) c.hidden() * dtype.bytes();
        int half = c.headDim() / 2;
        MemorySegment head = MemorySegment.ofArray(new byte[Math.toIntExact(c.headDim() * rowBytes)]);
        for (int l = 0; l < c.layers(); l++) {
            MemorySegment qkv = store.get(WeightLayout.layer(l, WeightLayout.QKV));
            for (int h = 0; h < c.heads() + c.kvHeads(); h++) {
                long base = (long) h * c.headDim() * rowBytes; // k heads follow the q heads
                MemorySegment.copy(qkv, base, head, 0, head.byteSize());
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
