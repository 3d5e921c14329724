package io.radixkv.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.radixkv.text.HfTokenizer;
import java.io.IOException;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.util.Set;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * vLLM's request options on a text model (a random-weight Llama checkpoint with the Llama 3.1
 * tokenizer): the {@code max_tokens} defaults, {@code ignore_eos}, {@code include_stop_str_in_output},
 * {@code skip_special_tokens}, chat options, {@code /tokenize}, {@code /detokenize}, {@code /version}, and
 * metrics under vLLM's {@code vllm:} prefix.
 */
class OpenAiCompatibilityTest {
    private static final int MAX_SEQ_LEN = 128;

    @TempDir
    static Path tmp;

    private static HfTokenizer tokenizer;
    private static ServerTestSupport t;

    @BeforeAll
    static void start() throws IOException {
        t = ServerTestSupport.tinyLlama(tmp.resolve("tiny-llama"), 7, b -> b.numPages(64).maxRunning(4)
                .maxSeqLen(MAX_SEQ_LEN), ServerConfig.local("tiny-llama").withMetricsPrefix("vllm")
                .withTrustRequestChatTemplate(true));
        tokenizer = t.tokenizer;
    }

    @AfterAll
    static void stop() {
        ServerTestSupport.close(t, tokenizer);
    }

    private static JsonNode post(String path, ObjectNode body) throws Exception {
        return t.postOk(path, body);
    }

    private static ObjectNode chat() {
        ObjectNode b = ServerTestSupport.JSON.createObjectNode();
        b.put("model", "tiny-llama").put("temperature", 0).put("ignore_eos", true);
        b.putArray("messages").addObject().put("role", "user").put("content", "Count to ten.");
        return b;
    }

    private static RequestParser parser() {
        return new RequestParser(TextModel.of(tokenizer, "tiny-llama", true), "tiny-llama", tokenizer.vocabSize(),
                new Admission(1, 1));
    }

    @Test
    void chatWithoutMaxTokensRunsToTheContextLimit() throws Exception {
        JsonNode j = post("/v1/chat/completions", chat());
        JsonNode u = j.get("usage");
        assertEquals("length", j.get("choices").get(0).get("finish_reason").asText(), j.toString());
        assertTrue(u.get("prompt_tokens").asInt() + u.get("completion_tokens").asInt() >= MAX_SEQ_LEN, u.toString());
        assertEquals(5, post("/v1/chat/completions", chat().put("max_completion_tokens", 5))
                .get("usage").get("completion_tokens").asInt(), "max_completion_tokens, the newer name");
        t.assertPagesConserved();
    }

    @Test
    void ignoreEosKeepsOnlyTheRequestsStopTokenIds() throws Exception {
        TextModel text = TextModel.of(tokenizer, "tiny-llama", true);
        Set<Integer> eos = tokenizer.stopTokenIds();
        assertFalse(eos.isEmpty());
        ObjectNode b = ServerTestSupport.JSON.createObjectNode().put("prompt", "hi");
        b.putArray("stop_token_ids").add(5);
        Set<Integer> normal = Generation.stopIds(text, parser().completion(b));
        assertTrue(normal.containsAll(eos) && normal.contains(5), normal.toString());
        assertEquals(Set.of(5), Generation.stopIds(text, parser().completion(b.put("ignore_eos", true))));
    }

    @Test
    void skipSpecialTokensFalseKeepsThemInTheText() {
        TextModel text = TextModel.of(tokenizer, "tiny-llama", true);
        int bos = tokenizer.bosTokenId().orElseThrow();
        ObjectNode b = ServerTestSupport.JSON.createObjectNode().put("prompt", "hi");
        ParsedRequest dflt = parser().completion(b);
        ParsedRequest keep = parser().completion(b.deepCopy().put("skip_special_tokens", false));
        assertEquals("", text.detokenizer(new int[0], dflt.output().skipSpecialTokens()).next(bos));
        assertEquals("<|begin_of_text|>", text.detokenizer(new int[0], keep.output().skipSpecialTokens()).next(bos));
    }

    @Test
    void includeStopStrInOutputKeepsTheStopString() throws Exception {
        ObjectNode b = ServerTestSupport.JSON.createObjectNode();
        b.put("model", "tiny-llama").put("prompt", "Once upon a time").put("max_tokens", 24).put("temperature", 0)
                .put("ignore_eos", true);
        String full = post("/v1/completions", b).get("choices").get(0).get("text").asText();
        assertTrue(full.length() >= 8, "need some text to cut: '" + full + "'");
        int at = full.length() / 2;
        if (Character.isLowSurrogate(full.charAt(at))) {
            at++;
        }
        String stop = full.substring(at, at + 1);
        if (Character.isHighSurrogate(stop.charAt(0))) {
            stop = full.substring(at, at + 2);
        }
        String expected = full.substring(0, full.indexOf(stop) + stop.length());
        b.put("stop", stop).put("include_stop_str_in_output", true);
        JsonNode j = post("/v1/completions", b);
        assertEquals(expected, j.get("choices").get(0).get("text").asText(), "text through the stop '" + stop + "'");
        assertEquals("stop", j.get("choices").get(0).get("finish_reason").asText());
        HttpResponse<String> s = t.post("/v1/completions", b.put("stream", true).toString());
        assertTrue(s.body().contains("\"finish_reason\":\"stop\""), s.body());
        t.assertPagesConserved();
    }

    /** The prompt text a chat request renders to. */
    private static String rendered(ObjectNode body) {
        return tokenizer.decode(parser().chat(body).prompts().getFirst(), false);
    }

    private static ObjectNode conversation(String... roleContent) {
        ObjectNode b = ServerTestSupport.JSON.createObjectNode();
        var msgs = b.putArray("messages");
        for (int i = 0; i < roleContent.length; i += 2) {
            msgs.addObject().put("role", roleContent[i]).put("content", roleContent[i + 1]);
        }
        return b;
    }

    @Test
    void addGenerationPromptAndContinueFinalMessage() throws Exception {
        String header = "<|start_header_id|>assistant<|end_header_id|>\n\n";
        ObjectNode b = conversation("user", "Name a prime.", "assistant", "Sure, the answer is");
        assertTrue(rendered(b).endsWith("<|eot_id|>" + header), "a generation prompt by default");
        assertTrue(rendered(b.deepCopy().put("add_generation_prompt", false)).endsWith("is<|eot_id|>"));
        String cont = rendered(b.deepCopy().put("continue_final_message", true));
        assertTrue(cont.endsWith(header + "Sure, the answer is"), "no end of turn, no new header: " + cont);
        HttpResponse<String> r = t.post("/v1/chat/completions", b.deepCopy().put("continue_final_message", true)
                .put("add_generation_prompt", true).toString());
        assertEquals(400, r.statusCode(), r.body());
        assertEquals("continue_final_message", ServerTestSupport.json(r).get("error").get("param").asText());
        assertEquals(200, t.post("/v1/chat/completions", b.deepCopy().put("continue_final_message", true)
                .put("add_generation_prompt", false).put("max_tokens", 2).toString()).statusCode());
    }

    @Test
    void requestChatTemplateWithKwargsAndTextPartsJoinedByNewlines() throws Exception {
        ObjectNode b = ServerTestSupport.JSON.createObjectNode();
        var parts = b.putArray("messages").addObject().put("role", "user").putArray("content");
        parts.addObject().put("type", "text").put("text", "a");
        parts.addObject().put("type", "text").put("text", "b");
        b.put("chat_template", "{% for m in messages %}[{{ m.role }}]{{ m.content }}{{ mark }}{% endfor %}");
        b.putObject("chat_template_kwargs").put("mark", "!");
        assertEquals("[user]a\nb!", rendered(b));
        var untrusting = new RequestParser(TextModel.of(tokenizer, "tiny-llama", false), "tiny-llama",
                tokenizer.vocabSize(), new Admission(1, 1));
        ApiException refused = assertThrows(ApiException.class, () -> untrusting.chat(b));
        assertEquals("chat_template", refused.param(), "without --trust-request-chat-template, as vLLM");
        HttpResponse<String> r = t.post("/v1/chat/completions", b.put("chat_template", "{% for %}").toString());
        assertEquals(400, r.statusCode(), r.body());
        assertEquals("chat_template", ServerTestSupport.json(r).get("error").get("param").asText());
    }

    private static int[] ints(JsonNode arr) {
        int[] ids = new int[arr.size()];
        for (int i = 0; i < ids.length; i++) {
            ids[i] = arr.get(i).asInt();
        }
        return ids;
    }

    @Test
    void tokenizeDetokenizeAndVersion() throws Exception {
        ObjectNode b = ServerTestSupport.JSON.createObjectNode().put("model", "tiny-llama").put("prompt", "Hello world");
        JsonNode j = post("/tokenize", b);
        int[] ids = tokenizer.encode("Hello world", true);
        assertEquals(java.util.Arrays.toString(ids), java.util.Arrays.toString(ints(j.get("tokens"))));
        assertEquals(ids.length, j.get("count").asInt());
        assertEquals(MAX_SEQ_LEN, j.get("max_model_len").asInt());
        assertEquals(ids.length - 1, post("/tokenize", b.put("add_special_tokens", false)).get("count").asInt());
        ObjectNode chat = conversation("user", "Hi");
        assertEquals(java.util.Arrays.toString(parser().chat(chat).prompts().getFirst()),
                java.util.Arrays.toString(ints(post("/tokenize", chat).get("tokens"))), "the chat prompt's ids");
        ObjectNode d = ServerTestSupport.JSON.createObjectNode();
        var arr = d.putArray("tokens");
        for (int id : ids) {
            arr.add(id);
        }
        assertEquals("<|begin_of_text|>Hello world", post("/detokenize", d).get("prompt").asText());
        arr.add(-1);
        HttpResponse<String> r = t.post("/detokenize", d.toString());
        assertEquals(400, r.statusCode(), r.body());
        assertEquals("tokens", ServerTestSupport.json(r).get("error").get("param").asText());
        HttpResponse<String> v = t.get("/version");
        assertEquals(200, v.statusCode());
        assertEquals(OpenAiServer.version(), ServerTestSupport.json(v).get("version").asText());
    }

    @Test
    void metricsScrapeAsVllmNames() throws Exception {
        post("/v1/completions", ServerTestSupport.JSON.createObjectNode().put("prompt", "Hi").put("max_tokens", 2));
        String text = t.get("/metrics").body();
        assertFalse(text.contains("radixkv:"), text);
        for (String name : java.util.List.of("vllm:num_requests_running{", "vllm:prompt_tokens_total{",
                "vllm:time_to_first_token_seconds_bucket{", "vllm:kv_cache_usage_perc{")) {
            assertTrue(text.contains(name), name + " in\n" + text);
        }
        double usage = text.lines().filter(l -> l.startsWith("vllm:kv_cache_usage_perc{"))
                .mapToDouble(l -> Double.parseDouble(l.substring(l.lastIndexOf(' ') + 1))).findFirst().orElseThrow();
        assertTrue(usage >= 0 && usage <= 1, "a fraction: " + usage);
        assertThrows(IllegalArgumentException.class, () -> ServerConfig.local("m").withMetricsPrefix("vllm:x"));
    }
}
