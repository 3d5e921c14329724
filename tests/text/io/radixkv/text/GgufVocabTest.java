package io.radixkv.text;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * GGUF tokenizer metadata (in the GGUF reader's value kinds) rebuilt into a tokenizer: a small
 * SentencePiece vocabulary whose merges follow its scores, and the vocabularies radixkv refuses,
 * each with the file and the reason.
 */
class GgufVocabTest {
    private static final Path FILE = Path.of("model.gguf");

    /** A SentencePiece vocabulary: unk, bos, eos, the newline byte, then pieces scored as given. */
    private static Map<String, Object> spm(float abScore, float bcScore) {
        Map<String, Object> m = new HashMap<>();
        m.put("tokenizer.ggml.model", "llama");
        m.put("tokenizer.ggml.tokens", List.of("<unk>", "<s>", "</s>", "<0x0A>", "▁", "a", "b", "c", "ab", "bc", "<ctl>"));
        m.put("tokenizer.ggml.token_type", List.of(2L, 3L, 3L, 6L, 1L, 1L, 1L, 1L, 1L, 1L, 3L));
        m.put("tokenizer.ggml.scores", List.of(0f, 0f, 0f, 0f, -1f, -2f, -3f, -4f, abScore, bcScore, 0f));
        m.put("tokenizer.ggml.add_space_prefix", false);
        m.put("tokenizer.chat_template", "{{ bos_token }}{% for m in messages %}{{ m['content'] }}{% endfor %}");
        return m;
    }

    @Test
    void sentencePieceMergesFollowTheScores() throws IOException {
        try (HfTokenizer bcFirst = HfTokenizer.fromGguf(spm(-20f, -10f), FILE);
                HfTokenizer abFirst = HfTokenizer.fromGguf(spm(-10f, -20f), FILE)) {
            assertArrayEquals(new int[] {1, 5, 9}, bcFirst.encode("abc", true), "BOS (llama.cpp's default), a, bc");
            assertArrayEquals(new int[] {8, 7}, abFirst.encode("abc", false));
            assertArrayEquals(new int[] {5, 4, 6, 3}, abFirst.encode("a b\n", false), "space as U+2581, newline as a byte");
            assertEquals("a b\n", abFirst.decode(abFirst.encode("a b\n", false), false));
            assertArrayEquals(new int[] {10, 5}, abFirst.encode("<ctl>a", false), "control tokens match in the text");
            assertEquals("a", abFirst.decode(new int[] {1, 5, 2}, true));
            assertEquals(Set.of(2), abFirst.stopTokenIds());
            assertEquals("<s>", abFirst.bosToken());
            assertEquals("<s>ab", abFirst.chatTemplate().orElseThrow().render(List.of(new ChatMessage("user", "ab")), false));
            assertEquals(FILE, abFirst.directory());
        }
    }

    @Test
    void aSpacePrefixIsAddedAndStripped() throws IOException {
        Map<String, Object> m = spm(-10f, -20f);
        m.put("tokenizer.ggml.add_space_prefix", true);
        m.put("tokenizer.ggml.add_bos_token", false);
        try (HfTokenizer tok = HfTokenizer.fromGguf(m, FILE)) {
            assertArrayEquals(new int[] {4, 8}, tok.encode("ab", true));
            assertEquals("ab", tok.decode(tok.encode("ab", true), false));
        }
    }

    private static String refusal(Map<String, Object> m) {
        return assertThrows(UnsupportedTokenizerException.class, () -> HfTokenizer.fromGguf(m, FILE)).getMessage();
    }

    private static Map<String, Object> gpt2(String pre) {
        Map<String, Object> m = new HashMap<>();
        m.put("tokenizer.ggml.model", "gpt2");
        m.put("tokenizer.ggml.pre", pre);
        m.put("tokenizer.ggml.tokens", List.of("a", "b", "ab"));
        m.put("tokenizer.ggml.merges", List.of("a b"));
        return m;
    }

    @Test
    void otherVocabulariesAreRefusedWithTheReason() {
        Map<String, Object> bert = gpt2("default");
        bert.put("tokenizer.ggml.model", "bert");
        assertEquals("model.gguf: tokenizer.ggml.model is 'bert': only 'gpt2' (byte-level BPE) and 'llama' "
                + "(SentencePiece) vocabularies are rebuilt", refusal(bert));
        assertEquals("model.gguf: tokenizer.ggml.pre is 'deepseek-llm': only the 'llama-bpe' (Llama 3) and 'qwen2' "
                + "(Qwen2, Qwen3) pre-tokenizers are rebuilt", refusal(gpt2("deepseek-llm")));
        Map<String, Object> noPre = gpt2("x");
        noPre.remove("tokenizer.ggml.pre");
        assertTrue(refusal(noPre).contains("tokenizer.ggml.pre is 'default'"));
        Map<String, Object> noMerges = gpt2("qwen2");
        noMerges.remove("tokenizer.ggml.merges");
        assertTrue(refusal(noMerges).contains("tokenizer.ggml.merges is missing"));
        Map<String, Object> noScores = spm(-1f, -2f);
        noScores.remove("tokenizer.ggml.scores");
        assertTrue(refusal(noScores).contains("tokenizer.ggml.scores is missing"));
    }

    @Test
    void malformedMetadataIsRefusedNamingTheKey() {
        Map<String, Object> dup = gpt2("qwen2");
        dup.put("tokenizer.ggml.tokens", List.of("a", "b", "a"));
        assertEquals("model.gguf: tokenizer.ggml.tokens holds 'a' twice (ids 0 and 2)", refusal(dup));
        Map<String, Object> badId = gpt2("qwen2");
        badId.put("tokenizer.ggml.eos_token_id", 3L);
        assertTrue(refusal(badId).contains("tokenizer.ggml.eos_token_id must hold integers in [0, 2], got '3'"));
        Map<String, Object> shortTypes = gpt2("qwen2");
        shortTypes.put("tokenizer.ggml.token_type", List.of(1L));
        assertTrue(refusal(shortTypes).contains("tokenizer.ggml.token_type must be an array of at least 3 values"));
        Map<String, Object> badMerge = gpt2("qwen2");
        badMerge.put("tokenizer.ggml.merges", List.of("ab"));
        assertTrue(refusal(badMerge).contains("tokenizer.ggml.merges[0] 'ab' is not two tokens"));
        Map<String, Object> nanScore = spm(Float.NaN, -1f);
        assertTrue(refusal(nanScore).contains("tokenizer.ggml.scores[8] must be a finite number"));
    }

    @Test
    void onlyAVocabularyCountsAsATokenizer() {
        assertFalse(HfTokenizer.ggufHasTokenizer(Map.of()));
        assertFalse(HfTokenizer.ggufHasTokenizer(Map.of("tokenizer.ggml.model", "none")));
        assertTrue(HfTokenizer.ggufHasTokenizer(Map.of("tokenizer.ggml.model", "gpt2")));
    }
}
