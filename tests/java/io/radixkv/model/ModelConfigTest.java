package io.radixkv.model;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.junit.jupiter.api.Test;

class ModelConfigTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    /** A Llama-2-7B-style config.json (fields as Hugging Face writes them). */
    private static ObjectNode llamaJson() throws Exception {
        return (ObjectNode) JSON.readTree("""
                {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
                 "intermediate_size": 11008, "num_hidden_layers": 32, "num_attention_heads": 32,
                 "num_key_value_heads": 32, "vocab_size": 32000, "rms_norm_eps": 1e-05, "rope_theta": 10000.0,
                 "max_position_embeddings": 4096, "tie_word_embeddings": false, "hidden_act": "silu",
                 "rope_scaling": null, "torch_dtype": "float16"}""");
    }

    @Test
    void parsesHfConfig() throws Exception {
        ModelConfig c = ModelConfig.fromHfConfig(llamaJson());
        assertEquals(new ModelConfig(4096, 11008, 32, 32, 32, 128, 32000, 10000f, 1e-5f, false, 4096), c);
        assertEquals(6_738_415_616L, c.parameterCount()); // Llama-2-7B
        ObjectNode gqa = llamaJson();
        gqa.put("num_key_value_heads", 8);
        gqa.put("head_dim", 64);
        gqa.put("tie_word_embeddings", true);
        ModelConfig g = ModelConfig.fromHfConfig(gqa);
        assertEquals(8, g.kvHeads());
        assertEquals(64, g.headDim());
        assertTrue(g.tiedEmbeddings());
        // Round trip through toHfConfig.
        assertEquals(g, ModelConfig.fromHfConfig(g.toHfConfig()));
        ObjectNode noKv = llamaJson();
        noKv.remove("num_key_value_heads");
        assertEquals(32, ModelConfig.fromHfConfig(noKv).kvHeads());
    }

    @Test
    void rejectsWhatItCannotRun() throws Exception {
        ObjectNode j = llamaJson();
        j.remove("hidden_size");
        var e = assertThrows(IllegalArgumentException.class, () -> ModelConfig.fromHfConfig(j));
        assertTrue(e.getMessage().contains("hidden_size"), e.getMessage());
        ObjectNode q = llamaJson();
        q.put("model_type", "phi3");
        e = assertThrows(IllegalArgumentException.class, () -> ModelConfig.fromHfConfig(q));
        assertTrue(e.getMessage().contains("phi3"), e.getMessage());
        ObjectNode s = llamaJson();
        s.putObject("rope_scaling").put("rope_type", "llama3");
        e = assertThrows(IllegalArgumentException.class, () -> ModelConfig.fromHfConfig(s));
        assertTrue(e.getMessage().contains("rope_scaling"), e.getMessage());
        ObjectNode f = llamaJson();
        f.put("num_hidden_layers", 2.5);
        assertThrows(IllegalArgumentException.class, () -> ModelConfig.fromHfConfig(f));
    }

    @Test
    void validation() {
        var e = assertThrows(IllegalArgumentException.class,
                () -> new ModelConfig(64, 128, 2, 4, 3, 16, 32000, 1e4f, 1e-5f, false, 100));
        assertTrue(e.getMessage().contains("multiple of kvHeads"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> new ModelConfig(64, 128, 2, 4, 2, 15, 32000, 1e4f, 1e-5f, false, 100));
        assertThrows(IllegalArgumentException.class, () -> new ModelConfig(0, 128, 2, 4, 2, 16, 32000, 1e4f, 1e-5f, false, 100));
        assertThrows(IllegalArgumentException.class, () -> new ModelConfig(64, 128, 2, 4, 2, 16, 32000, -1f, 1e-5f, false, 100));
        assertThrows(IllegalArgumentException.class, () -> new ModelConfig(64, 128, 2, 4, 2, 16, 32000, 1e4f, Float.NaN, false, 100));
    }

    @Test
    void presets() {
        assertEquals(32000, ModelPresets.tiny().vocab());
        assertEquals(32000, ModelPresets.small().vocab());
        assertEquals(ModelPresets.small(), ModelPresets.byName(" Small "));
        // The seed models' exact shapes (parameter counts as published).
        ModelConfig llama = ModelPresets.byName("llama-3.2-3b");
        assertEquals(3_212_749_824L, llama.parameterCount());
        assertEquals(RopeSpec.llama3(500000, 32, 1, 4, 8192), llama.layerAttention().get(0).rope());
        ModelConfig qwen = ModelPresets.byName("qwen3-4b");
        assertEquals(4_022_468_096L, qwen.parameterCount());
        assertTrue(qwen.arch().qkNorm());
        assertEquals(128, qwen.headDim());
        ModelConfig gemma = ModelPresets.byName("gemma-3-1b");
        assertEquals(999_885_952L, gemma.parameterCount());
        assertEquals(22, gemma.layerAttention().stream().filter(LayerAttention::sliding).count());
        assertEquals(512, gemma.layerAttention().get(0).slidingWindow());
        assertTrue(gemma.arch().sandwichNorms());
        assertEquals(5, ModelPresets.names().size());
        var e = assertThrows(IllegalArgumentException.class, () -> ModelPresets.byName("huge"));
        assertTrue(e.getMessage().contains("huge"), e.getMessage());
    }
}
