package io.radixkv.text;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.BitSet;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * What radixkv reads from a model directory's JSON files besides what the native tokenizer
 * does: the vocabulary's id space and added tokens (tokenizer.json), the special tokens and
 * BOS/EOS settings (tokenizer_config.json) and the EOS ids of generation_config.json /
 * config.json.
 */
record TokenizerFiles(
        int vocabSize,
        int maxId,
        Map<String, Integer> addedTokens,
        JsonNode config,
        Optional<JsonNode> generationConfig,
        Optional<JsonNode> modelConfig) {

    static final ObjectMapper JSON = new ObjectMapper();

    static TokenizerFiles read(Path dir) throws IOException {
        Path tokenizerJson = dir.resolve("tokenizer.json");
        if (!Files.isRegularFile(tokenizerJson)) {
            throw new IOException("no tokenizer.json in " + dir);
        }
        BitSet ids = new BitSet();
        Map<String, Integer> added = new HashMap<>();
        // Streamed: the files run to tens of MB (Gemma 3: 33 MB), mostly merges we never need.
        try (JsonParser p = JSON.createParser(tokenizerJson.toFile())) {
            expect(p.nextToken(), JsonToken.START_OBJECT, tokenizerJson);
            while (p.nextToken() == JsonToken.FIELD_NAME) {
                String field = p.currentName();
                JsonToken value = p.nextToken();
                if (field.equals("added_tokens") && value == JsonToken.START_ARRAY) {
                    while (p.nextToken() == JsonToken.START_OBJECT) {
                        JsonNode t = p.readValueAsTree();
                        int id = t.path("id").asInt(-1);
                        String content = t.path("content").asText(null);
                        if (id < 0 || content == null) {
                            throw new IOException(tokenizerJson + ": added token without id or content: " + t);
                        }
                        ids.set(id);
                        added.put(content, id);
                    }
                } else if (field.equals("model") && value == JsonToken.START_OBJECT) {
                    readModel(p, ids, tokenizerJson);
                } else {
                    p.skipChildren();
                }
            }
        }
        if (ids.isEmpty()) {
            throw new IOException(tokenizerJson + ": empty vocabulary");
        }
        JsonNode config = readOptional(dir.resolve("tokenizer_config.json"))
                .orElseGet(JSON::createObjectNode);
        return new TokenizerFiles(ids.cardinality(), ids.length() - 1, Map.copyOf(added), config,
                readOptional(dir.resolve("generation_config.json")),
                readOptional(dir.resolve("config.json")));
    }

    /** model.vocab is {token: id} (BPE, WordPiece, WordLevel) or [[piece, score], ...] (Unigram). */
    private static void readModel(JsonParser p, BitSet ids, Path file) throws IOException {
        while (p.nextToken() == JsonToken.FIELD_NAME) {
            String field = p.currentName();
            JsonToken value = p.nextToken();
            if (field.equals("vocab") && value == JsonToken.START_OBJECT) {
                while (p.nextToken() == JsonToken.FIELD_NAME) {
                    p.nextToken();
                    ids.set(p.getIntValue());
                }
            } else if (field.equals("vocab") && value == JsonToken.START_ARRAY) {
                int n = 0;
                while (p.nextToken() != JsonToken.END_ARRAY) {
                    p.skipChildren();
                    ids.set(n++);
                }
            } else {
                p.skipChildren();
            }
        }
        expect(p.currentToken(), JsonToken.END_OBJECT, file);
    }

    private static void expect(JsonToken got, JsonToken want, Path file) throws IOException {
        if (got != want) {
            throw new IOException(file + ": expected " + want + " but found " + got);
        }
    }

    private static Optional<JsonNode> readOptional(Path file) throws IOException {
        if (!Files.isRegularFile(file)) {
            return Optional.empty();
        }
        return Optional.of(JSON.readTree(file.toFile()));
    }

    /** A special token of tokenizer_config.json: a string, or an AddedToken {"content": ...}. */
    Optional<String> specialToken(String key) {
        JsonNode n = config.get(key);
        if (n == null || n.isNull()) {
            return Optional.empty();
        }
        if (n.isTextual()) {
            return Optional.of(n.asText());
        }
        if (n.isObject() && n.path("content").isTextual()) {
            return Optional.of(n.path("content").asText());
        }
        return Optional.empty();
    }

    /** An explicit boolean of tokenizer_config.json (add_bos_token, add_eos_token). */
    Optional<Boolean> flag(String key) {
        JsonNode n = config.get(key);
        return n != null && n.isBoolean() ? Optional.of(n.asBoolean()) : Optional.empty();
    }

    /** eos_token_id of a config file: an int or a list of ints. */
    static Set<Integer> eosIds(JsonNode cfg) {
        Set<Integer> out = new LinkedHashSet<>();
        JsonNode n = cfg.get("eos_token_id");
        if (n == null || n.isNull()) {
            return out;
        }
        if (n.isIntegralNumber()) {
            out.add(n.asInt());
        } else if (n.isArray()) {
            for (JsonNode e : n) {
                if (e.isIntegralNumber()) {
                    out.add(e.asInt());
                }
            }
        }
        return out;
    }
}
