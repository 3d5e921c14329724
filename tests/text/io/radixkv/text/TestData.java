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
