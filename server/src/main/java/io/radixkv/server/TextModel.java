package io.radixkv.server;

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
    private final boolean requestTemplates;

    private TextModel(HfTokenizer tokenizer, String modelName, boolean requestTemplates) {
        this.tokenizer = tokenizer;
        this.modelName = modelName;
        this.requestTemplates = requestTemplates;
    }

    /** @param requestTemplates whether a request may bring its own {@code chat_template} */
    static TextModel of(HfTokenizer tokenizer, String modelName, boolean requestTemplates) {
        return new TextModel(tokenizer, modelName, requestTemplates);
    }

    static TextModel none(String modelName) {
        return new TextModel(null, modelName, false);
    }

    boolean hasTokenizer() {
        return tokenizer != null;
    }

    /** Encodes a text prompt; 400 naming {@code param} when the model has no tokenizer. */
    int[] encode(String text, boolean addSpecialTokens, String param) {
        requireTokenizer(param, "a text prompt");
        return tokenizer.encode(text, addSpecialTokens);
    }

    /**
     * How a conversation is rendered: vLLM's chat options.
     *
     * @param template the request's own Jinja template, or null for the model's
     * @param continueFinal the last message is continued: rendered without its end of turn and
     *     without a generation prompt
     */
    record ChatOptions(boolean addGenerationPrompt, boolean continueFinal, String template, Map<String, Object> kwargs) {
    }

    /**
     * Renders chat messages (transformers' message dicts) and {@code tools} (null: none) through
     * the request's or the model's template.
     */
    String renderChat(List<Map<String, Object>> messages, List<Map<String, Object>> tools, ChatOptions o) {
        requireTokenizer("messages", "chat messages");
        if (o.template() != null && !requestTemplates) {
            throw ApiException.badRequest("chat_template", "this server does not render a request's own "
                    + "'chat_template' (start it with --trust-request-chat-template)");
        }
        Optional<ChatTemplate> t = o.template() != null ? Optional.of(tokenizer.chatTemplateOf(o.template()))
                : tokenizer.chatTemplate();
        if (t.isEmpty()) {
            throw ApiException.badRequest("messages", "model '" + modelName
                    + "' has no chat template (tokenizer_config.json chat_template); send 'chat_template' or use "
                    + "/v1/completions");
        }
        String rendered;
        try {
            rendered = t.get().render(messages, tools, o.addGenerationPrompt() && !o.continueFinal(), o.kwargs());
        } catch (RuntimeException e) {
            String param = o.template() != null ? "chat_template" : "messages";
            throw ApiException.badRequest(param, "the chat template refused these messages: " + e.getMessage());
        }
        if (!o.continueFinal()) {
            return rendered;
        }
        // as transformers' continue_final_message: cut after the final message's content
        String last = String.valueOf(messages.getLast().get("content")).strip();
        int at = last.isEmpty() ? -1 : rendered.lastIndexOf(last);
        if (at < 0) {
            throw ApiException.badRequest("continue_final_message",
                    "the final message's content is not in the rendered conversation, so it cannot be continued");
        }
        return rendered.substring(0, at + last.length());
    }

    Detokenizer detokenizer(int[] promptIds, boolean skipSpecialTokens) {
        if (tokenizer == null) {
            return Detokenizer.NONE;
        }
        IncrementalDetokenizer d = tokenizer.detokenizer(promptIds, skipSpecialTokens);
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

    /** The text of {@code ids}, special tokens included (vLLM's {@code /detokenize}). */
    String decode(int[] ids) {
        requireTokenizer("tokens", "detokenizing");
        return tokenizer.decode(ids, false);
    }

    /** EOS and generation-config stop ids: generation ends on them (empty without a tokenizer). */
    Set<Integer> stopTokenIds() {
        return tokenizer == null ? Set.of() : tokenizer.stopTokenIds();
    }

    /** The tokenizer's model directory (call after {@link #requireTokenizer}). */
    java.nio.file.Path tokenizerDirectory() {
        return tokenizer.directory();
    }

    /** The tokenizer's Hugging Face tokenizer.json (a directory's, or one rebuilt from a GGUF file). */
    java.io.InputStream openTokenizerJson() throws java.io.IOException {
        return tokenizer.openTokenizerJson();
    }

    void requireTokenizer(String param, String what) {
        if (tokenizer == null) {
            throw ApiException.badRequest(param, "model '" + modelName + "' has no tokenizer (a preset): " + what
                    + " cannot be used; send the prompt as token ids");
        }
    }
}
