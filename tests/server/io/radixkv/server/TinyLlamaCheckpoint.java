package io.radixkv.server;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * Writes a Hugging Face-style model directory for end-to-end tests: a random-weight Llama
 * (hidden 64, 2 layers, tied embeddings, BF16 safetensors) whose vocabulary is the given real
 * tokenizer's, plus that tokenizer's files, so {@code --model DIR} runs text in, text out.
 */
final class TinyLlamaCheckpoint {
    private static final ObjectMapper JSON = new ObjectMapper();
    static final int HIDDEN = 64;
    static final int INTER = 128;
    static final int LAYERS = 2;
    static final int HEADS = 4;
    static final int KV_HEADS = 2;
    static final int HEAD_DIM = 16;

    private TinyLlamaCheckpoint() {}

    /** The tokenizer directory fetched by the test build ({@code -Dradixkv.text.testdata}). */
    static Path tokenizerDir(String name) {
        Path p = Path.of(System.getProperty("radixkv.text.testdata", "build/test-data")).resolve(name);
        if (!Files.isRegularFile(p.resolve("tokenizer.json"))) {
            throw new IllegalStateException("missing " + p.resolve("tokenizer.json")
                    + ": the test build fetches it (scripts/fetch-test-data)");
        }
        return p;
    }

    /** Writes the checkpoint to {@code dir} with the named fetched tokenizer, sized to its vocabulary. */
    static Path withTokenizer(Path dir, String tokenizerName, long seed) throws IOException {
        Path tokDir = tokenizerDir(tokenizerName);
        try (io.radixkv.text.HfTokenizer probe = io.radixkv.text.HfTokenizer.load(tokDir)) {
            return write(dir, tokDir, probe.vocabSize(), seed);
        }
    }

    /** Writes the checkpoint to {@code dir} for a vocabulary of {@code vocab} ids. */
    static Path write(Path dir, Path tokenizerDir, int vocab, long seed) throws IOException {
        Files.createDirectories(dir);
        for (String f : new String[] {"tokenizer.json", "tokenizer_config.json", "generation_config.json",
                "special_tokens_map.json"}) {
            if (Files.isRegularFile(tokenizerDir.resolve(f))) {
                Files.copy(tokenizerDir.resolve(f), dir.resolve(f), StandardCopyOption.REPLACE_EXISTING);
            }
        }
        ObjectNode c = JSON.createObjectNode();
        c.putArray("architectures").add("LlamaForCausalLM");
        c.put("model_type", "llama");
        c.put("hidden_size", HIDDEN);
        c.put("intermediate_size", INTER);
        c.put("num_hidden_layers", LAYERS);
        c.put("num_attention_heads", HEADS);
        c.put("num_key_value_heads", KV_HEADS);
        c.put("head_dim", HEAD_DIM);
        c.put("vocab_size", vocab);
        c.put("rope_theta", 500000.0);
        c.put("rms_norm_eps", 1e-5);
        c.put("tie_word_embeddings", true);
        c.put("max_position_embeddings", 2048);
        c.put("hidden_act", "silu");
        c.put("torch_dtype", "bfloat16");
        JSON.writerWithDefaultPrettyPrinter().writeValue(dir.resolve("config.json").toFile(), c);

        Map<String, long[]> shapes = new LinkedHashMap<>();
        shapes.put("model.embed_tokens.weight", new long[] {vocab, HIDDEN});
        for (int l = 0; l < LAYERS; l++) {
            String p = "model.layers." + l + ".";
            shapes.put(p + "self_attn.q_proj.weight", new long[] {HEADS * HEAD_DIM, HIDDEN});
            shapes.put(p + "self_attn.k_proj.weight", new long[] {KV_HEADS * HEAD_DIM, HIDDEN});
            shapes.put(p + "self_attn.v_proj.weight", new long[] {KV_HEADS * HEAD_DIM, HIDDEN});
            shapes.put(p + "self_attn.o_proj.weight", new long[] {HIDDEN, HEADS * HEAD_DIM});
            shapes.put(p + "mlp.gate_proj.weight", new long[] {INTER, HIDDEN});
            shapes.put(p + "mlp.up_proj.weight", new long[] {INTER, HIDDEN});
            shapes.put(p + "mlp.down_proj.weight", new long[] {HIDDEN, INTER});
            shapes.put(p + "input_layernorm.weight", new long[] {HIDDEN});
            shapes.put(p + "post_attention_layernorm.weight", new long[] {HIDDEN});
        }
        shapes.put("model.norm.weight", new long[] {HIDDEN});

        SplittableRandom rnd = new SplittableRandom(seed);
        // norms at 1; matrices uniform with std ~0.1 so logits differ between tokens
        writeBf16(dir.resolve("model.safetensors"), shapes,
                name -> name.endsWith("norm.weight") ? 1f : (float) ((rnd.nextDouble() - 0.5) * 0.35));
        return dir;
    }

    /**
     * A PEFT LoRA adapter for this model (and the {@code tiny} preset, of the same shape): rank 8,
     * lora_alpha 16, lora_A / lora_B of q_proj and v_proj of both layers, random BF16 factors.
     */
    static Path adapter(Path dir, long seed) throws IOException {
        Files.createDirectories(dir);
        Files.writeString(dir.resolve("adapter_config.json"), "{\"peft_type\": \"LORA\", \"r\": 8, \"lora_alpha\": 16,"
                + " \"bias\": \"none\", \"target_modules\": [\"q_proj\", \"v_proj\"]}", StandardCharsets.UTF_8);
        Map<String, long[]> shapes = new LinkedHashMap<>();
        for (int l = 0; l < LAYERS; l++) {
            for (String m : new String[] {"q_proj", "v_proj"}) {
                String p = "base_model.model.model.layers." + l + ".self_attn." + m;
                shapes.put(p + ".lora_A.weight", new long[] {8, HIDDEN});
                shapes.put(p + ".lora_B.weight", new long[] {(m.equals("q_proj") ? HEADS : KV_HEADS) * HEAD_DIM, 8});
            }
        }
        SplittableRandom rnd = new SplittableRandom(seed);
        writeBf16(dir.resolve("adapter_model.safetensors"), shapes, name -> (float) ((rnd.nextDouble() - 0.5) * 0.5));
        return dir;
    }

    /** One BF16 safetensors file of the tensors {@code shapes} names, each value drawn from {@code value}. */
    private static void writeBf16(Path file, Map<String, long[]> shapes,
                                  java.util.function.ToDoubleFunction<String> value) throws IOException {
        ObjectNode header = JSON.createObjectNode();
        header.putObject("__metadata__").put("format", "pt");
        long off = 0;
        for (Map.Entry<String, long[]> e : shapes.entrySet()) {
            long n = count(e.getValue());
            ObjectNode t = header.putObject(e.getKey());
            t.put("dtype", "BF16");
            var shape = t.putArray("shape");
            for (long s : e.getValue()) {
                shape.add(s);
            }
            t.putArray("data_offsets").add(off).add(off + 2 * n);
            off += 2 * n;
        }
        byte[] hb = JSON.writeValueAsString(header).getBytes(StandardCharsets.UTF_8);
        try (OutputStream out = new java.io.BufferedOutputStream(Files.newOutputStream(file),
                1 << 20)) {
            out.write(ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(hb.length).array());
            out.write(hb);
            for (Map.Entry<String, long[]> e : shapes.entrySet()) {
                long n = count(e.getValue());
                ByteBuffer b = ByteBuffer.allocate((int) (2 * n)).order(ByteOrder.LITTLE_ENDIAN);
                for (long i = 0; i < n; i++) {
                    float v = (float) value.applyAsDouble(e.getKey());
                    b.putShort((short) (Float.floatToIntBits(v) >>> 16));
                }
                out.write(b.array());
            }
        }
    }

    private static long count(long[] shape) {
        long n = 1;
        for (long s : shape) {
            n *= s;
        }
        return n;
    }
}
