package io.radixkv.lora;

import io.radixkv.model.SafetensorsTestWriter;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.function.ToIntFunction;

/**
 * Writes PEFT LoRA adapter directories as PEFT saves them ({@code adapter_config.json} +
 * {@code adapter_model.safetensors}, tensors named
 * {@code base_model.model.model.layers.N.<module>.lora_A.weight}) with random factors, and merges
 * an adapter into base weights in double precision ({@code W + scale · B · A}), the reference the
 * served adapter is checked against.
 */
public final class PeftAdapterWriter {
    /** A model's projection sizes. */
    public record Dims(int layers, int hidden, int qDim, int kvDim, int inter) {
        int in(String module) {
            return switch (module) {
                case "o_proj" -> qDim;
                case "down_proj" -> inter;
                default -> hidden;
            };
        }

        int out(String module) {
            return switch (module) {
                case "q_proj" -> qDim;
                case "k_proj", "v_proj" -> kvDim;
                case "gate_proj", "up_proj" -> inter;
                default -> hidden;
            };
        }
    }

    public static final List<String> ALL = List.of("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj",
            "down_proj");

    private PeftAdapterWriter() {}

    /** The PEFT path of a module inside a layer. */
    public static String path(String module) {
        return (module.endsWith("_proj") && List.of("gate_proj", "up_proj", "down_proj").contains(module) ? "mlp."
                : "self_attn.") + module;
    }

    /** The full module name PEFT matches, e.g. {@code model.layers.0.self_attn.q_proj}. */
    public static String key(int layer, String module) {
        return "model.layers." + layer + "." + path(module);
    }

    /**
     * Random lora_A / lora_B factors for {@code modules} of every layer, rank from {@code rank};
     * A ~ ±1/sqrt(in), B ~ ±0.3/sqrt(rank): a delta of the order of the base projection.
     */
    public static Map<String, SafetensorsTestWriter.T> factors(Dims d, List<String> modules,
                                                               ToIntFunction<String> rank, long seed) {
        SplittableRandom r = new SplittableRandom(seed);
        Map<String, SafetensorsTestWriter.T> out = new LinkedHashMap<>();
        for (int l = 0; l < d.layers(); l++) {
            for (String m : modules) {
                String key = key(l, m);
                int rk = rank.applyAsInt(key);
                int in = d.in(m);
                int o = d.out(m);
                String a = "base_model.model." + key + ".lora_A.weight";
                String b = "base_model.model." + key + ".lora_B.weight";
                out.put(a, new SafetensorsTestWriter.T(a, "F32", new long[] {rk, in}, random(r, rk * in, 1 / Math.sqrt(in))));
                out.put(b, new SafetensorsTestWriter.T(b, "F32", new long[] {o, rk}, random(r, o * rk, 0.3 / Math.sqrt(rk))));
            }
        }
        return out;
    }

    private static float[] random(SplittableRandom r, int n, double bound) {
        float[] v = new float[n];
        for (int i = 0; i < n; i++) {
            // bf16-representable, so f32, bf16 and f16 files hold nearly the same numbers
            v[i] = io.radixkv.kernels.Bf16.round((float) ((2 * r.nextDouble() - 1) * bound));
        }
        return v;
    }

    /** Writes {@code dir/adapter_config.json} ({@code configJson}) and the tensors as {@code fileDtype}. */
    public static Path write(Path dir, String configJson, Map<String, SafetensorsTestWriter.T> tensors,
                             String fileDtype) throws IOException {
        Files.createDirectories(dir);
        Files.writeString(dir.resolve("adapter_config.json"), configJson, StandardCharsets.UTF_8);
        List<SafetensorsTestWriter.T> all = new ArrayList<>();
        for (SafetensorsTestWriter.T t : tensors.values()) {
            all.add(new SafetensorsTestWriter.T(t.name(), fileDtype, t.shape(), t.values()));
        }
        SafetensorsTestWriter.write(dir.resolve("adapter_model.safetensors"), all);
        return dir;
    }

    /** A PEFT config of rank {@code r}, {@code lora_alpha} {@code alpha}, the given target_modules JSON and extra fields. */
    public static String config(int r, double alpha, String targetModulesJson, String extraFields) {
        return "{\"peft_type\": \"LORA\", \"task_type\": \"CAUSAL_LM\", \"base_model_name_or_path\": \"base\","
                + " \"r\": " + r + ", \"lora_alpha\": " + alpha + ", \"lora_dropout\": 0.05, \"bias\": \"none\","
                + " \"fan_in_fan_out\": false, \"use_rslora\": false, \"use_dora\": false, \"modules_to_save\": null,"
                + " \"target_modules\": " + targetModulesJson
                + (extraFields.isEmpty() ? "" : ", " + extraFields) + "}";
    }

    /**
     * The base weights (HF names {@code model.layers.N.<path>.weight}, row-major [out, in]) with
     * every adapter module merged in: {@code W + scale(key) · B · A}, summed in double, rounded to
     * f32 once. Returns a new map; the input is unchanged.
     */
    public static Map<String, float[]> merge(Map<String, float[]> base, Map<String, SafetensorsTestWriter.T> adapter,
                                             java.util.function.ToDoubleFunction<String> scale) {
        Map<String, float[]> out = new LinkedHashMap<>(base);
        for (SafetensorsTestWriter.T a : adapter.values()) {
            if (!a.name().endsWith(".lora_A.weight")) {
                continue;
            }
            String key = a.name().substring("base_model.model.".length(), a.name().length() - ".lora_A.weight".length());
            SafetensorsTestWriter.T b = adapter.get("base_model.model." + key + ".lora_B.weight");
            float[] w = base.get(key + ".weight");
            int rank = (int) a.shape()[0];
            int in = (int) a.shape()[1];
            int o = (int) b.shape()[0];
            if (w == null || w.length != o * in) {
                throw new IllegalArgumentException("no base weight " + key + ".weight of " + o + " x " + in);
            }
            double s = scale.applyAsDouble(key);
            float[] merged = new float[w.length];
            for (int i = 0; i < o; i++) {
                for (int j = 0; j < in; j++) {
                    double d = 0;
                    for (int k = 0; k < rank; k++) {
                        d += (double) b.values()[i * rank + k] * a.values()[k * in + j];
                    }
                    merged[i * in + j] = (float) (w[i * in + j] + s * d);
                }
            }
            out.put(key + ".weight", merged);
        }
        return out;
    }
}
