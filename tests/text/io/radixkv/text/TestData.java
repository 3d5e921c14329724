package io.radixkv.text;

import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The real tokenizer directories fetched by scripts/fetch-test-data into build/test-data
 * (system property radixkv.text.testdata), loaded once per test JVM.
 */
final class TestData {
    static final List<String> TOKENIZERS = List.of("llama3_1", "qwen3", "gemma3");
    static final ObjectMapper JSON = new ObjectMapper();
    private static final Map<String, HfTokenizer> LOADED = new ConcurrentHashMap<>();

    private TestData() {}

    static Path dir(String name) {
        String root = System.getProperty("radixkv.text.testdata", "build/test-data");
        Path dir = Path.of(root, name);
        assertTrue(Files.isRegularFile(dir.resolve("tokenizer.json")),
                "missing " + dir + "/tokenizer.json: run scripts/fetch-test-data (the Maven build does)");
        return dir;
    }

    /** Shared, never closed: the test JVM ends with them. */
    static HfTokenizer tokenizer(String name) {
        return LOADED.computeIfAbsent(name, n -> {
            try {
                return HfTokenizer.load(dir(n));
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        });
    }

    /**
     * A tiny real tokenizer (WordLevel over "hello world", added tokens {@code <s>}=3,
     * {@code </s>}=4, {@code <eot>}=5) for the tests of logic around the native tokenizer:
     * it loads in milliseconds where the real ones take seconds.
     */
    static Path tinyTokenizer(Path dir, String postProcessor, String config) throws IOException {
        Files.createDirectories(dir);
        Files.writeString(dir.resolve("tokenizer.json"), """
                {"version": "1.0", "truncation": null, "padding": null,
                 "added_tokens": [
                  {"id": 3, "content": "<s>", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true},
                  {"id": 4, "content": "</s>", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true},
                  {"id": 5, "content": "<eot>", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true}],
                 "normalizer": null, "pre_tokenizer": {"type": "Whitespace"},
                 "post_processor": %s, "decoder": null,
                 "model": {"type": "WordLevel", "vocab": {"[UNK]": 0, "hello": 1, "world": 2}, "unk_token": "[UNK]"}}
                """.formatted(postProcessor));
        Files.writeString(dir.resolve("tokenizer_config.json"), config);
        return dir;
    }

    /** tokenizer.json post-processor that adds {@code <s>} in front, as Llama 3's does. */
    static final String ADD_BOS_PROCESSOR = """
            {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
             "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
             "special_tokens": {"<s>": {"id": "<s>", "ids": [3], "tokens": ["<s>"]}}}""";

    static JsonNode resource(String name) {
        try (InputStream in = TestData.class.getResourceAsStream(name)) {
            if (in == null) {
                throw new IllegalStateException("missing test resource " + name);
            }
            return JSON.readTree(in);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static List<String> texts() {
        return JSON.convertValue(resource("texts.json"), JSON.getTypeFactory().constructCollectionType(List.class, String.class));
    }

    static int[] ints(JsonNode array) {
        int[] out = new int[array.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = array.get(i).asInt();
        }
        return out;
    }
}
