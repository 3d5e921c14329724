package io.radixkv.text;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Streaming detokenization on the real tokenizers. */
class IncrementalDetokenizerTest {

    /** Multi-byte characters split over byte-level tokens (Llama, Qwen) and byte-fallback tokens (Gemma). */
    static final List<String> TEXTS = List.of(
            "Grüße aus München — naïve café. 日本語のテキストと中文文本，한국어。",
            "Emoji: 🦙🚀 👩‍👩‍👧‍👦 👍🏽 🇫🇷 ❤️ 🫠 done",
            "Byte fallback: 𓀀𓁐 𐌰𐌱𐌲 ꙮ \ue000 end",
            "مرحبا بالعالم، नमस्ते दुनिया, สวัสดีชาวโลก\n\n  spaced   out\t",
            "<|im_start|>user\nhi<|im_end|><|eot_id|><end_of_turn> after specials");

    static String stream(IncrementalDetokenizer d, int[] ids, int n, List<String> pieces) {
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < n; i++) {
            String piece = d.next(ids[i]);
            pieces.add(piece);
            sb.append(piece);
        }
        return sb.toString();
    }

    /**
     * For every prefix of the token sequence: the pieces streamed so far are a prefix of the
     * whole text's decode, and when the prefix ends on a whole character, the pieces plus
     * flush() equal its decode exactly; with and without a prompt before it, with specials
     * kept and skipped. (Cut inside a byte-fallback run, the full decode turns the whole run
     * into U+FFFD while the stream has already emitted its finished characters.)
     */
    @ParameterizedTest
    @ValueSource(strings = {"llama3_1", "qwen3", "gemma3"})
    void streamEqualsFullDecodeForEveryPrefix(String name) {
        HfTokenizer tok = TestData.tokenizer(name);
        int[] prompt = tok.encode("Translate, please:", true);
        String promptText = tok.decode(prompt, false);
        int whole = 0;
        for (String text : TEXTS) {
            int[] ids = tok.encode(text, false);
            for (boolean skip : new boolean[] {false, true}) {
                String finalText = tok.decode(ids, skip);
                String promptSkip = tok.decode(prompt, skip);
                String finalWithPrompt = tok.decode(concat(prompt, ids), skip);
                assertTrue(finalWithPrompt.startsWith(promptSkip));
                for (int k = 0; k <= ids.length; k++) {
                    int[] gen = Arrays.copyOf(ids, k);
                    String prefixText = tok.decode(gen, skip);

                    IncrementalDetokenizer d = tok.detokenizer(new int[0], skip);
                    String streamed = stream(d, gen, k, new java.util.ArrayList<>());
                    assertEquals(k, d.generatedTokens());
                    assertTrue(finalText.startsWith(streamed), name + " k=" + k + ": " + streamed);
                    String flushed = streamed + d.flush();

                    IncrementalDetokenizer dp = tok.detokenizer(prompt, skip);
                    String streamedP = stream(dp, gen, k, new java.util.ArrayList<>());
                    assertTrue(finalWithPrompt.substring(promptSkip.length()).startsWith(streamedP));
                    String flushedP = streamedP + dp.flush();

                    if (prefixText.indexOf('\uFFFD') < 0) {
                        whole++;
                        assertEquals(prefixText, flushed, name + " k=" + k + " skip=" + skip + ": " + text);
                        String all = tok.decode(concat(prompt, gen), skip);
                        assertEquals(all.substring(promptSkip.length()), flushedP, name + " prompt k=" + k + ": " + text);
                    }
                }
                IncrementalDetokenizer d = tok.detokenizer(prompt, skip);
                assertEquals(finalWithPrompt.substring(promptSkip.length()), stream(d, ids, ids.length, new java.util.ArrayList<>()) + d.flush());
            }
        }
        assertTrue(whole > 100, "compared " + whole + " whole-character prefixes");
        assertTrue(promptText.endsWith("Translate, please:"));
    }

    /**
     * next() never returns a piece with U+FFFD (a split UTF-8 character or byte-fallback
     * sequence) when the text has none, and holds text back while a character is unfinished.
     */
    @ParameterizedTest
    @ValueSource(strings = {"llama3_1", "qwen3", "gemma3"})
    void neverEmitsAPartialCharacter(String name) {
        HfTokenizer tok = TestData.tokenizer(name);
        int heldBack = 0;
        for (String text : TEXTS) {
            int[] ids = tok.encode(text, false);
            IncrementalDetokenizer d = tok.detokenizer(new int[0], false);
            List<String> pieces = new java.util.ArrayList<>();
            String streamed = stream(d, ids, ids.length, pieces);
            assertEquals("", d.flush(), "nothing left once the text is complete");
            assertEquals(tok.decode(ids, false), streamed);
            for (int i = 0; i < pieces.size(); i++) {
                assertFalse(pieces.get(i).indexOf('\uFFFD') >= 0, name + " piece " + i + " of " + text + ": " + pieces);
                if (pieces.get(i).isEmpty()) {
                    heldBack++;
                }
            }
        }
        assertTrue(heldBack > 0, "the texts split characters across tokens, so some steps emit nothing");
    }

    /** A stream cut inside a character: flush() gives the rest as the full decode has it (U+FFFD). */
    @Test
    void flushReleasesAnUnfinishedCharacter() {
        HfTokenizer tok = TestData.tokenizer("gemma3");
        int[] ids = tok.encode("𓀀", false); // byte fallback: <0xF0> <0x93> <0x80> <0x80>
        assertEquals(4, ids.length);
        IncrementalDetokenizer d = tok.detokenizer(new int[0], false);
        assertEquals("", d.next(ids[0]));
        assertEquals("", d.next(ids[1]));
        String rest = d.flush();
        assertEquals(tok.decode(Arrays.copyOf(ids, 2), false), rest);
        assertTrue(rest.indexOf('\uFFFD') >= 0);
    }

    @Test
    void badIdIsRefusedAndLeavesTheStreamIntact() {
        HfTokenizer tok = TestData.tokenizer("llama3_1");
        int[] ids = tok.encode("Hello there, world", false);
        IncrementalDetokenizer d = tok.detokenizer(new int[0], false);
        StringBuilder sb = new StringBuilder(d.next(ids[0]));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> d.next(200_000));
        assertTrue(e.getMessage().contains("200000"), e.getMessage());
        for (int i = 1; i < ids.length; i++) {
            sb.append(d.next(ids[i]));
        }
        assertEquals("Hello there, world", sb.append(d.flush()).toString());
        assertThrows(IllegalArgumentException.class, () -> tok.detokenizer(new int[] {-1}, false));
    }

    static int[] concat(int[] a, int[] b) {
        int[] out = Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, out, a.length, b.length);
        return out;
    }
}
