package io.radixkv.text;

import java.io.IOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;

/**
 * The {@code tokenizer.*} metadata of a GGUF file, read and checked as llama.cpp's
 * {@code llama_vocab::load} reads it: the token list, token types and scores, the BPE merges,
 * the special token ids and flags (with llama.cpp's defaults for absent keys) and the chat
 * templates. Values come in the GGUF reader's Java kinds (integers as {@link Long}, float32 as
 * {@link Float}, arrays as {@link List}).
 *
 * @param model {@code tokenizer.ggml.model}: {@code gpt2} (byte-level BPE) or {@code llama} (SentencePiece)
 * @param pre {@code tokenizer.ggml.pre}, or "default" when absent
 * @param tokens the token texts by id
 * @param types the token types by id (llama.cpp's {@code llama_token_type}; NORMAL when absent)
 * @param scores the SentencePiece scores by id, or null when absent
 * @param merges the BPE merges as {left, right}, in rank order (empty for {@code llama})
 * @param chatTemplates the chat templates by name ("default" for {@code tokenizer.chat_template})
 */
record GgufVocab(
        String model,
        String pre,
        List<String> tokens,
        int[] types,
        float[] scores,
        List<String[]> merges,
        OptionalInt bos,
        OptionalInt eos,
        OptionalInt unk,
        OptionalInt pad,
        OptionalInt eot,
        OptionalInt eom,
        boolean addBos,
        boolean addEos,
        boolean addSpacePrefix,
        Map<String, String> chatTemplates) {

    static final int NORMAL = 1;
    static final int UNKNOWN = 2;
    static final int CONTROL = 3;
    static final int USER_DEFINED = 4;
    static final int UNUSED = 5;
    static final int BYTE = 6;

    private static final String P = "tokenizer.ggml.";

    /**
     * Reads the vocabulary of {@code metadata}.
     *
     * @param source names the file in messages
     * @throws UnsupportedTokenizerException naming the key when a value is missing, of the wrong
     *     kind or out of range
     */
    static GgufVocab read(Map<String, ?> metadata, String source) throws UnsupportedTokenizerException {
        Reader r = new Reader(metadata, source);
        String model = r.string(P + "model");
        boolean spm = model.equals("llama");
        boolean bpe = model.equals("gpt2");
        if (!spm && !bpe) {
            throw r.refuse(P + "model is '" + model + "': only 'gpt2' (byte-level BPE) and 'llama' (SentencePiece) "
                    + "vocabularies are rebuilt");
        }
        String pre = metadata.containsKey(P + "pre") ? r.string(P + "pre") : "default";
        List<String> tokens = r.strings(P + "tokens");
        if (tokens.isEmpty()) {
            throw r.refuse(P + "tokens is empty");
        }
        Map<String, Integer> seen = new HashMap<>();
        for (int i = 0; i < tokens.size(); i++) {
            Integer before = seen.put(tokens.get(i), i);
            if (before != null) {
                throw r.refuse(P + "tokens holds '" + tokens.get(i) + "' twice (ids " + before + " and " + i + ")");
            }
        }
        int n = tokens.size();
        int[] types = new int[n];
        java.util.Arrays.fill(types, NORMAL);
        if (metadata.containsKey(P + "token_type")) {
            List<?> t = r.array(P + "token_type", n);
            for (int i = 0; i < n; i++) {
                types[i] = (int) r.integer(P + "token_type", t.get(i), 0, 6);
            }
        }
        float[] scores = null;
        if (metadata.containsKey(P + "scores")) {
            List<?> s = r.array(P + "scores", n);
            scores = new float[n];
            for (int i = 0; i < n; i++) {
                if (!(s.get(i) instanceof Number x) || !Float.isFinite(x.floatValue())) {
                    throw r.refuse(P + "scores[" + i + "] must be a finite number, got " + s.get(i));
                }
                scores[i] = x.floatValue();
            }
        }
        List<String[]> merges = new ArrayList<>();
        if (bpe) {
            if (!metadata.containsKey(P + "merges")) {
                throw r.refuse(P + "merges is missing: a gpt2 vocabulary needs its BPE merges");
            }
            List<String> m = r.strings(P + "merges");
            for (int i = 0; i < m.size(); i++) {
                String word = m.get(i);
                int space = word.indexOf(' ', 1); // as llama.cpp splits them
                if (space < 0) {
                    throw r.refuse(P + "merges[" + i + "] '" + word + "' is not two tokens separated by a space");
                }
                merges.add(new String[] {word.substring(0, space), word.substring(space + 1)});
            }
        } else if (scores == null) {
            throw r.refuse(P + "scores is missing: a SentencePiece vocabulary ranks its merges by them");
        }
        if (spm && metadata.containsKey(P + "remove_extra_whitespaces") && r.bool(P + "remove_extra_whitespaces", false)) {
            throw r.refuse(P + "remove_extra_whitespaces is true: that normalization is not rebuilt");
        }
        Map<String, String> chat = new LinkedHashMap<>();
        for (String k : metadata.keySet()) {
            if (k.equals("tokenizer.chat_template")) {
                chat.put("default", r.string(k));
            } else if (k.startsWith("tokenizer.chat_template.")) {
                chat.put(k.substring("tokenizer.chat_template.".length()), r.string(k));
            }
        }
        // llama.cpp's defaults: SentencePiece bos 1, eos 2, unk 0, BOS added, a space prefixed;
        // byte-level BPE no special ids, BOS added for llama-bpe only.
        return new GgufVocab(model, pre, List.copyOf(tokens), types, scores, List.copyOf(merges),
                r.id(P + "bos_token_id", n, spm ? 1 : -1), r.id(P + "eos_token_id", n, spm ? 2 : -1),
                r.id(P + "unknown_token_id", n, spm ? 0 : -1), r.id(P + "padding_token_id", n, -1),
                r.id(P + "eot_token_id", n, -1), r.id(P + "eom_token_id", n, -1),
                r.bool(P + "add_bos_token", spm || pre.equals("llama-bpe")), r.bool(P + "add_eos_token", false),
                r.bool(P + "add_space_prefix", spm), Map.copyOf(chat));
    }

    /** Number of tokens (ids 0 to size - 1). */
    int size() {
        return tokens.size();
    }

    /** The text of {@code id}, or null when {@code id} is absent. */
    String text(OptionalInt id) {
        return id.isPresent() ? tokens.get(id.getAsInt()) : null;
    }

    /** Typed access to the metadata with messages naming the source and the key. */
    private record Reader(Map<String, ?> metadata, String source) {
        UnsupportedTokenizerException refuse(String why) {
            return new UnsupportedTokenizerException(source + ": " + why);
        }

        String string(String key) throws UnsupportedTokenizerException {
            if (metadata.get(key) instanceof String s) {
                return s;
            }
            throw refuse(key + " must be a string, got " + describe(metadata.get(key)));
        }

        boolean bool(String key, boolean dflt) throws UnsupportedTokenizerException {
            Object v = metadata.get(key);
            if (v == null) {
                return dflt;
            }
            if (v instanceof Boolean b) {
                return b;
            }
            throw refuse(key + " must be a bool, got " + describe(v));
        }

        List<?> array(String key, int atLeast) throws UnsupportedTokenizerException {
            if (metadata.get(key) instanceof List<?> l && l.size() >= atLeast) {
                return l;
            }
            throw refuse(key + " must be an array of at least " + atLeast + " values, got " + describe(metadata.get(key)));
        }

        List<String> strings(String key) throws UnsupportedTokenizerException {
            List<?> l = array(key, 0);
            List<String> out = new ArrayList<>(l.size());
            for (int i = 0; i < l.size(); i++) {
                if (!(l.get(i) instanceof String s)) {
                    throw refuse(key + "[" + i + "] must be a string, got " + describe(l.get(i)));
                }
                out.add(s);
            }
            return out;
        }

        long integer(String key, Object v, long min, long max) throws UnsupportedTokenizerException {
            if (v instanceof Long l && l >= min && l <= max) {
                return l;
            }
            throw refuse(key + " must hold integers in [" + min + ", " + max + "], got " + describe(v));
        }

        /** A token id in [0, n); absent keys take {@code dflt} (negative: none). */
        OptionalInt id(String key, int n, int dflt) throws UnsupportedTokenizerException {
            Object v = metadata.get(key);
            if (v == null) {
                return dflt >= 0 && dflt < n ? OptionalInt.of(dflt) : OptionalInt.empty();
            }
            return OptionalInt.of((int) integer(key, v, 0, n - 1));
        }

        private static String describe(Object v) {
            return v == null ? "nothing" : v instanceof List<?> l ? "an array of " + l.size() : "'" + v + "'";
        }
    }
}
