package io.radixkv.text;

import com.hubspot.jinjava.interpret.FatalTemplateErrorsException;
import com.hubspot.jinjava.interpret.RenderResult;
import com.hubspot.jinjava.interpret.TemplateError;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * A model's Jinja chat template, rendered as transformers' {@code apply_chat_template}
 * renders it (see {@link TransformersJinja}): the context holds {@code messages} (a list of
 * message maps), {@code tools} (a list of tool maps, or None), {@code documents} (None),
 * {@code add_generation_prompt},
 * the tokenizer's special tokens ({@code bos_token}, {@code eos_token}, ...) and any extra
 * variables (e.g. {@code enable_thinking}).
 *
 * <p>The rendered prompt already holds the template's BOS text ({@code <|begin_of_text|>},
 * {@code <bos>}): encode it with {@code HfTokenizer.encode(prompt, false)}, as
 * {@code apply_chat_template(tokenize=True)} does, or BOS appears twice.
 *
 * <p>Thread-safe.
 */
public final class ChatTemplate {

    private final String source;
    private final String jinjavaSource;
    private final Map<String, Object> specialTokens;

    ChatTemplate(String source, Map<String, Object> specialTokens) {
        this.source = Objects.requireNonNull(source, "source");
        this.jinjavaSource = JinjaCompat.rewrite(source);
        this.specialTokens = Map.copyOf(specialTokens);
    }

    /** A template from its Jinja source, with the given special-token variables (bos_token, ...). */
    public static ChatTemplate of(String source, Map<String, Object> specialTokens) {
        return new ChatTemplate(source, specialTokens);
    }

    public String source() {
        return source;
    }

    public String render(List<ChatMessage> messages, boolean addGenerationPrompt) {
        return render(messages, addGenerationPrompt, Map.of());
    }

    /**
     * Renders the conversation. {@code extraContext} adds or overrides template variables
     * (transformers' {@code **kwargs}), e.g. {@code enable_thinking=false} for Qwen3.
     *
     * @throws ChatTemplateException when the template refuses the conversation
     *     ({@code raise_exception}, e.g. roles that do not alternate) or fails to render
     */
    public String render(List<ChatMessage> messages, boolean addGenerationPrompt, Map<String, Object> extraContext) {
        Objects.requireNonNull(messages, "messages");
        List<Map<String, Object>> msgs = new ArrayList<>(messages.size());
        for (int i = 0; i < messages.size(); i++) {
            ChatMessage m = messages.get(i);
            if (m == null || m.role() == null || m.content() == null) {
                throw new IllegalArgumentException("message " + i + " needs a role and a content: " + m);
            }
            Map<String, Object> map = new LinkedHashMap<>();
            map.put("role", m.role());
            map.put("content", m.content());
            msgs.add(map);
        }
        return render(msgs, null, addGenerationPrompt, extraContext);
    }

    /**
     * Renders a conversation given as transformers' message dicts, with tool definitions:
     * {@code messages} are maps such as {role, content}, {role: assistant, content,
     * tool_calls: [{id, type, function: {name, arguments}}]} or {role: tool, content,
     * tool_call_id} (values: strings, numbers, booleans, null, lists and maps, passed to the
     * template as they are); {@code tools} is the template's {@code tools} variable (a list of
     * {type: function, function: {name, description, parameters}} maps), or null for none.
     *
     * @throws ChatTemplateException when the template refuses the conversation or fails to render
     */
    public String render(List<Map<String, Object>> messages, List<Map<String, Object>> tools,
                         boolean addGenerationPrompt, Map<String, Object> extraContext) {
        Objects.requireNonNull(messages, "messages");
        Objects.requireNonNull(extraContext, "extraContext");
        Map<String, Object> context = new HashMap<>(specialTokens);
        // Jinja2 globals: a template may test them ({% if strftime_now is defined %}, Llama 3.x);
        // calls still go to the registered functions
        context.put("strftime_now", TransformersJinja.GLOBAL);
        context.put("raise_exception", TransformersJinja.GLOBAL);
        context.put("messages", messages);
        context.put("tools", tools);
        context.put("documents", null);
        context.put("add_generation_prompt", addGenerationPrompt);
        context.putAll(extraContext);

        RenderResult result;
        try {
            result = TransformersJinja.ENGINE.renderForResult(jinjavaSource, context);
        } catch (TransformersJinja.TemplateRaised e) {
            throw new ChatTemplateException(e.getMessage(), e);
        } catch (FatalTemplateErrorsException e) {
            throw failure(e.getErrors());
        }
        for (TemplateError error : result.getErrors()) {
            Throwable cause = error.getException();
            while (cause != null && !(cause instanceof TransformersJinja.TemplateRaised)) {
                cause = cause.getCause();
            }
            if (cause != null) {
                throw new ChatTemplateException(cause.getMessage(), cause);
            }
        }
        List<TemplateError> fatal = result.getErrors().stream()
                .filter(e -> e.getSeverity() == TemplateError.ErrorType.FATAL).toList();
        if (!fatal.isEmpty()) {
            throw failure(fatal);
        }
        return result.getOutput();
    }

    private static ChatTemplateException failure(Iterable<TemplateError> errors) {
        StringBuilder sb = new StringBuilder("chat template failed:");
        for (TemplateError e : errors) {
            sb.append(" [line ").append(e.getLineno()).append("] ").append(e.getMessage());
        }
        return new ChatTemplateException(sb.toString(), null);
    }
}
