package io.radixkv.text;

import java.util.Arrays;

/**
 * Streams the text of generated tokens one token at a time, as vLLM's incremental
 * detokenizer does: it keeps a prefix offset and a read offset into the token list, decodes
 * the window {@code [prefix, read)} (text already emitted) and {@code [prefix, end)}, and
 * emits the difference. Text that ends in U+FFFD is held back: the last tokens are then an
 * unfinished multi-byte UTF-8 character (byte-level BPE) or byte-fallback sequence, and
 * the next token may complete it. Decoding from a few tokens back rather than from the
 * last token keeps decoders that strip a leading space or merge across tokens right.
 *
 * <p>The pieces returned by {@link #next} and then {@link #flush} concatenate to the decode
 * of all the tokens (prompt included) minus the decode of the prompt. Not thread-safe: one
 * per request.
 */
public final class IncrementalDetokenizer {

    /** vLLM's INITIAL_INCREMENTAL_DETOKENIZATION_OFFSET: prompt tokens decoded as context. */
    static final int INITIAL_OFFSET = 5;
    private static final char REPLACEMENT = '\uFFFD';

    private final HfTokenizer tokenizer;
    private final boolean skipSpecialTokens;
    private final int promptLength;
    private int[] ids;
    private int size;
    private int prefixOffset;
    private int readOffset;

    IncrementalDetokenizer(HfTokenizer tokenizer, int[] promptIds, boolean skipSpecialTokens) {
        this.tokenizer = tokenizer;
        this.skipSpecialTokens = skipSpecialTokens;
        this.ids = Arrays.copyOf(promptIds, Math.max(16, promptIds.length + 16));
        this.size = promptIds.length;
        this.promptLength = promptIds.length;
        this.prefixOffset = Math.max(size - INITIAL_OFFSET, 0);
        this.readOffset = size;
    }

    /** Adds one generated token; returns the text it completes, possibly "". */
    public String next(int tokenId) {
        if (size == ids.length) {
            ids = Arrays.copyOf(ids, ids.length * 2);
        }
        tokenizer.checkId(tokenId); // before it is kept: a bad id leaves the state as it was
        ids[size++] = tokenId;
        String prefixText = tokenizer.decode(ids, prefixOffset, readOffset, skipSpecialTokens);
        String newText = tokenizer.decode(ids, prefixOffset, size, skipSpecialTokens);
        if (newText.length() <= prefixText.length() || newText.charAt(newText.length() - 1) == REPLACEMENT) {
            return "";
        }
        prefixOffset = readOffset;
        readOffset = size;
        return newText.substring(prefixText.length());
    }

    /**
     * The text still held back at the end of the stream (an unfinished character decodes to
     * U+FFFD, as in the full decode); "" when there is none. The detokenizer stays usable.
     */
    public String flush() {
        String prefixText = tokenizer.decode(ids, prefixOffset, readOffset, skipSpecialTokens);
        String newText = tokenizer.decode(ids, prefixOffset, size, skipSpecialTokens);
        if (newText.length() <= prefixText.length()) {
            return "";
        }
        prefixOffset = readOffset;
        readOffset = size;
        return newText.substring(prefixText.length());
    }

    /** Tokens added so far with {@link #next}, prompt excluded. */
    public int generatedTokens() {
        return size - promptLength;
    }
}
