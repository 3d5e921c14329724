package io.radixkv.text;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDate;
import java.time.format.DateTimeFormatter;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Where a model directory's chat template comes from, and how its prompt is encoded. */
class ChatTemplateLoadingTest {

    static final List<ChatMessage> HI = List.of(new ChatMessage("user", "Hi"));

    /** apply_chat_template(tokenize=True): the rendered BOS text is the only BOS. */
    @Test
    void renderedPromptEncodesWithOneBos() {
        for (String name : TestData.TOKENIZERS) {
            HfTokenizer tok = TestData.tokenizer(name);
            String prompt = tok.chatTemplate().orElseThrow().render(HI, true);
            int[] ids = tok.encode(prompt, false);
            if (tok.bosTokenId().isPresent()) {
                int bos = tok.bosTokenId().getAsInt();
                assertEquals(bos, ids[0], name);
                assertEquals(1, Arrays.stream(ids).filter(i -> i == bos).count(), name + ": one BOS");
            }
            assertEquals(prompt, tok.decode(ids, false), name);
        }
        // Qwen's chat markers are single special tokens.
        HfTokenizer qwen = TestData.tokenizer("qwen3");
        int[] ids = qwen.encode(qwen.chatTemplate().orElseThrow().render(HI, true), false);
        assertArrayEquals(new int[] {151644, 872, 198, 13048, 151645, 198, 151644, 77091, 198}, ids);
    }

    @Test
    void jinjaFileOverridesTheConfigAndListsAreNamed(@TempDir Path tmp) throws IOException {
        Path dir = TestData.tinyTokenizer(tmp, "null", "{\"eos_token\": \"</s>\"}");
        ObjectNode cfg = (ObjectNode) TestData.JSON.readTree(dir.resolve("tokenizer_config.json").toFile());
        cfg.putArray("chat_template")
                .add(TestData.JSON.createObjectNode().put("name", "default").put("template", "D{{ messages[0].content }}"))
                .add(TestData.JSON.createObjectNode().put("name", "tool_use").put("template", "T{{ eos_token }}"));
        TestData.JSON.writeValue(dir.resolve("tokenizer_config.json").toFile(), cfg);
        try (HfTokenizer tok = HfTokenizer.load(dir)) {
            assertEquals("DHi", tok.chatTemplate().orElseThrow().render(HI, false));
            assertEquals("T</s>", tok.chatTemplate("tool_use").orElseThrow().render(HI, false));
            assertTrue(tok.chatTemplate("missing").isEmpty());
        }
        Files.writeString(dir.resolve("chat_template.jinja"), "J{{ messages|length }}{{ bos_token }}");
        try (HfTokenizer tok = HfTokenizer.load(dir)) {
            assertEquals("J1", tok.chatTemplate().orElseThrow().render(HI, false), "no bos_token: undefined renders empty");
        }
        cfg.remove("chat_template");
        TestData.JSON.writeValue(dir.resolve("tokenizer_config.json").toFile(), cfg);
        Files.delete(dir.resolve("chat_template.jinja"));
        try (HfTokenizer tok = HfTokenizer.load(dir)) {
            assertTrue(tok.chatTemplate().isEmpty());
        }
        Files.writeString(dir.resolve("chat_template.json"), "{\"chat_template\": \"P{{ add_generation_prompt }}\"}");
        try (HfTokenizer tok = HfTokenizer.load(dir)) {
            assertEquals("P", tok.chatTemplate().orElseThrow().render(HI, false).substring(0, 1));
        }
    }

    @Test
    void globalsAndExtraContext() {
        ChatTemplate t = ChatTemplate.of(
                "{{ bos_token }}|{{ strftime_now('%d %b %Y') }}|{{ messages | tojson }}|{{ extra }}|{{ add_generation_prompt }}",
                Map.of("bos_token", "<s>"));
        String today = LocalDate.now().format(DateTimeFormatter.ofPattern("dd MMM yyyy", Locale.US));
        String out = t.render(HI, true, Map.of("extra", "X"));
        assertTrue(out.startsWith("<s>|"), out);
        assertTrue(out.contains("|[{\"role\": \"user\", \"content\": \"Hi\"}]|X|"), out);
        String date = out.split("\\|")[1];
        assertTrue(date.equals(today) || date.equals(LocalDate.now().minusDays(1).format(DateTimeFormatter.ofPattern("dd MMM yyyy", Locale.US))), date);
    }

    /** Gemma 3 refuses roles that do not alternate, with its own message. */
    @Test
    void raiseExceptionIsAChatTemplateException() {
        ChatTemplate gemma = TestData.tokenizer("gemma3").chatTemplate().orElseThrow();
        ChatTemplateException e = assertThrows(ChatTemplateException.class,
                () -> gemma.render(List.of(new ChatMessage("assistant", "first")), true));
        assertEquals("Conversation roles must alternate user/assistant/user/assistant/...", e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> gemma.render(List.of(new ChatMessage("user", null)), true));
        ChatTemplateException syntax = assertThrows(ChatTemplateException.class,
                () -> ChatTemplate.of("{% if %}", Map.of()).render(HI, false));
        assertTrue(syntax.getMessage().startsWith("chat template failed"), syntax.getMessage());
    }
}
