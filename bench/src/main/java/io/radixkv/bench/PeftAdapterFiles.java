package io.radixkv.bench;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.radixkv.model.ModelConfig;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * Writes a random PEFT LoRA adapter directory for a model shape ({@code adapter_config.json} and
 * {@code adapter_model.safetensors} with f32 {@code lora_A} / {@code lora_B} for the seven
 * projections of every layer), as PEFT saves one: the input of the LoRA serving benchmark.
 */
final class PeftAdapterFiles {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final List<String> MODULES = List.of("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj",
            "self_attn.o_proj", "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj");

    private PeftAdapterFiles() {}

    /** Writes the adapter of {@code rank} (alpha = 2 · rank) under {@code dir}; returns {@code dir}. */
    static Path write(Path dir, ModelConfig c, int rank, long seed) throws IOException {
        Files.createDirectories(dir);
        Files.writeString(dir.resolve("adapter_config.json"), """
                {"peft_type": "LORA", "task_type": "CAUSAL_LM", "r": %d, "lora_alpha": %d, "bias": "none",
                 "use_rslora": false, "use_dora": false, "modules_to_save": null,
                 "target_modules": ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]}
                """.formatted(rank, 2 * rank), StandardCharsets.UTF_8);
        Map<String, long[]> shapes = new LinkedHashMap<>();
        for (int l = 0; l < c.layers(); l++) {
            for (String m : MODULES) {
                String key = "base_model.model.model.layers." + l + "." + m;
                shapes.put(key + ".lora_A.weight", new long[] {rank, in(c, m)});
                shapes.put(key + ".lora_B.weight", new long[] {out(c, m), rank});
            }
        }
        ObjectNode header = JSON.createObjectNode();
        long offset = 0;
        for (Map.Entry<String, long[]> e : shapes.entrySet()) {
            long bytes = 4 * e.getValue()[0] * e.getValue()[1];
            ObjectNode t = header.putObject(e.getKey());
            t.put("dtype", "F32");
            t.putArray("shape").add(e.getValue()[0]).add(e.getValue()[1]);
            t.putArray("data_offsets").add(offset).add(offset + bytes);
            offset += bytes;
        }
        byte[] json = JSON.writeValueAsBytes(header);
        SplittableRandom rnd = new SplittableRandom(seed);
        try (FileChannel ch = FileChannel.open(dir.resolve("adapter_model.safetensors"), StandardOpenOption.CREATE,
                StandardOpenOption.TRUNCATE_EXISTING, StandardOpenOption.WRITE)) {
            ch.write(ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(0, json.length));
            ch.write(ByteBuffer.wrap(json));
            for (Map.Entry<String, long[]> e : shapes.entrySet()) {
                long[] s = e.getValue();
                // A ~ ±1/sqrt(in), B ~ ±0.3/sqrt(rank): a delta of the order of the base projection
                double bound = e.getKey().endsWith("lora_A.weight") ? 1 / Math.sqrt(s[1]) : 0.3 / Math.sqrt(rank);
                ByteBuffer b = ByteBuffer.allocate((int) (4 * s[0] * s[1])).order(ByteOrder.LITTLE_ENDIAN);
                while (b.hasRemaining()) {
                    b.putFloat((float) ((2 * rnd.nextDouble() - 1) * bound));
                }
                ch.write(b.flip());
            }
        }
        return dir;
    }

    private static int in(ModelConfig c, String module) {
        return switch (module) {
            case "self_attn.o_proj" -> c.qDim();
            case "mlp.down_proj" -> c.intermediate();
            default -> c.hidden();
        };
    }

    private static int out(ModelConfig c, String module) {
        return switch (module) {
            case "self_attn.q_proj" -> c.qDim();
            case "self_attn.k_proj", "self_attn.v_proj" -> c.kvDim();
            case "mlp.gate_proj", "mlp.up_proj" -> c.intermediate();
            default -> c.hidden();
        };
    }
}
