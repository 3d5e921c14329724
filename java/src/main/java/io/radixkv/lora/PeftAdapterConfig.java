package io.radixkv.lora;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Pattern;
import java.util.regex.PatternSyntaxException;

/**
 * A PEFT LoRA {@code adapter_config.json}, with PEFT's rules for which modules it adapts and
 * with what rank and scale:
 * <ul>
 *   <li>{@code target_modules} as a list matches a module whose full name equals an entry or ends
 *       with {@code "." + entry}; as a string it is a regex the full name must match entirely
 *       ({@code re.fullmatch}), and {@code "all-linear"} is every projection (PEFT's
 *       {@code check_target_module_exists}); {@code exclude_modules} removes modules the same way;
 *   <li>{@code layers_to_transform} (an int or a list) keeps only those layers (list targets only);
 *   <li>{@code rank_pattern} / {@code alpha_pattern}: the first key {@code p} with
 *       {@code (.*\.)?(p)} matching the full name overrides {@code r} / {@code lora_alpha};
 *   <li>the scale is {@code alpha / r}, or {@code alpha / sqrt(r)} with {@code use_rslora}.
 * </ul>
 * Anything radixkv cannot serve is refused with one line naming the field: DoRA, modules to save,
 * biases, embedding or LM-head targets, other PEFT types, layer replication.
 *
 * @param r default rank
 * @param alpha default {@code lora_alpha}
 * @param useRslora rank-stabilized scaling
 * @param targetList {@code target_modules} as a list (null when a regex)
 * @param targetRegex {@code target_modules} as a regex (null when a list)
 * @param excludeList {@code exclude_modules} as a list (may be empty)
 * @param excludeRegex {@code exclude_modules} as a regex, or null
 * @param rankPattern per-module rank overrides, in file order
 * @param alphaPattern per-module alpha overrides, in file order
 * @param layersToTransform the layers adapted, or null for all
 */
public record PeftAdapterConfig(int r, double alpha, boolean useRslora, List<String> targetList, Pattern targetRegex,
                                List<String> excludeList, Pattern excludeRegex, Map<String, Integer> rankPattern,
                                Map<String, Double> alphaPattern, Set<Integer> layersToTransform) {
    public static final String FILE = "adapter_config.json";
    private static final ObjectMapper JSON = new ObjectMapper();
    // a list: the first match names the refusal, the same one on every run (Set.of iterates in a per-JVM order)
    private static final List<String> NOT_PROJECTIONS = List.of("embed_tokens", "model.embed_tokens", "lm_head");

    /**
     * Reads {@code dir/adapter_config.json}.
     *
     * @throws IllegalArgumentException naming the field radixkv cannot serve or that is malformed
     * @throws IOException when the file cannot be read
     */
    public static PeftAdapterConfig read(Path dir) throws IOException {
        Path file = dir.resolve(FILE);
        if (!Files.isRegularFile(file)) {
            throw new IllegalArgumentException("no " + FILE + " in " + dir);
        }
        JsonNode c;
        try {
            c = JSON.readTree(file.toFile());
        } catch (IOException e) {
            throw new IllegalArgumentException(file + ": not JSON: " + e.getMessage().lines().findFirst().orElse(""));
        }
        if (c == null || !c.isObject()) {
            throw new IllegalArgumentException(file + ": not a JSON object");
        }
        return parse(c, file.toString());
    }

    /** The config in {@code c} ({@code where} names it in messages). */
    public static PeftAdapterConfig parse(JsonNode c, String where) {
        String type = text(c, "peft_type", "LORA");
        if (!type.equals("LORA")) {
            throw refuse(where, "peft_type", type + " is not a LoRA adapter");
        }
        if (c.path("use_dora").asBoolean(false)) {
            throw refuse(where, "use_dora", "DoRA adapters are not supported");
        }
        JsonNode save = c.path("modules_to_save");
        if (!save.isMissingNode() && !save.isNull() && !(save.isArray() && save.isEmpty())) {
            throw refuse(where, "modules_to_save", "fully trained modules (" + save + ") are not supported");
        }
        String bias = text(c, "bias", "none");
        if (!bias.equals("none")) {
            throw refuse(where, "bias", "\"" + bias + "\": only adapters without bias terms (\"none\") are supported");
        }
        if (c.path("lora_bias").asBoolean(false)) {
            throw refuse(where, "lora_bias", "LoRA bias terms are not supported");
        }
        for (String f : List.of("layer_replication", "target_parameters", "trainable_token_indices")) {
            JsonNode v = c.path(f);
            if (!v.isMissingNode() && !v.isNull() && !(v.isArray() && v.isEmpty())) {
                throw refuse(where, f, "is not supported");
            }
        }
        int r = c.path("r").asInt(8);
        if (!c.path("r").isMissingNode() && !c.path("r").canConvertToInt() || r <= 0) {
            throw refuse(where, "r", "must be a positive integer, got " + c.path("r"));
        }
        JsonNode a = c.path("lora_alpha");
        if (!a.isMissingNode() && !a.isNumber()) {
            throw refuse(where, "lora_alpha", "must be a number, got " + a);
        }
        double alpha = a.isMissingNode() ? 8 : a.asDouble();
        boolean rslora = c.path("use_rslora").asBoolean(false);

        JsonNode t = c.path("target_modules");
        List<String> targetList = null;
        Pattern targetRegex = null;
        if (t.isTextual() && t.asText().equals("all-linear")) {
            targetList = List.of(LoraModule.values()).stream().map(LoraModule::shortName).toList();
        } else if (t.isTextual()) {
            targetRegex = regex(where, "target_modules", t.asText());
        } else if (t.isArray() && !t.isEmpty()) {
            targetList = strings(where, "target_modules", t);
        } else {
            throw refuse(where, "target_modules", "must name the adapted modules (a list or a regex), got " + t);
        }
        JsonNode ex = c.path("exclude_modules");
        List<String> excludeList = List.of();
        Pattern excludeRegex = null;
        if (ex.isTextual()) {
            excludeRegex = regex(where, "exclude_modules", ex.asText());
        } else if (ex.isArray()) {
            excludeList = strings(where, "exclude_modules", ex);
        }
        Set<Integer> layers = null;
        JsonNode lt = c.path("layers_to_transform");
        if (lt.isInt()) {
            layers = Set.of(lt.asInt());
        } else if (lt.isArray()) {
            layers = new TreeSet<>();
            for (JsonNode e : lt) {
                if (!e.isInt()) {
                    throw refuse(where, "layers_to_transform", "must hold layer indices, got " + lt);
                }
                layers.add(e.asInt());
            }
        } else if (!lt.isMissingNode() && !lt.isNull()) {
            throw refuse(where, "layers_to_transform", "must be an int or a list of ints, got " + lt);
        }
        if (layers != null && targetRegex != null) {
            throw refuse(where, "layers_to_transform", "cannot be used when target_modules is a regex (as in PEFT)");
        }
        Map<String, Integer> rankPattern = new LinkedHashMap<>();
        c.path("rank_pattern").properties().forEach(e -> {
            if (!e.getValue().canConvertToInt() || e.getValue().asInt() <= 0) {
                throw refuse(where, "rank_pattern", "\"" + e.getKey() + "\" must map to a positive rank, got " + e.getValue());
            }
            rankPattern.put(e.getKey(), e.getValue().asInt());
        });
        Map<String, Double> alphaPattern = new LinkedHashMap<>();
        c.path("alpha_pattern").properties().forEach(e -> {
            if (!e.getValue().isNumber()) {
                throw refuse(where, "alpha_pattern", "\"" + e.getKey() + "\" must map to a number, got " + e.getValue());
            }
            alphaPattern.put(e.getKey(), e.getValue().asDouble());
        });
        PeftAdapterConfig cfg = new PeftAdapterConfig(r, alpha, rslora, targetList, targetRegex, excludeList,
                excludeRegex, rankPattern, alphaPattern, layers);
        for (String other : NOT_PROJECTIONS) {
            if (cfg.matches(other)) {
                throw refuse(where, "target_modules", "targets " + other
                        + ": only the attention and MLP projections can be adapted");
            }
        }
        return cfg;
    }

    /** True when PEFT would adapt the module of full name {@code key} in layer {@code layer}. */
    public boolean targets(String key, int layer) {
        if (!matches(key) || excluded(key)) {
            return false;
        }
        return layersToTransform == null || layersToTransform.contains(layer);
    }

    private boolean matches(String key) {
        if (targetRegex != null) {
            return targetRegex.matcher(key).matches();
        }
        return targetList.stream().anyMatch(t -> key.equals(t) || key.endsWith("." + t));
    }

    private boolean excluded(String key) {
        if (excludeRegex != null) {
            return excludeRegex.matcher(key).matches();
        }
        return excludeList.stream().anyMatch(t -> key.equals(t) || key.endsWith("." + t));
    }

    /** The rank of module {@code key}: the first matching {@code rank_pattern} entry, else {@code r}. */
    public int rankOf(String key) {
        Integer v = pattern(rankPattern, key);
        return v == null ? r : v;
    }

    /** The alpha of module {@code key}: the first matching {@code alpha_pattern} entry, else {@code lora_alpha}. */
    public double alphaOf(String key) {
        Double v = pattern(alphaPattern, key);
        return v == null ? alpha : v;
    }

    /** {@code alpha / rank}, or {@code alpha / sqrt(rank)} with rsLoRA, for module {@code key}. */
    public double scaleOf(String key) {
        int rank = rankOf(key);
        return alphaOf(key) / (useRslora ? Math.sqrt(rank) : rank);
    }

    private static <V> V pattern(Map<String, V> patterns, String key) {
        for (Map.Entry<String, V> e : patterns.entrySet()) {
            try {
                if (Pattern.compile("(.*\\.)?(" + e.getKey() + ")").matcher(key).matches()) {
                    return e.getValue();
                }
            } catch (PatternSyntaxException ex) {
                throw new IllegalArgumentException("pattern \"" + e.getKey() + "\" is not a valid regex: "
                        + ex.getDescription());
            }
        }
        return null;
    }

    private static String text(JsonNode c, String field, String dflt) {
        JsonNode v = c.path(field);
        return v.isMissingNode() || v.isNull() ? dflt : v.asText();
    }

    private static List<String> strings(String where, String field, JsonNode arr) {
        List<String> out = new ArrayList<>();
        for (JsonNode e : arr) {
            if (!e.isTextual()) {
                throw refuse(where, field, "must hold module names, got " + arr);
            }
            out.add(e.asText());
        }
        return List.copyOf(out);
    }

    private static Pattern regex(String where, String field, String re) {
        try {
            return Pattern.compile(re);
        } catch (PatternSyntaxException e) {
            throw refuse(where, field, "\"" + re + "\" is not a valid regex: " + e.getDescription());
        }
    }

    private static IllegalArgumentException refuse(String where, String field, String why) {
        return new IllegalArgumentException(where + ": " + field + " " + why);
    }
}
