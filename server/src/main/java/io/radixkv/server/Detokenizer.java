package io.radixkv.server;

/** Turns a stream of generated token ids into text pieces (incrementally, UTF-8 safe). */
interface Detokenizer {
    /** Text that token {@code id} completes; empty while a character is still incomplete. */
    String next(int id);

    /** Whatever is still held back at the end of the stream. */
    String flush();

    /** For a model without a tokenizer: token ids only, no text. */
    Detokenizer NONE = new Detokenizer() {
        @Override
        public String next(int id) {
            return "";
        }

        @Override
        public String flush() {
            return "";
        }
    };
}
