package io.radixkv.bench;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.radixkv.model.ModelConfig;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * Writes a random-weight Llama checkpoint directory ({@code config.json} and a BF16
 * {@code model.safetensors}, tied embeddings) of a preset's shape with another vocabulary size:
 * a bench model whose logits are as wide as a real tokenizer's (Llama 3's 128256, Qwen3's 151936).
 */
final class RandomCheckpointFiles {
    private static final ObjectMapper JSON = new ObjectMapper();

    private RandomCheckpointFiles() {}

    /** Writes {@code shape} with {@code vocab} ids under {@code dir}; returns {@code dir}. */
    static Path write(Path dir, ModelConfig shape, int vocab, long seed) throws IOException {
        Files.createDirectories(dir);
        ObjectNode c = JSON.createObjectNode();
        c.putArray("architectures").add("LlamaForCausalLM");
        c.put("model_type", "llama").put("hidden_size", shape.hidden()).put("intermediate_size", shape.intermediate())
                .put("num_hidden_layers", shape.layers()).put("num_attention_heads", shape.heads())
                .put("num_key_value_heads", shape.kvHeads()).put("head_dim", shape.headDim()).put("vocab_size", vocab)
                .put("rope_theta", 500000.0).put("rms_norm_eps", 1e-5).put("tie_word_embeddings", true)
                .put("max_position_embeddings", shape.maxPositions()).put("hidden_act", "silu")
                .put("torch_dtype", "bfloat16");
        JSON.writeValue(dir.resolve("config.json").toFile(), c);
        Map<String, long[]> shapes = new LinkedHashMap<>();
        shapes.put("model.embed_tokens.weight", new long[] {vocab, shape.hidden()});
        for (int l = 0; l < shape.layers(); l++) {
            String p = "model.layers." + l + ".";
            shapes.put(p + "self_attn.q_proj.weight", new long[] {shape.qDim(), shape.hidden()});
            shapes.put(p + "self_attn.k_proj.weight", new long[] {shape.kvDim(), shape.hidden()});
            shapes.put(p + "self_attn.v_proj.weight", new long[] {shape.kvDim(), shape.hidden()});
            shapes.put(p + "self_attn.o_proj.weight", new long[] {shape.hidden(), shape.qDim()});
            shapes.put(p + "mlp.gate_proj.weight", new long[] {shape.intermediate(), shape.hidden()});
            shapes.put(p + "mlp.up_proj.weight", new long[] {shape.intermediate(), shape.hidden()});
            shapes.put(p + "mlp.down_proj.weight", new long[] {shape.hidden(), shape.intermediate()});
            shapes.put(p + "input_layernorm.weight", new long[] {shape.hidden()});
            shapes.put(p + "post_attention_layernorm.weight", new long[] {shape.hidden()});
        }
        shapes.put("model.norm.weight", new long[] {shape.hidden()});
        SplittableRandom rnd = new SplittableRandom(seed);
        // norms at 1, matrices uniform ±sqrt(3 / in): unit-variance activations, logits that differ
        SafetensorsFiles.write(dir.resolve("model.safetensors"), shapes, true, name -> {
            if (name.endsWith("norm.weight")) {
                return 1f;
            }
            long[] s = shapes.get(name);
            return (float) ((2 * rnd.nextDouble() - 1) * Math.sqrt(3.0 / s[s.length - 1]));
        });
        return dir;
    }
}
