package io.radixkv.text;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The real chat templates of Llama 3.1, Qwen3 and Gemma 3 render byte-identical text to
 * Python's Jinja2 in transformers' environment (expected files written by
 * scripts/text/gen-chat-renderings.py from chat/cases.json).
 */
class ChatTemplateTest {

    @ParameterizedTest
    @ValueSource(strings = {"llama3_1", "qwen3", "gemma3"})
    void rendersAsTransformers(String name) {
        ChatTemplate template = TestData.tokenizer(name).chatTemplate().orElseThrow();
        int checked = 0;
        List<String> failures = new ArrayList<>();
        for (JsonNode c : TestData.resource("chat/cases.json")) {
            String caseName = c.get("name").asText();
            List<ChatMessage> messages = new ArrayList<>();
            c.get("messages").forEach(m -> messages.add(new ChatMessage(m.get("role").asText(), m.get("content").asText())));
            Map<String, Object> extra = c.has("extra")
                    ? TestData.JSON.convertValue(c.get("extra"), TestData.JSON.getTypeFactory().constructMapType(Map.class, String.class, Object.class))
                    : Map.of();
            boolean agp = c.get("add_generation_prompt").asBoolean();
            String expected = text("chat/" + name + "/" + caseName + ".txt");
            String error = text("chat/" + name + "/" + caseName + ".error");
            assertTrue(expected != null || error != null, "no expectation for " + name + "/" + caseName);
            if (expected != null) {
                String got;
                try {
                    got = template.render(messages, agp, extra);
                } catch (RuntimeException e) {
                    failures.add(caseName + ": threw " + e);
                    continue;
                }
                if (!expected.equals(got)) {
                    failures.add(caseName + ":\n--- expected\n" + expected + "\n--- got\n" + got + "\n---");
                }
            } else {
                ChatTemplateException e = assertThrows(ChatTemplateException.class, () -> template.render(messages, agp, extra),
                        name + "/" + caseName);
                assertEquals(error, e.getMessage(), name + "/" + caseName);
            }
            checked++;
        }
        assertEquals(List.of(), failures, name);
        assertTrue(checked >= 20, "checked " + checked);
    }

    /**
     * Small templates exercising the Python behaviour the real templates rely on (str
     * methods, unicode whitespace, tojson's layout, namespace, slices, tests, loop variables,
     * whitespace control, raise_exception) against Jinja2's output; and message content is
     * data, never template code.
     */
    @org.junit.jupiter.api.Test
    void snippetsRenderAsJinja2() {
        JsonNode data = TestData.resource("chat/snippets.json");
        List<ChatMessage> messages = new ArrayList<>();
        data.get("messages").forEach(m -> messages.add(new ChatMessage(m.get("role").asText(), m.get("content").asText())));
        List<String> failures = new ArrayList<>();
        for (JsonNode snippet : data.get("snippets")) {
            String name = snippet.get("name").asText();
            ChatTemplate template = ChatTemplate.of(snippet.get("template").asText(), Map.of());
            String expected = text("chat/snippets/" + name + ".txt");
            String error = text("chat/snippets/" + name + ".error");
            String got;
            try {
                got = template.render(messages, false);
            } catch (ChatTemplateException e) {
                got = "ERROR " + e.getMessage();
            }
            String want = expected != null ? expected : "ERROR " + error;
            if (!want.equals(got)) {
                failures.add(name + ":\n--- expected\n" + want + "\n--- got\n" + got + "\n---");
            }
        }
        assertEquals(List.of(), failures);
    }

    static String text(String resource) {
        try (InputStream in = ChatTemplateTest.class.getResourceAsStream(resource)) {
            return in == null ? null : new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

}
