package io.radixkv.structured;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * A model's tokens as the bytes each one adds to the text: what a constraint over bytes needs
 * to decide which tokens may come next. Special tokens have no bytes and are never allowed,
 * except the end tokens ({@link #isEnd}), which are allowed where the constraint accepts.
 * Ids past the tokenizer's ({@code size} is the model's vocabulary, which may be larger) have
 * no bytes either. Immutable.
 */
public final class TokenVocabulary {
    private static final ObjectMapper JSON = new ObjectMapper();

    private final byte[][] bytes;
    private final int[] endIds;

    private TokenVocabulary(byte[][] bytes, int[] endIds) {
        this.bytes = bytes;
        this.endIds = endIds;
    }

    /**
     * @param tokenBytes each id's bytes, null for a special token; ids past the list have none
     * @param size the model's vocabulary (the logits' width), at least the list's length
     * @param endIds the tokens that end generation (EOS), each in {@code [0, size)}
     */
    public static TokenVocabulary of(List<byte[]> tokenBytes, int size, Collection<Integer> endIds) {
        if (size < tokenBytes.size()) {
            throw new IllegalArgumentException("vocabulary size " + size + " is below the " + tokenBytes.size()
                    + " tokens given");
        }
        byte[][] b = new byte[size][];
        for (int i = 0; i < tokenBytes.size(); i++) {
            b[i] = tokenBytes.get(i) == null ? null : tokenBytes.get(i).clone();
        }
        int[] ends = endIds.stream().mapToInt(Integer::intValue).distinct().sorted().toArray();
        for (int e : ends) {
            if (e < 0 || e >= size) {
                throw new IllegalArgumentException("end token " + e + " is outside the vocabulary [0, " + size + ")");
            }
            b[e] = null;
        }
        return new TokenVocabulary(b, ends);
    }

    /**
     * Reads a Hugging Face {@code tokenizer.json}: byte-level BPE (Llama 3, Qwen: the GPT-2
     * byte-to-character table reversed) or SentencePiece-style pieces (Gemma: {@code ▁} is a
     * space, {@code <0xNN>} the byte NN). Added tokens marked special have no bytes; the others
     * are their content, read as the decoder reads pieces.
     *
     * @param size the model's vocabulary (the logits' width); ids beyond the file have no bytes
     */
    public static TokenVocabulary fromTokenizerJson(Path tokenizerJson, int size, Collection<Integer> endIds)
            throws IOException {
        try (java.io.InputStream in = java.nio.file.Files.newInputStream(tokenizerJson)) {
            return fromTokenizerJson(in, tokenizerJson.toString(), size, endIds);
        }
    }

    /** {@link #fromTokenizerJson(Path, int, Collection)} from a stream ({@code name} names it in errors). */
    public static TokenVocabulary fromTokenizerJson(java.io.InputStream in, String name, int size,
                                                    Collection<Integer> endIds) throws IOException {
        Map<Integer, String> pieces = new HashMap<>();
        Map<Integer, String> added = new HashMap<>();
        boolean byteLevel = false;
        try (JsonParser p = JSON.createParser(in)) {
            if (p.nextToken() != JsonToken.START_OBJECT) {
                throw new IOException(name + ": not a JSON object");
            }
            while (p.nextToken() == JsonToken.FIELD_NAME) {
                String field = p.currentName();
                JsonToken value = p.nextToken();
                if (field.equals("added_tokens") && value == JsonToken.START_ARRAY) {
                    while (p.nextToken() == JsonToken.START_OBJECT) {
                        JsonNode t = p.readValueAsTree();
                        int id = t.path("id").asInt(-1);
                        if (id >= 0) {
                            added.put(id, t.path("special").asBoolean(false) ? null : t.path("content").asText(""));
                        }
                    }
                } else if (field.equals("decoder") && value == JsonToken.START_OBJECT) {
                    byteLevel = p.readValueAsTree().toString().contains("\"ByteLevel\"");
                } else if (field.equals("model") && value == JsonToken.START_OBJECT) {
                    readVocab(p, pieces);
                } else {
                    p.skipChildren();
                }
            }
        }
        int max = -1;
        for (int id : pieces.keySet()) {
            max = Math.max(max, id);
        }
        for (int id : added.keySet()) {
            max = Math.max(max, id);
        }
        if (max < 0) {
            throw new IOException(name + ": empty vocabulary");
        }
        if (max >= size) {
            throw new IOException(name + " has token id " + max + ", outside the model's vocabulary of "
                    + size);
        }
        byte[][] b = new byte[max + 1][];
        int[] unicodeToByte = byteLevel ? unicodeToByte() : null;
        for (Map.Entry<Integer, String> e : pieces.entrySet()) {
            b[e.getKey()] = byteLevel ? byteLevel(e.getValue(), unicodeToByte) : sentencePiece(e.getValue());
        }
        for (Map.Entry<Integer, String> e : added.entrySet()) {
            // added tokens win over a vocabulary entry of the same id; the decoder reads their
            // content as it reads pieces
            String c = e.getValue();
            b[e.getKey()] = c == null ? null : byteLevel ? byteLevel(c, unicodeToByte) : sentencePiece(c);
        }
        return of(Arrays.asList(b), size, endIds);
    }

    private static void readVocab(JsonParser p, Map<Integer, String> pieces) throws IOException {
        while (p.nextToken() == JsonToken.FIELD_NAME) {
            String field = p.currentName();
            JsonToken value = p.nextToken();
            if (field.equals("vocab") && value == JsonToken.START_OBJECT) {
                while (p.nextToken() == JsonToken.FIELD_NAME) {
                    String piece = p.currentName();
                    p.nextToken();
                    pieces.put(p.getIntValue(), piece);
                }
            } else if (field.equals("vocab") && value == JsonToken.START_ARRAY) { // Unigram: [[piece, score], ...]
                int id = 0;
                while (p.nextToken() == JsonToken.START_ARRAY) {
                    p.nextToken();
                    pieces.put(id++, p.getText());
                    p.skipChildren();
                    while (p.nextToken() != JsonToken.END_ARRAY) {
                        p.skipChildren();
                    }
                }
            } else {
                p.skipChildren();
            }
        }
    }

    /** GPT-2's bytes_to_unicode, reversed: a piece's character to the byte it stands for (-1: none). */
    static int[] unicodeToByte() {
        int[] out = new int[0x200];
        Arrays.fill(out, -1);
        int n = 0;
        for (int b = 0; b < 256; b++) {
            boolean printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
            int c = printable ? b : 256 + n++;
            out[c] = b;
        }
        return out;
    }

    private static byte[] byteLevel(String piece, int[] table) {
        byte[] out = new byte[piece.length()];
        for (int i = 0; i < piece.length(); i++) {
            char c = piece.charAt(i);
            int b = c < table.length ? table[c] : -1;
            if (b < 0) {
                return piece.getBytes(StandardCharsets.UTF_8); // not a byte-level piece: its own text
            }
            out[i] = (byte) b;
        }
        return out;
    }

    private static byte[] sentencePiece(String piece) {
        if (piece.length() == 6 && piece.startsWith("<0x") && piece.endsWith(">")) {
            try {
                return new byte[] {(byte) Integer.parseInt(piece.substring(3, 5), 16)};
            } catch (NumberFormatException e) {
                // a piece that merely looks like a byte: its text
            }
        }
        return piece.replace('\u2581', ' ').getBytes(StandardCharsets.UTF_8);
    }

    /** The logits' width: every id in {@code [0, size)}. */
    public int size() {
        return bytes.length;
    }

    /** The bytes token {@code id} adds to the text; null for a special or end token. Do not modify. */
    public byte[] bytes(int id) {
        return bytes[id];
    }

    public boolean isEnd(int id) {
        return Arrays.binarySearch(endIds, id) >= 0;
    }

    /** The end tokens, sorted. */
    public int[] endIds() {
        return endIds.clone();
    }
}
