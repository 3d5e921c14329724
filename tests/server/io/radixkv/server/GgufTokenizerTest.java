package io.radixkv.server;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.radixkv.checkpoint.gguf.GgufTestWriter;
import io.radixkv.text.ChatMessage;
import io.radixkv.text.HfTokenizer;
import java.io.IOException;
import java.nio.file.Path;
import java.text.Normalizer;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The real Llama 3.1, Qwen3 and Gemma 3 tokenizers written into GGUF files as llama.cpp's
 * converter writes them ({@link GgufTokenizerWriter}), read back by {@link ModelTokenizer} with
 * no tokenizer directory: the rebuilt tokenizer gives the ids of the Hugging Face tokenizer
 * loaded from the same files, decodes back to the text, and its chat template renders the same
 * prompts.
 */
class GgufTokenizerTest {
    @TempDir
    static Path tmp;

    static final List<String> TEXTS = List.of(
            "Hello, world!",
            "The quick brown fox jumps over the lazy dog.",
            "1 12 123 1234 12345 3.14159 2026-12-06 0x7fff",
            "  leading spaces, two  inner   runs    and trailing   ",
            "tabs\tand\t\ttabs, newlines\n\nand\r\nCRLF\n\n\n",
            "日本語のテキストと中文文本，还有한국어도 있습니다.",
            "emoji 🦙🚀 👩‍👩‍👧‍👦 flags 🇫🇷 and ✅",
            "def f(x):\n    return {\"a\": [x, x ** 2]}  # comment\n",
            "I've been 'told' he's there, 'RE you sure? We'Ve a'lL",
            "ÀÉÎõü ñ ß ﬁ e\u0301 Ελληνικά русский עברית العربية",
            "<|im_start|>user\nhi<|im_end|> <|begin_of_text|> <start_of_turn>model<end_of_turn> <think>x</think>",
            "");

    private static HfTokenizer gguf(String name, String pre) throws IOException {
        Path file = GgufTokenizerWriter.write(new GgufTestWriter(), TinyLlamaCheckpoint.tokenizerDir(name), pre)
                .write(tmp.resolve(name + ".gguf"));
        Optional<HfTokenizer> tok = ModelTokenizer.load(file.toString(), null);
        assertTrue(tok.isPresent(), "a GGUF file with tokenizer metadata has a tokenizer");
        return tok.get();
    }

    @ParameterizedTest
    @CsvSource({"llama3_1, llama-bpe, '128001,128009'", "qwen3, qwen2, '151643,151645'", "gemma3, , '106'"})
    void theGgufTokenizerIsTheHuggingFaceOne(String name, String pre, String stops) throws IOException {
        try (HfTokenizer hf = HfTokenizer.load(TinyLlamaCheckpoint.tokenizerDir(name)); HfTokenizer g = gguf(name, pre)) {
            for (String text : TEXTS) {
                int[] ids = hf.encode(text, true);
                assertArrayEquals(ids, g.encode(text, true), name + " with special tokens: " + text);
                assertArrayEquals(hf.encode(text, false), g.encode(text, false), name + " without: " + text);
                String want = name.equals("qwen3") ? Normalizer.normalize(text, Normalizer.Form.NFC) : text;
                assertEquals(want, g.decode(g.encode(text, false), false), name + " decode: " + text);
                assertEquals(hf.decode(ids, false), g.decode(ids, false), name + " decode with specials: " + text);
                assertEquals(hf.decode(ids, true), g.decode(ids, true), name + " decode skipping specials: " + text);
            }
            assertEquals(hf.bosTokenId(), g.bosTokenId(), name);
            assertEquals(hf.eosTokenId(), g.eosTokenId(), name);
            assertEquals(hf.vocabSize(), g.vocabSize(), name);
            Set<Integer> want = Set.copyOf(java.util.Arrays.stream(stops.split(",")).map(Integer::valueOf).toList());
            assertEquals(want, g.stopTokenIds(), name + ": llama.cpp's end-of-generation ids");

            List<ChatMessage> chat = List.of(new ChatMessage("system", "You are terse."),
                    new ChatMessage("user", "Name a prime."), new ChatMessage("assistant", "7"),
                    new ChatMessage("user", "Another?"));
            for (boolean gen : new boolean[] {true, false}) {
                String hfPrompt = hf.chatTemplate().orElseThrow().render(chat, gen, Map.of("enable_thinking", false));
                String ggufPrompt = g.chatTemplate().orElseThrow().render(chat, gen, Map.of("enable_thinking", false));
                assertEquals(hfPrompt, ggufPrompt, name + ": the chat template renders the same prompt");
                assertArrayEquals(hf.encode(hfPrompt, false), g.encode(ggufPrompt, false), name);
            }
        }
    }
}
