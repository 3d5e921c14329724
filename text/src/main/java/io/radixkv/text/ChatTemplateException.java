package io.radixkv.text;

/**
 * A chat template refused a conversation (its {@code raise_exception}, e.g. "Conversation
 * roles must alternate user/assistant/user/assistant/...") or could not render it. A
 * server answers it with 400: the request is at fault, not the engine.
 */
public final class ChatTemplateException extends IllegalArgumentException {
    private static final long serialVersionUID = 1L;

    public ChatTemplateException(String message, Throwable cause) {
        super(message, cause);
    }
}
