package io.radixkv.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.async.ByteArrayFeeder;
import io.radixkv.structured.Constraint;
import io.radixkv.structured.Grammar;
import io.radixkv.structured.GrammarCompiler;
import io.radixkv.structured.GrammarMatcher;
import io.radixkv.structured.TokenVocabulary;
import io.radixkv.text.HfTokenizer;
import java.io.IOException;
import java.nio.file.Path;
import java.nio.charset.StandardCharsets;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * Token masks over the real Llama 3.1, Qwen3 and Gemma 3 vocabularies, checked against the
 * tokenizers' own decoding: every token's bytes decode (by the Rust tokenizer) to the text the
 * vocabulary says; and in states reached by real tokenizations of prefixes, a token is allowed
 * exactly when the prefix's text plus the token's decoded text can still become a match
 * (java.util.regex's hitEnd for regexes; for JSON, allowed tokens keep the text a valid prefix
 * for Jackson's incremental parser, and every refused token either breaks it for Jackson or
 * breaks the documented whitespace rule).
 */
class StructuredTokenMasksTest {
    private static final String[] TOKENIZERS = {"llama3_1", "qwen3", "gemma3"};

    private record Setup(HfTokenizer tok, GrammarCompiler compiler, String[] texts) {}

    private static final java.util.Map<String, Setup> SETUPS = new java.util.HashMap<>();

    @org.junit.jupiter.api.AfterAll
    static void close() {
        SETUPS.values().forEach(x -> x.tok.close());
    }

    /** The tokenizer, its vocabulary and each token's text (null: special, or not whole UTF-8), once per class. */
    private static synchronized Setup setup(String name) throws IOException {
        Setup cached = SETUPS.get(name);
        if (cached == null) {
            cached = load(name);
            SETUPS.put(name, cached);
        }
        return cached;
    }

    private static Setup load(String name) throws IOException {
        Path dir = TinyLlamaCheckpoint.tokenizerDir(name);
        HfTokenizer tok = HfTokenizer.load(dir);
        TokenVocabulary vocab = TokenVocabulary.fromTokenizerJson(dir.resolve("tokenizer.json"), tok.vocabSize(),
                tok.stopTokenIds());
        String[] texts = new String[tok.vocabSize()];
        for (int id = 0; id < texts.length; id++) {
            byte[] b = vocab.bytes(id);
            if (b != null && b.length > 0 && complete(b)) {
                texts[id] = new String(b, StandardCharsets.UTF_8);
            }
        }
        return new Setup(tok, new GrammarCompiler(vocab, 4), texts);
    }

    private static boolean complete(byte[] b) {
        return StandardCharsets.UTF_8.newDecoder().decode(java.nio.ByteBuffer.wrap(b), java.nio.CharBuffer.allocate(b.length), true)
                .isUnderflow();
    }

    @Test
    void tokenBytesAreWhatTheTokenizerDecodes() throws IOException {
        for (String name : TOKENIZERS) {
            Setup s = setup(name);
            int checked = 0;
            int whole = 0;
            for (int id = 0; id < s.texts.length; id++) {
                if (s.texts[id] != null) {
                    whole++;
                    if (id % 3 == 0 || id < 2000) { // a third of them: decoding one at a time is slow
                        assertEquals(s.tok.decode(new int[] {id}, false), s.texts[id], name + " token " + id);
                        checked++;
                    }
                }
            }
            assertTrue(whole > s.texts.length * 9 / 10, name + ": only " + whole + " tokens are whole UTF-8");
            assertTrue(checked > s.texts.length / 4, name + ": " + checked);
        }
    }

    @Test
    void regexMasksAllowExactlyTheViableTokens() throws IOException {
        String regex = "[A-Z][a-z]{2,8}( [A-Z][a-z]{2,8}){0,2}\\.";
        Pattern p = Pattern.compile(regex);
        for (String name : TOKENIZERS) {
            Setup s = setup(name);
            Grammar g = s.compiler.compile(Constraint.regex(regex));
            for (String prefix : new String[] {"", "Hel", "Hello Wo"}) {
                GrammarMatcher m = advanced(s, g, prefix);
                int[] mask = m.allowedTokens();
                int allowed = 0;
                for (int id = 0; id < s.texts.length; id++) {
                    if (s.texts[id] == null) {
                        continue;
                    }
                    Matcher x = p.matcher(prefix + s.texts[id]);
                    boolean viable = x.matches() || x.hitEnd();
                    assertEquals(viable, bit(mask, id), name + " after '" + prefix + "': token " + id + " '" + s.texts[id] + "'");
                    allowed += viable ? 1 : 0;
                }
                assertTrue(allowed > 0, name + " " + prefix);
                for (int eos : s.tok.stopTokenIds()) {
                    assertEquals(false, bit(mask, eos), "no end token before a match");
                }
            }
            GrammarMatcher done = advanced(s, g, "Hello World.");
            int[] mask = done.allowedTokens();
            for (int id = 0; id < s.texts.length; id++) {
                assertEquals(s.tok.stopTokenIds().contains(id), bit(mask, id), name + ": only the end tokens after a match");
            }
        }
    }

    @Test
    void jsonMasksKeepTheTextAValidPrefix() throws IOException {
        for (String name : TOKENIZERS) {
            Setup s = setup(name);
            Grammar g = s.compiler.compile(Constraint.jsonObject());
            for (String prefix : new String[] {"{", "{\"name\": \"Al", "{\"a\": [1, 2", "{\"a\": {\"b\": true}"}) {
                int[] mask = advanced(s, g, prefix).allowedTokens();
                int allowed = 0;
                for (int id = 0; id < s.texts.length; id++) {
                    if (s.texts[id] == null) {
                        continue;
                    }
                    String text = prefix + s.texts[id];
                    boolean jackson = validJsonPrefix(text);
                    if (bit(mask, id)) {
                        allowed++;
                        assertTrue(jackson, name + " after '" + prefix + "': allowed token " + id + " '" + s.texts[id] + "'");
                    } else {
                        assertTrue(!jackson || breaksWhitespaceRule(text), name + " after '" + prefix + "': refused token "
                                + id + " '" + s.texts[id] + "' keeps a valid prefix");
                    }
                }
                assertTrue(allowed > 0, name + " " + prefix + ": " + allowed);
            }
        }
    }

    private static GrammarMatcher advanced(Setup s, Grammar g, String prefix) {
        GrammarMatcher m = g.newMatcher();
        for (int id : s.tok.encode(prefix, false)) {
            assertTrue(m.accept(id), "the tokenization of '" + prefix + "' must be accepted, token " + id);
        }
        return m;
    }

    private static boolean bit(int[] mask, int id) {
        return (mask[id >>> 5] >>> (id & 31) & 1) != 0;
    }

    /**
     * Whitespace beyond the rule: before the value, a run of more than two, a carriage return
     * (only space, newline and tab are generated), or anything after the object closed.
     */
    private static boolean breaksWhitespaceRule(String text) {
        return Character.isWhitespace(text.charAt(0)) || Pattern.compile("\\s{3}").matcher(text).find()
                || text.indexOf('\r') >= 0 || closedThenMore(text);
    }

    private static boolean closedThenMore(String text) {
        int depth = 0;
        boolean inString = false;
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            if (inString) {
                if (c == '\\') {
                    i++;
                } else if (c == '"') {
                    inString = false;
                }
            } else if (c == '"') {
                inString = true;
            } else if (c == '{' || c == '[') {
                depth++;
            } else if (c == '}' || c == ']') {
                if (--depth == 0 && i + 1 < text.length()) {
                    return true;
                }
            }
        }
        return false;
    }

    /**
     * Jackson's non-blocking parser reads the whole text without an error, and a scalar cut by
     * the end of the text (which the parser holds back until it ends) can still become true,
     * false, null or a number.
     */
    private static boolean validJsonPrefix(String text) {
        return jacksonReads(text) && literalTailIsPrefix(text);
    }

    private static final Pattern NUMBER = Pattern.compile("-?(?:0|[1-9][0-9]*)(?:\\.[0-9]+)?(?:[eE][+-]?[0-9]+)?");

    /** The text's last scalar outside a string, cut by the end, can still become a literal or a number. */
    private static boolean literalTailIsPrefix(String text) {
        boolean inString = false;
        int tailStart = 0;
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            if (inString) {
                if (c == '\\') {
                    i++;
                } else if (c == '"') {
                    inString = false;
                    tailStart = i + 1;
                }
            } else if (c == '"') {
                inString = true;
            } else if (" \t\n\r,:[]{}".indexOf(c) >= 0) {
                tailStart = i + 1;
            }
        }
        String tail = inString ? "" : text.substring(tailStart);
        if (tail.isEmpty()) {
            return true;
        }
        Matcher m = NUMBER.matcher(tail);
        return "true".startsWith(tail) || "false".startsWith(tail) || "null".startsWith(tail) || m.matches()
                || m.hitEnd();
    }

    private static boolean jacksonReads(String text) {
        byte[] b = text.getBytes(StandardCharsets.UTF_8);
        try (JsonParser p = new JsonFactory().createNonBlockingByteArrayParser()) {
            ((ByteArrayFeeder) p.getNonBlockingInputFeeder()).feedInput(b, 0, b.length);
            JsonToken t;
            while ((t = p.nextToken()) != null && t != JsonToken.NOT_AVAILABLE) {
                // read on
            }
            return true;
        } catch (IOException e) {
            return false;
        }
    }
}
