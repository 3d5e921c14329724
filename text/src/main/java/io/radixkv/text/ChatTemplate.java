package io.radixkv.text;

import java.util.List;
import java.util.Map;

/** A Jinja chat template (stub until the template step). */
public final class ChatTemplate {
    public String render(List<ChatMessage> messages, boolean addGenerationPrompt) {
        return render(messages, addGenerationPrompt, Map.of());
    }

    public String render(List<ChatMessage> messages, boolean addGenerationPrompt, Map<String, Object> extraContext) {
        throw new UnsupportedOperationException();
    }
}
