package io.radixkv.server;

import io.radixkv.text.ChatMessage;
import io.radixkv.text.ChatTemplate;
import io.radixkv.text.HfTokenizer;
import io.radixkv.text.IncrementalDetokenizer;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * The server's view of the model's text side: a Hugging Face tokenizer and chat template when
 * the model directory has them, or nothing (a preset, which takes token-id prompts only).
 */
final class TextModel {
    private final HfTokenizer tokenizer;
    private final String modelName;

    private TextModel(HfTokenizer tokenizer, String modelName) {
        this.tokenizer = tokenizer;
        this.modelName = modelName;
    }

    static TextModel of(HfTokenizer tokenizer, String modelName) {
        return new TextModel(tokenizer, modelName);
    }

    static TextModel none(String modelName) {
        return new TextModel(null, modelName);
    }

    boolean hasTokenizer() {
        return tokenizer != null;
    }

    /** Encodes a text prompt; 400 naming {@code param} when the model has no tokenizer. */
    int[] encode(String text, boolean addSpecialTokens, String param) {
        requireTokenizer(param, "a text prompt");
        return tokenizer.encode(text, addSpecialTokens);
    }

    /** Renders chat messages through the model's template (generation prompt appended). */
    String renderChat(List<ChatMessage> messages, Map<String, Object> extra) {
        requireTokenizer("messages", "chat messages");
        Optional<ChatTemplate> t = tokenizer.chatTemplate();
        if (t.isEmpty()) {
            throw ApiException.badRequest("messages", "model '" + modelName
                    + "' has no chat template (tokenizer_config.json chat_template); use /v1/completions");
        }
        try {
            return t.get().render(messages, true, extra);
        } catch (RuntimeException e) {
            throw ApiException.badRequest("messages", "the chat template refused these messages: " + e.getMessage());
        }
    }

    Detokenizer detokenizer(int[] promptIds) {
        if (tokenizer == null) {
            return Detokenizer.NONE;
        }
        IncrementalDetokenizer d = tokenizer.detokenizer(promptIds, true);
        return new Detokenizer() {
            @Override
            public String next(int id) {
                return d.next(id);
            }

            @Override
            public String flush() {
                return d.flush();
            }
        };
    }

    /** EOS and generation-config stop ids: generation ends on them (empty without a tokenizer). */
    Set<Integer> stopTokenIds() {
        return tokenizer == null ? Set.of() : tokenizer.stopTokenIds();
    }

    void requireTokenizer(String param, String what) {
        if (tokenizer == null) {
            throw ApiException.badRequest(param, "model '" + modelName + "' has no tokenizer (a preset): " + what
                    + " cannot be used; send the prompt as token ids");
        }
    }
}
