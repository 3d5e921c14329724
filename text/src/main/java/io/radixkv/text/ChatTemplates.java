package io.radixkv.text;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Optional;

/** Finds a model directory's chat template (stub until the template step). */
final class ChatTemplates {
    private ChatTemplates() {}

    static Optional<ChatTemplate> load(Path dir, JsonNode config, String bos, String eos) throws IOException {
        return Optional.empty();
    }

    static Optional<ChatTemplate> loadNamed(JsonNode config, String name, String bos, String eos) {
        return Optional.empty();
    }
}
