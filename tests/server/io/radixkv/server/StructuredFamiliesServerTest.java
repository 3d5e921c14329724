package io.radixkv.server;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.JsonNode;
import io.radixkv.engine.EngineConfig;
import io.radixkv.text.HfTokenizer;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The official OpenAI client against {@code radixkv serve} for each model family's real tokenizer
 * and chat template (Llama 3.1 with {@code llama3_json}, Qwen3 with {@code hermes}, Gemma 3 with
 * {@code pythonic}), on random-weight checkpoints: chat completions with {@code response_format}
 * json_schema and with tools under {@code tool_choice} "required" and a named function, streamed
 * and not, always give output that validates against the schema, and a stream reassembles to the
 * non-streamed response of the same seed.
 */
class StructuredFamiliesServerTest {
    @TempDir
    static Path tmp;

    @Test
    void llama3() throws Exception {
        check("llama3_1", "llama3_json");
    }

    @Test
    void qwen3() throws Exception {
        check("qwen3", "hermes");
    }

    @Test
    void gemma3() throws Exception {
        check("gemma3", "pythonic");
    }

    private static void check(String family, String toolParser) throws Exception {
        Path model = TinyLlamaCheckpoint.withTokenizer(tmp.resolve(family), family, 13);
        HfTokenizer tokenizer = HfTokenizer.load(model);
        EngineConfig ec = EngineConfig.builder().model(model.toString()).backend("cpu").numPages(256)
                .maxRunning(4).maxBatchTokens(512).maxSeqLen(2048).build();
        ServerTestSupport t = new ServerTestSupport(ec, tokenizer, ServerConfig.local(family)
                .withChatOutput(new ChatOutputConfig(toolParser, true, false, null)));
        try {
            JsonNode r = t.runOpenAiClient("structured.mjs", family);
            String out = family + ": " + r;
            for (JsonNode pair : r.get("responseFormat")) {
                assertEquals(pair.get("whole").get("content").asText(), pair.get("stream").get("content").asText(), out);
                StructuredOutputsServerTest.checkAnswer(pair.get("whole").get("content").asText());
                assertEquals(0, pair.get("whole").get("calls").size(), out);
            }
            for (String mode : new String[] {"required", "named"}) {
                for (JsonNode pair : r.get(mode)) {
                    JsonNode whole = pair.get("whole").get("calls");
                    JsonNode streamed = pair.get("stream").get("calls");
                    assertEquals(1, whole.size(), out);
                    assertEquals(1, streamed.size(), out);
                    ToolCallingServerTest.assertValidCall(whole.get(0));
                    if (mode.equals("named")) {
                        assertEquals("set_mode", whole.get(0).get("function").get("name").asText(), out);
                    }
                    assertEquals(whole.get(0).get("function"), streamed.get(0).get("function"), out);
                    assertEquals(mode.equals("required") ? "tool_calls" : "stop", pair.get("whole").get("finish").asText(), out);
                    assertEquals(pair.get("whole").get("finish"), pair.get("stream").get("finish"), out);
                }
            }
        } finally {
            ServerTestSupport.close(t, tokenizer);
        }
    }
}
