package io.radixkv.text;

import java.io.IOException;

/**
 * A tokenizer description radixkv cannot reproduce (a GGUF vocabulary of another kind, a
 * pre-tokenizer it does not know, a missing or malformed key); the message names the file and
 * the reason.
 */
public final class UnsupportedTokenizerException extends IOException {
    public UnsupportedTokenizerException(String message) {
        super(message);
    }
}
