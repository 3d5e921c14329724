package io.radixkv.text;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;

/** Finds a model directory's chat template, as transformers does. */
final class ChatTemplates {
    private static final String[] SPECIAL_KEYS = {"bos_token", "eos_token", "unk_token", "sep_token", "pad_token",
        "cls_token", "mask_token"};

    private ChatTemplates() {}

    /**
     * chat_template.jinja in the directory (transformers' current format, which wins), else
     * tokenizer_config.json's chat_template (a string, or the "default" of a list of
     * {name, template}), else chat_template.json's chat_template.
     */
    static Optional<ChatTemplate> load(Path dir, JsonNode config, Map<String, Object> special) throws IOException {
        Path jinja = dir.resolve("chat_template.jinja");
        if (Files.isRegularFile(jinja)) {
            return Optional.of(new ChatTemplate(Files.readString(jinja), special));
        }
        Optional<ChatTemplate> fromConfig = named(config.get("chat_template"), "default", special);
        if (fromConfig.isPresent()) {
            return fromConfig;
        }
        Path json = dir.resolve("chat_template.json");
        if (Files.isRegularFile(json)) {
            return named(TokenizerFiles.JSON.readTree(json.toFile()).get("chat_template"), "default", special);
        }
        return Optional.empty();
    }

    static Optional<ChatTemplate> named(JsonNode node, String name, Map<String, Object> special) {
        if (node == null || node.isNull()) {
            return Optional.empty();
        }
        if (node.isTextual()) {
            return "default".equals(name) ? Optional.of(new ChatTemplate(node.asText(), special)) : Optional.empty();
        }
        if (node.isArray()) {
            for (JsonNode entry : node) {
                if (name.equals(entry.path("name").asText(null)) && entry.path("template").isTextual()) {
                    return Optional.of(new ChatTemplate(entry.path("template").asText(), special));
                }
            }
        }
        return Optional.empty();
    }

    /**
     * transformers' special_tokens_map as template variables: the special tokens that are set
     * (an AddedToken object as its content), and additional_special_tokens.
     */
    static Map<String, Object> specialTokens(TokenizerFiles files) {
        Map<String, Object> out = new LinkedHashMap<>();
        for (String key : SPECIAL_KEYS) {
            files.specialToken(key).filter(s -> !s.isEmpty()).ifPresent(s -> out.put(key, s));
        }
        JsonNode extra = files.config().get("additional_special_tokens");
        if (extra != null && extra.isArray() && !extra.isEmpty()) {
            java.util.List<String> list = new java.util.ArrayList<>();
            extra.forEach(t -> list.add(t.isTextual() ? t.asText() : t.path("content").asText()));
            out.put("additional_special_tokens", list);
        }
        return out;
    }
}
