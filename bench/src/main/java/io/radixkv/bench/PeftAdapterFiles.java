package io.radixkv.bench;

import io.radixkv.model.ModelConfig;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
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
        SplittableRandom rnd = new SplittableRandom(seed);
        // A ~ ±1/sqrt(in), B ~ ±0.3/sqrt(rank): a delta of the order of the base projection
        SafetensorsFiles.write(dir.resolve("adapter_model.safetensors"), shapes, false, name -> {
            double bound = name.endsWith("lora_A.weight") ? 1 / Math.sqrt(shapes.get(name)[1]) : 0.3 / Math.sqrt(rank);
            return (float) ((2 * rnd.nextDouble() - 1) * bound);
        });
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
