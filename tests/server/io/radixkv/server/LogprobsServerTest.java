package io.radixkv.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.radixkv.engine.EngineConfig;
import io.radixkv.engine.GenerateRequest;
import io.radixkv.engine.TokenLogprob;
import io.radixkv.model.SamplingParams;
import io.radixkv.text.HfTokenizer;
import java.io.IOException;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Log-probabilities through the server in OpenAI's and vLLM's shapes (completions {@code logprobs}
 * and {@code echo}, chat {@code logprobs} / {@code top_logprobs}, streamed and not), against a
 * reference computed here: a double-precision log-softmax of the engine's raw logits (its logits
 * probe), teacher-forced for prompt positions (the prompt's prefix run as its own request). The
 * requests lm-eval sends (loglikelihood: {@code echo}, {@code logprobs: 1}, {@code max_tokens} 0
 * and 1; rolling loglikelihood: several token-id windows) are checked the same way.
 */
class LogprobsServerTest {
    private static final double TOL = 1e-4;

    @TempDir
    static Path tmp;

    private static HfTokenizer tokenizer;
    private static ServerTestSupport t;
    /** Raw logits by "requestId#outputIndex", from the engine's probe. */
    private static final Map<String, float[]> PROBE = new ConcurrentHashMap<>();
    private static final AtomicInteger REFS = new AtomicInteger();

    @BeforeAll
    static void start() throws IOException {
        Path model = TinyLlamaCheckpoint.withTokenizer(tmp.resolve("tiny-llama"), "llama3_1", 7);
        tokenizer = HfTokenizer.load(model);
        EngineConfig ec = EngineConfig.builder().model(model.toString()).backend("cpu").numPages(256)
                .maxRunning(8).maxBatchTokens(256).maxSeqLen(1024).build();
        t = new ServerTestSupport(ec, tokenizer, ServerConfig.local("tiny-llama"));
        t.engine.setLogitsProbe((id, index, logits) -> PROBE.put(id + "#" + index, logits));
    }

    @AfterAll
    static void stop() {
        ServerTestSupport.close(t, tokenizer);
    }

    @BeforeEach
    void clearProbe() {
        PROBE.clear();
    }

    private static double[] logSoftmax(float[] logits) {
        double max = Double.NEGATIVE_INFINITY;
        for (float l : logits) {
            max = Math.max(max, l);
        }
        double sum = 0;
        for (float l : logits) {
            sum += Math.exp(l - max);
        }
        double lse = max + Math.log(sum);
        double[] out = new double[logits.length];
        for (int i = 0; i < logits.length; i++) {
            out[i] = logits[i] - lse;
        }
        return out;
    }

    /** The reference log-softmax after {@code tokens[0..pos]}: that prefix run as its own request. */
    private static double[] teacherForced(int[] tokens, int pos) {
        String id = "ref-" + REFS.incrementAndGet();
        t.engine.submit(new GenerateRequest(id, Arrays.copyOf(tokens, pos + 1), SamplingParams.greedy(1)))
                .result().join();
        return logSoftmax(PROBE.get(id + "#0"));
    }

    /** The reference log-softmax rows of the one server request just run, by output index. */
    private static List<double[]> generatedRows(int n) {
        List<double[]> rows = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            int index = i;
            float[] l = PROBE.entrySet().stream().filter(e -> e.getKey().startsWith("cmpl")
                    && e.getKey().endsWith("#" + index)).map(Map.Entry::getValue).findFirst().orElseThrow();
            rows.add(logSoftmax(l));
        }
        return rows;
    }

    private static int[] prompt(int n, int seed) {
        int[] p = new int[n];
        for (int i = 0; i < n; i++) {
            p[i] = 1000 + (seed * 7919 + i * 104729) % 60000;
        }
        return p;
    }

    private static ObjectNode completion(int[] prompt, int maxTokens) {
        ObjectNode b = ServerTestSupport.JSON.createObjectNode();
        b.put("model", "tiny-llama").put("max_tokens", maxTokens).put("temperature", 0).put("ignore_eos", true);
        ArrayNode p = b.putArray("prompt");
        Arrays.stream(prompt).forEach(p::add);
        return b;
    }

    private static JsonNode postOk(String path, ObjectNode body) throws Exception {
        HttpResponse<String> r = t.post(path, body.toString());
        assertEquals(200, r.statusCode(), r.body());
        assertNoNonFinite(r.body());
        return ServerTestSupport.json(r);
    }

    private static void assertNoNonFinite(String body) {
        assertFalse(body.contains("Infinity") || body.contains("NaN"), "non-finite number in " + body);
    }

    /** The values of a top_logprobs map: the reference's chosen value and its k most probable. */
    private static void assertTopMap(JsonNode top, double[] ref, int chosen, int k, String what) {
        double[] sorted = Arrays.stream(ref).sorted().toArray();
        List<Double> values = new ArrayList<>();
        top.properties().forEach(e -> values.add(e.getValue().asDouble()));
        assertTrue(values.size() >= k && values.size() <= k + 1, what + ": " + top);
        assertTrue(values.stream().anyMatch(v -> Math.abs(v - ref[chosen]) <= TOL), what + ": chosen missing " + top);
        for (int j = 0; j < k; j++) {
            double want = sorted[sorted.length - 1 - j];
            assertTrue(values.stream().anyMatch(v -> Math.abs(v - want) <= TOL), what + ": top " + j + " " + want
                    + " missing from " + top);
        }
        // the chosen token's text is a key holding its value
        assertEquals(ref[chosen], top.get(tokenizer.decode(new int[] {chosen}, false)).asDouble(), TOL, what);
    }

    private static void assertTextOffsets(JsonNode lp, int start) {
        int at = start;
        for (int i = 0; i < lp.get("tokens").size(); i++) {
            assertEquals(at, lp.get("text_offset").get(i).asInt(), "text_offset " + i);
            String tok = lp.get("tokens").get(i).asText();
            at += tok.codePointCount(0, tok.length());
        }
    }

    @Test
    void completionLogprobsAreTheRawLogitsLogSoftmax() throws Exception {
        int[] prompt = prompt(9, 1);
        ObjectNode body = completion(prompt, 4).put("logprobs", 3).put("temperature", 0.9).put("seed", 5);
        JsonNode c = postOk("/v1/completions", body).get("choices").get(0);
        JsonNode lp = c.get("logprobs");
        List<double[]> ref = generatedRows(4);
        JsonNode ids = c.get("token_ids");
        assertEquals(4, lp.get("tokens").size());
        for (int i = 0; i < 4; i++) {
            int id = ids.get(i).asInt();
            assertEquals(tokenizer.decode(new int[] {id}, false), lp.get("tokens").get(i).asText());
            assertEquals(ref.get(i)[id], lp.get("token_logprobs").get(i).asDouble(), TOL, "token " + i);
            assertTopMap(lp.get("top_logprobs").get(i), ref.get(i), id, 3, "token " + i);
        }
        assertTextOffsets(lp, 0);
        // logprobs 0: the chosen token only
        JsonNode zero = postOk("/v1/completions", completion(prompt, 2).put("logprobs", 0)).get("choices").get(0);
        assertEquals(1, zero.get("logprobs").get("top_logprobs").get(0).size());
        // without logprobs: null
        assertTrue(postOk("/v1/completions", completion(prompt, 1)).get("choices").get(0).get("logprobs").isNull());
    }

    /** lm-eval's loglikelihood request: echo, logprobs 1, max_tokens 0 (the prompt alone) and 1. */
    @Test
    void echoGivesTeacherForcedPromptLogprobs() throws Exception {
        int[] prompt = prompt(10, 2);
        JsonNode r0 = postOk("/v1/completions", completion(prompt, 0).put("echo", true).put("logprobs", 1));
        JsonNode c0 = r0.get("choices").get(0);
        JsonNode lp = c0.get("logprobs");
        assertEquals(prompt.length, lp.get("tokens").size());
        assertTrue(lp.get("token_logprobs").get(0).isNull() && lp.get("top_logprobs").get(0).isNull(),
                "the first prompt token has no log-probability");
        for (int j = 1; j < prompt.length; j++) {
            double[] ref = teacherForced(prompt, j - 1);
            assertEquals(ref[prompt[j]], lp.get("token_logprobs").get(j).asDouble(), TOL, "prompt token " + j);
            assertTopMap(lp.get("top_logprobs").get(j), ref, prompt[j], 1, "prompt token " + j);
        }
        assertTextOffsets(lp, 0);
        assertEquals(tokenizer.decode(prompt, true), c0.get("text").asText());
        assertEquals("length", c0.get("finish_reason").asText());
        assertEquals(0, r0.get("usage").get("completion_tokens").asInt());
        assertEquals(0, c0.get("token_ids").size());

        // max_tokens 1: the same prompt entries, then the generated token's
        PROBE.clear();
        JsonNode c1 = postOk("/v1/completions", completion(prompt, 1).put("echo", true).put("logprobs", 1))
                .get("choices").get(0);
        JsonNode lp1 = c1.get("logprobs");
        assertEquals(prompt.length + 1, lp1.get("tokens").size());
        for (int j = 1; j < prompt.length; j++) {
            assertEquals(lp.get("token_logprobs").get(j).asDouble(), lp1.get("token_logprobs").get(j).asDouble(), TOL);
        }
        int gen = c1.get("token_ids").get(0).asInt();
        assertEquals(generatedRows(1).get(0)[gen], lp1.get("token_logprobs").get(prompt.length).asDouble(), TOL);
        assertTrue(c1.get("text").asText().startsWith(c0.get("text").asText()));
        // lm-eval's is_greedy: the greedy token's value is the largest in its map
        JsonNode last = lp1.get("top_logprobs").get(prompt.length);
        double best = Double.NEGATIVE_INFINITY;
        for (JsonNode v : last) {
            best = Math.max(best, v.asDouble());
        }
        assertEquals(best, lp1.get("token_logprobs").get(prompt.length).asDouble());
    }

    /** lm-eval's rolling loglikelihood: several token-id windows in one request, echo, max_tokens 0. */
    @Test
    void rollingWindowsEachGetTheirPromptLogprobs() throws Exception {
        int[][] windows = {prompt(6, 3), prompt(8, 4)};
        ObjectNode body = completion(new int[0], 0).put("echo", true).put("logprobs", 1);
        ArrayNode p = body.putArray("prompt");
        for (int[] w : windows) {
            ArrayNode a = p.addArray();
            Arrays.stream(w).forEach(a::add);
        }
        JsonNode choices = postOk("/v1/completions", body).get("choices");
        assertEquals(2, choices.size());
        for (int i = 0; i < windows.length; i++) {
            JsonNode tl = choices.get(i).get("logprobs").get("token_logprobs");
            assertEquals(windows[i].length, tl.size());
            assertTrue(tl.get(0).isNull());
            for (int j = 1; j < windows[i].length; j++) {
                assertEquals(teacherForced(windows[i], j - 1)[windows[i][j]], tl.get(j).asDouble(), TOL,
                        "window " + i + " token " + j);
            }
        }
    }

    @Test
    void echoOfATextPromptReturnsItsText() throws Exception {
        ObjectNode b = ServerTestSupport.JSON.createObjectNode();
        b.put("model", "tiny-llama").put("prompt", "The capital of France is").put("max_tokens", 2)
                .put("temperature", 0).put("echo", true);
        JsonNode c = postOk("/v1/completions", b).get("choices").get(0);
        assertTrue(c.get("text").asText().startsWith("The capital of France is"), c.toString());
        assertTrue(c.get("logprobs").isNull());
    }

    @Test
    void streamedChunksCarryTheSameLogprobs() throws Exception {
        int[] prompt = prompt(7, 5);
        ObjectNode body = completion(prompt, 3).put("echo", true).put("logprobs", 2);
        JsonNode whole = postOk("/v1/completions", body).get("choices").get(0);
        HttpResponse<String> r = t.post("/v1/completions", body.deepCopy().put("stream", true).toString());
        assertEquals(200, r.statusCode());
        assertNoNonFinite(r.body());
        List<JsonNode> tokens = new ArrayList<>();
        List<JsonNode> values = new ArrayList<>();
        StringBuilder text = new StringBuilder();
        for (JsonNode e : ServerTestSupport.sseEvents(r.body())) {
            JsonNode ch = e.get("choices").isEmpty() ? null : e.get("choices").get(0);
            if (ch == null || ch.get("logprobs").isNull()) {
                continue;
            }
            JsonNode lp = ch.get("logprobs");
            assertTextOffsets(lp, text.codePointCount(0, text.length()));
            lp.get("tokens").forEach(tokens::add);
            lp.get("token_logprobs").forEach(values::add);
            text.append(ch.get("text").asText());
        }
        assertEquals(whole.get("text").asText(), text.toString());
        assertEquals(whole.get("logprobs").get("tokens").size(), tokens.size());
        for (int i = 0; i < tokens.size(); i++) {
            assertEquals(whole.get("logprobs").get("tokens").get(i), tokens.get(i));
            JsonNode w = whole.get("logprobs").get("token_logprobs").get(i);
            assertEquals(w.isNull(), values.get(i).isNull(), "token " + i);
            assertEquals(w.asDouble(), values.get(i).asDouble(), TOL, "token " + i);
        }
    }

    private static ObjectNode chat(int maxTokens) {
        ObjectNode b = ServerTestSupport.JSON.createObjectNode();
        b.put("model", "tiny-llama").put("max_tokens", maxTokens).put("temperature", 0).put("ignore_eos", true)
                .put("logprobs", true).put("top_logprobs", 2);
        b.putArray("messages").addObject().put("role", "user").put("content", "Name a prime number.");
        return b;
    }

    @Test
    void chatLogprobsContent() throws Exception {
        JsonNode c = postOk("/v1/chat/completions", chat(3)).get("choices").get(0);
        JsonNode content = c.get("logprobs").get("content");
        List<double[]> ref = PROBE.entrySet().stream().filter(e -> e.getKey().startsWith("chatcmpl"))
                .sorted(Map.Entry.comparingByKey()).map(e -> logSoftmax(e.getValue())).toList();
        assertEquals(3, content.size());
        assertEquals(3, ref.size());
        for (int i = 0; i < 3; i++) {
            JsonNode e = content.get(i);
            String tok = e.get("token").asText();
            byte[] bytes = tok.getBytes(StandardCharsets.UTF_8);
            assertEquals(bytes.length, e.get("bytes").size());
            for (int b = 0; b < bytes.length; b++) {
                assertEquals(bytes[b] & 0xff, e.get("bytes").get(b).asInt());
            }
            double[] r = ref.get(i);
            double[] sorted = Arrays.stream(r).sorted().toArray();
            assertEquals(2, e.get("top_logprobs").size());
            for (int j = 0; j < 2; j++) {
                assertEquals(sorted[sorted.length - 1 - j], e.get("top_logprobs").get(j).get("logprob").asDouble(), TOL);
            }
            // greedy: the chosen token is the most probable
            assertEquals(sorted[sorted.length - 1], e.get("logprob").asDouble(), TOL);
        }

        HttpResponse<String> s = t.post("/v1/chat/completions", chat(3).put("stream", true).toString());
        assertNoNonFinite(s.body());
        List<JsonNode> streamed = new ArrayList<>();
        for (JsonNode ev : ServerTestSupport.sseEvents(s.body())) {
            JsonNode lp = ev.get("choices").get(0).get("logprobs");
            if (lp != null && !lp.isNull()) {
                lp.get("content").forEach(streamed::add);
            }
        }
        assertEquals(content.size(), streamed.size());
        for (int i = 0; i < streamed.size(); i++) {
            assertEquals(content.get(i), streamed.get(i), "streamed entry " + i);
        }
    }

    @Test
    void officialOpenAiClientReadsLogprobs() throws Exception {
        Path clientDir = Path.of(System.getProperty("radixkv.openai.client", "build/openai-client"));
        assertTrue(Files.isRegularFile(clientDir.resolve("node_modules/openai/package.json")),
                "the test build installs the openai package (scripts/fetch-openai-client) into " + clientDir);
        Path script = clientDir.resolve("logprobs.mjs"); // ESM resolves 'openai' from the script's directory
        java.net.URL src = LogprobsServerTest.class.getResource("/openai-client/logprobs.mjs");
        assertTrue(src != null, "logprobs.mjs is a test resource");
        Files.copy(Path.of(src.toURI()), script, StandardCopyOption.REPLACE_EXISTING);
        Process p = new ProcessBuilder("node", script.toString(), t.server.baseUri().toString(), "tiny-llama").start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        String err = new String(p.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(120, TimeUnit.SECONDS), "node finished");
        assertEquals(0, p.exitValue(), "node failed: " + err + out);
        JsonNode r = ServerTestSupport.JSON.readTree(out);

        ObjectNode b = ServerTestSupport.JSON.createObjectNode();
        b.put("model", "tiny-llama").put("prompt", "The capital of France is").put("max_tokens", 0)
                .put("temperature", 0).put("echo", true).put("logprobs", 1);
        JsonNode ours = postOk("/v1/completions", b).get("choices").get(0);
        assertEquals(ours.get("text"), r.get("completion").get("text"));
        assertEquals(ours.get("logprobs"), r.get("completion").get("logprobs"), "what the client read");
        assertTrue(r.get("completion").get("logprobs").get("token_logprobs").get(0).isNull());
        assertEquals(0, r.get("completion").get("usage").get("completion_tokens").asInt());

        JsonNode chat = postOk("/v1/chat/completions", chat(3)).get("choices").get(0);
        assertEquals(chat.get("logprobs"), r.get("chat").get("logprobs"));
        assertEquals(3, r.get("chat").get("logprobs").get("content").size());
        assertEquals(chat.get("logprobs").get("content"), r.get("stream").get("content"), "the client's streamed entries");
    }

    @Test
    void badLogprobFieldsAre400NamingThem() throws Exception {
        String chat = "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]";
        String[][] cases = {
            {"/v1/completions", "{\"prompt\":[1],\"logprobs\":21}", "logprobs"},
            {"/v1/completions", "{\"prompt\":[1],\"logprobs\":-1}", "logprobs"},
            {"/v1/completions", "{\"prompt\":[1],\"logprobs\":true}", "logprobs"},
            {"/v1/completions", "{\"prompt\":[1],\"max_tokens\":0}", "max_tokens"},
            {"/v1/completions", "{\"prompt\":[1],\"top_logprobs\":2}", "top_logprobs"},
            {"/v1/chat/completions", "{" + chat + ",\"top_logprobs\":2}", "top_logprobs"},
            {"/v1/chat/completions", "{" + chat + ",\"logprobs\":true,\"top_logprobs\":21}", "top_logprobs"},
            {"/v1/chat/completions", "{" + chat + ",\"logprobs\":1}", "logprobs"},
            {"/v1/chat/completions", "{" + chat + ",\"echo\":true}", "echo"},
        };
        for (String[] c : cases) {
            HttpResponse<String> r = t.post(c[0], c[1]);
            assertEquals(400, r.statusCode(), c[1] + ": " + r.body());
            assertEquals(c[2], ServerTestSupport.json(r).get("error").get("param").asText(), c[1]);
        }
    }

    @Test
    void nonFiniteValuesAreWrittenAsTheFloor() throws Exception {
        LogprobsFormat f = new LogprobsFormat(ServerTestSupport.JSON, TextModel.none("m"));
        TokenLogprob lp = new TokenLogprob(3, Double.NEGATIVE_INFINITY, new int[] {1, 3},
                new double[] {-0.5, Double.NaN});
        ParsedRequest pr = new ParsedRequest(false, List.of(new int[] {1, 3}), 1, 0f, 1f, 0, List.of(), List.of(),
                false, false, io.radixkv.cache.Namespace.DEFAULT, new ParsedRequest.Output(false, false, true),
                SamplingFields.NONE, new LogprobsRequest(2, true, false), null, ChatOutput.PLAIN);
        JsonNode out = f.choice(pr, new int[] {1, 3}, List.of(lp), new int[] {3}, List.of(lp), 0);
        String s = ServerTestSupport.JSON.writeValueAsString(out);
        assertNoNonFinite(s);
        assertEquals(LogprobsFormat.FLOOR, out.get("token_logprobs").get(1).asDouble());
        assertEquals(LogprobsFormat.FLOOR, out.get("top_logprobs").get(2).get("token_id:3").asDouble());
        assertEquals(-0.5, out.get("top_logprobs").get(2).get("token_id:1").asDouble());
        assertEquals("token_id:3", out.get("tokens").get(2).asText());
    }
}
