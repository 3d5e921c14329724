package io.radixkv.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.BufferedReader;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The server on the tiny preset (token-id prompts): models/health/metrics, cached tokens,
 * cache_salt isolation, error statuses, client disconnect, 50 concurrent streams.
 */
class ServerBehaviourTest {
    private static ServerTestSupport t;

    @BeforeAll
    static void start() {
        t = ServerTestSupport.tinyPreset(512, 16, 64);
    }

    @AfterAll
    static void stop() {
        t.close();
    }

    private static String prompt(int start, int n) {
        return IntStream.range(start, start + n).mapToObj(Integer::toString).collect(Collectors.joining(",", "[", "]"));
    }

    private static JsonNode complete(String body) throws Exception {
        HttpResponse<String> r = t.post("/v1/completions", body);
        assertEquals(200, r.statusCode(), r.body());
        return ServerTestSupport.json(r);
    }

    private static int cached(JsonNode j) {
        return j.get("usage").get("prompt_tokens_details").get("cached_tokens").asInt();
    }

    /** An error in OpenAI's shape with the status, naming {@code param} (null: not checked). */
    private static JsonNode assertError(HttpResponse<String> r, int status, String param) throws Exception {
        assertEquals(status, r.statusCode(), r.body());
        assertTrue(r.headers().firstValue("content-type").orElse("").startsWith("application/json"));
        JsonNode e = ServerTestSupport.json(r).get("error");
        assertTrue(e != null && e.get("message").isTextual() && e.has("type") && e.has("param"), r.body());
        assertEquals(status, e.get("code").asInt());
        if (param != null) {
            assertEquals(param, e.get("param").asText(), r.body());
        }
        return e;
    }

    @Test
    void modelsHealthAndMetrics() throws Exception {
        HttpResponse<String> m = t.get("/v1/models");
        assertEquals(200, m.statusCode());
        JsonNode models = ServerTestSupport.json(m);
        assertEquals("list", models.get("object").asText());
        assertEquals("tiny", models.get("data").get(0).get("id").asText());
        assertEquals("model", models.get("data").get(0).get("object").asText());
        assertEquals(200, t.get("/health").statusCode());

        complete("{\"prompt\":" + prompt(300, 20) + ",\"max_tokens\":4,\"temperature\":0}");
        HttpResponse<String> r = t.get("/metrics");
        assertEquals(200, r.statusCode());
        assertTrue(r.headers().firstValue("content-type").orElse("").startsWith("text/plain"));
        String text = r.body();
        for (String name : List.of("radixkv:prefix_cache_queries_total", "radixkv:prefix_cache_hits_total",
                "radixkv:num_requests_running", "radixkv:num_requests_waiting", "radixkv:kv_pages_used",
                "radixkv:kv_pages_free", "radixkv:kv_pages_cached", "radixkv:num_preemptions_total",
                "radixkv:kv_pages_evicted_total", "radixkv:time_to_first_token_seconds_bucket",
                "radixkv:inter_token_latency_seconds_bucket", "radixkv:e2e_request_latency_seconds_bucket",
                "radixkv:prompt_tokens_total", "radixkv:generation_tokens_total")) {
            assertTrue(text.contains(name + "{"), "metric " + name + " in\n" + text);
        }
        assertTrue(metric(text, "radixkv:prompt_tokens_total") >= 20);
        assertTrue(metric(text, "radixkv:generation_tokens_total") >= 4);
        assertEquals(metric(text, "radixkv:kv_pages_total"), metric(text, "radixkv:kv_pages_free")
                + metric(text, "radixkv:kv_pages_cached") + metric(text, "radixkv:kv_pages_used"));
    }

    /**
     * A metric's value summed over its label sets; {@code name} may end in a partial label set
     * ({@code name{label="v"}) to select samples.
     */
    static double metric(String text, String name) {
        String head = name.contains("{") ? Pattern.quote(name) : Pattern.quote(name) + "\\{";
        Matcher m = Pattern.compile("(?m)^" + head + "[^}]*\\} (\\S+)$").matcher(text);
        double sum = 0;
        boolean found = false;
        while (m.find()) {
            sum += Double.parseDouble(m.group(1));
            found = true;
        }
        assertTrue(found, "no sample of " + name);
        return sum;
    }

    @Test
    void accessLogLinePerRequest() throws Exception {
        JsonNode j = complete("{\"prompt\":" + prompt(700, 12) + ",\"max_tokens\":3}");
        String id = j.get("id").asText();
        // the line is written when the exchange completes, which can trail the client's read of the body
        List<String> lines = ServerTestSupport.accessLines(l -> l.startsWith(id + " "));
        assertEquals(1, lines.size(), "one access line for " + id);
        String line = lines.get(0);
        assertTrue(line.matches(Pattern.quote(id) + " /v1/completions status=200 prompt_tokens=12 completion_tokens=3 "
                + "cached_tokens=0 ttft_ms=[0-9.]+ duration_ms=[0-9.]+"), line);
        HttpResponse<String> bad = t.post("/v1/completions", "{\"prompt\":[1],\"n\":0}");
        assertEquals(400, bad.statusCode());
        assertTrue(!ServerTestSupport.accessLines(l -> l.contains("status=400")).isEmpty(), "refused requests are logged too");
    }

    @Test
    void repeatedPromptReportsCachedTokens() throws Exception {
        String body = "{\"prompt\":" + prompt(1000, 70) + ",\"max_tokens\":3,\"temperature\":0}";
        String before = t.get("/metrics").body();
        JsonNode first = complete(body);
        JsonNode second = complete(body);
        assertEquals(0, cached(first), "a cold prompt has no cached tokens");
        int hit = cached(second);
        assertTrue(hit >= 48 && hit < 70 && hit % 16 == 0, "the repeat reuses the prompt's full pages, got " + hit);
        assertEquals(first.get("choices").get(0).get("token_ids"), second.get("choices").get(0).get("token_ids"),
                "greedy output is the same with cached KV");
        String after = t.get("/metrics").body();
        assertEquals(hit, metric(after, "radixkv:prefix_cache_hits_total")
                - metric(before, "radixkv:prefix_cache_hits_total"), 1e-9);
        assertEquals(140, metric(after, "radixkv:prefix_cache_queries_total")
                - metric(before, "radixkv:prefix_cache_queries_total"), 1e-9);
    }

    @Test
    void cacheSaltIsolatesTenants() throws Exception {
        String p = "\"prompt\":" + prompt(2000, 50) + ",\"max_tokens\":2,\"temperature\":0";
        assertEquals(0, cached(complete("{" + p + "}")));
        assertEquals(0, cached(complete("{" + p + ",\"cache_salt\":\"tenant-a\"}")), "no hit across salts");
        assertTrue(cached(complete("{" + p + ",\"cache_salt\":\"tenant-a\"}")) > 0, "hit within one salt");
        assertEquals(0, cached(complete("{" + p + ",\"cache_salt\":\"tenant-b\"}")), "no hit across salts");
        assertTrue(cached(complete("{" + p + "}")) > 0, "the unsalted namespace still hits");
    }

    @Test
    void stopTokenIdsEndWithStop() throws Exception {
        JsonNode free = complete("{\"prompt\":" + prompt(40, 10) + ",\"max_tokens\":6,\"temperature\":0}");
        int third = free.get("choices").get(0).get("token_ids").get(2).asInt();
        JsonNode j = complete("{\"prompt\":" + prompt(40, 10) + ",\"max_tokens\":6,\"temperature\":0,"
                + "\"stop_token_ids\":[" + third + "]}");
        JsonNode c = j.get("choices").get(0);
        assertEquals("stop", c.get("finish_reason").asText());
        // The two runs may batch beside other requests differently, so their greedy tokens are not
        // compared; the stop id ends generation, is left out of the output and counted in usage.
        int n = c.get("token_ids").size();
        assertTrue(n < 6, "ended before max_tokens: " + c);
        for (JsonNode t : c.get("token_ids")) {
            assertTrue(t.asInt() != third, "the stop id is not in the output: " + c);
        }
        assertEquals(n + 1, j.get("usage").get("completion_tokens").asInt(), "the stop token is counted");
    }

    @Test
    void batchOfPromptsGivesOneChoiceEach() throws Exception {
        JsonNode j = complete("{\"prompt\":[" + prompt(5, 4) + "," + prompt(9, 6) + "],\"max_tokens\":3,"
                + "\"temperature\":0}");
        assertEquals(2, j.get("choices").size());
        assertEquals(1, j.get("choices").get(1).get("index").asInt());
        assertEquals(10, j.get("usage").get("prompt_tokens").asInt());
        assertEquals(6, j.get("usage").get("completion_tokens").asInt());
    }

    @Test
    void streamedBatchInterleavesChoices() throws Exception {
        String prompts = "[" + prompt(3000, 5) + "," + prompt(3100, 7) + "," + prompt(3200, 9) + "]";
        JsonNode plain = complete("{\"prompt\":" + prompts + ",\"max_tokens\":5,\"temperature\":0}");
        HttpResponse<String> r = t.post("/v1/completions", "{\"prompt\":" + prompts
                + ",\"max_tokens\":5,\"temperature\":0,\"stream\":true,\"stream_options\":{\"include_usage\":true}}");
        assertEquals(200, r.statusCode(), r.body());
        List<List<Integer>> tokens = List.of(new ArrayList<>(), new ArrayList<>(), new ArrayList<>());
        int finished = 0;
        List<JsonNode> events = ServerTestSupport.sseEvents(r.body());
        for (JsonNode e : events) {
            for (JsonNode c : e.get("choices")) {
                int i = c.get("index").asInt();
                if (c.has("token_ids")) {
                    c.get("token_ids").forEach(n -> tokens.get(i).add(n.asInt()));
                }
                finished += c.get("finish_reason").isNull() ? 0 : 1;
            }
        }
        assertEquals(3, finished, "one finishing chunk per choice");
        for (int i = 0; i < 3; i++) {
            List<Integer> expected = new ArrayList<>();
            plain.get("choices").get(i).get("token_ids").forEach(n -> expected.add(n.asInt()));
            assertEquals(expected, tokens.get(i), "choice " + i);
        }
        assertEquals(21, events.get(events.size() - 1).get("usage").get("prompt_tokens").asInt());
        t.assertPagesConserved();
    }

    @Test
    void badRequestsAre400NamingTheField() throws Exception {
        assertError(t.post("/v1/completions", "{\"prompt\": [1,2"), 400, null);
        assertError(t.post("/v1/completions", "[1,2]"), 400, null);
        assertError(t.post("/v1/completions", "{\"max_tokens\":3}"), 400, "prompt");
        assertError(t.post("/v1/completions", "{\"prompt\":[1,2],\"temperature\":\"hot\"}"), 400, "temperature");
        assertError(t.post("/v1/completions", "{\"prompt\":[1,2],\"temperature\":3}"), 400, "temperature");
        assertError(t.post("/v1/completions", "{\"prompt\":[1,2],\"top_p\":0}"), 400, "top_p");
        assertError(t.post("/v1/completions", "{\"prompt\":[1,2],\"max_tokens\":0}"), 400, "max_tokens");
        assertError(t.post("/v1/completions", "{\"prompt\":[1,2],\"max_tokens\":\"5\"}"), 400, "max_tokens");
        assertError(t.post("/v1/completions", "{\"prompt\":[1,2],\"stream\":\"yes\"}"), 400, "stream");
        assertError(t.post("/v1/completions", "{\"prompt\":[1,-2]}"), 400, "prompt");
        assertError(t.post("/v1/completions", "{\"prompt\":[1,32000]}"), 400, "prompt");
        assertError(t.post("/v1/completions", "{\"prompt\":[]}"), 400, "prompt");
        assertError(t.post("/v1/completions", "{\"prompt\":\"hello\"}"), 400, "prompt");
        assertError(t.post("/v1/completions", "{\"prompt\":[1],\"stop\":[\"x\"]}"), 400, "stop");
        assertError(t.post("/v1/completions", "{\"prompt\":[1],\"n\":0}"), 400, "n");
        assertError(t.post("/v1/completions", "{\"prompt\":[1],\"logprobs\":21}"), 400, "logprobs");
        assertError(t.post("/v1/completions", "{\"prompt\":[1],\"echo\":\"yes\"}"), 400, "echo");
        assertError(t.post("/v1/completions", "{\"prompt\":[1],\"frequency_penalty\":2.5}"), 400, "frequency_penalty");
        assertError(t.post("/v1/completions", "{\"prompt\":[1],\"best_of\":3}"), 400, "best_of");
        assertError(t.post("/v1/completions", "{\"prompt\":[1],\"stream_options\":{\"include_usage\":true}}"), 400,
                "stream_options");
        assertError(t.post("/v1/chat/completions", "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],"
                + "\"tools\":[{\"type\":\"function\"}]}"), 400, "tools[0].function");
        assertError(t.post("/v1/chat/completions", "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"), 400,
                "messages"); // a preset has no tokenizer
        // neutral values of unsupported fields pass
        complete("{\"prompt\":[1,2],\"max_tokens\":1,\"n\":1,\"echo\":false,\"logprobs\":null,"
                + "\"presence_penalty\":0,\"user\":\"u1\"}");
    }

    @Test
    void fieldsThatChangeNothingAreAcceptedAndIgnored() throws Exception {
        JsonNode j = complete("{\"prompt\":[1,2],\"max_tokens\":2,\"store\":true,\"metadata\":{\"k\":\"v\"},"
                + "\"user\":\"u1\",\"service_tier\":\"auto\",\"reasoning_effort\":\"low\",\"frobnicate\":[1]}");
        assertEquals(2, j.get("usage").get("completion_tokens").asInt());
        // an ignored field is still strict JSON
        assertError(t.post("/v1/completions", "{\"prompt\":[1],\"frobnicate\":[1,}"), 400, null);
    }

    @Test
    void fieldsRadixkvCannotHonourAre400NamingThem() throws Exception {
        String[][] refused = {{"best_of", "2"},
            {"n", "0"}, {"response_format", "{\"type\":\"json_object\"}"},
            {"structured_outputs", "{\"regex\":\"a\"}"},
            {"guided_json", "{}"}, {"prompt_logprobs", "1"}, {"use_beam_search", "true"},
            {"spaces_between_special_tokens", "false"}, {"ignore_eos", "1"}};
        for (String[] f : refused) {
            assertError(t.post("/v1/completions", "{\"prompt\":[1],\"" + f[0] + "\":" + f[1] + "}"), 400, f[0]);
        }
        // vLLM's neutral values change nothing and pass
        complete("{\"prompt\":[1,2],\"max_tokens\":1,\"top_k\":-1,\"min_p\":0,\"repetition_penalty\":1,"
                + "\"min_tokens\":0,\"best_of\":1,\"frequency_penalty\":0.0,\"logit_bias\":{},"
                + "\"spaces_between_special_tokens\":true,\"guided_json\":null}");
        complete("{\"prompt\":[1,2],\"max_tokens\":1,\"top_k\":0}");
    }

    @Test
    void completionsWithoutMaxTokensGenerateSixteen() throws Exception {
        // a preset has no EOS, so only the default limit ends it
        JsonNode j = complete("{\"prompt\":[1,2,3]}");
        assertEquals(RequestParser.COMPLETION_DEFAULT_MAX_TOKENS, j.get("usage").get("completion_tokens").asInt());
        assertEquals("length", j.get("choices").get(0).get("finish_reason").asText());
    }

    @Test
    void promptTooLongIs400() throws Exception {
        // context: maxSeqLen 1024
        JsonNode e = assertError(t.post("/v1/completions", "{\"prompt\":" + prompt(0, 1100) + "}"), 400, "prompt");
        assertTrue(e.get("message").asText().contains("1100"), e.toString());
        // fits alone but not with max_tokens: the engine refuses it
        e = assertError(t.post("/v1/completions", "{\"prompt\":" + prompt(0, 1000) + ",\"max_tokens\":500}"), 400,
                "max_tokens");
        assertTrue(e.get("message").asText().contains("maxTokens 500"), e.toString());
        t.assertPagesConserved();
    }

    @Test
    void unknownModelAndPathAre404() throws Exception {
        assertError(t.post("/v1/completions", "{\"model\":\"gpt-4\",\"prompt\":[1]}"), 404, "model");
        assertError(t.get("/v1/nothing"), 404, null);
        assertError(t.post("/v2/completions", "{}"), 404, null);
    }

    @Test
    void engineFaultIs500AndOthersGoOn() throws Exception {
        t.server.injectTokenFault(tok -> true);
        try {
            JsonNode e = assertError(t.post("/v1/completions", "{\"prompt\":[7,7,7],\"max_tokens\":4}"), 500, null);
            assertTrue(e.get("message").asText().contains("injected"), e.toString());
            HttpResponse<String> s = t.post("/v1/completions", "{\"prompt\":[7,7,8],\"max_tokens\":4,\"stream\":true}");
            assertEquals(200, s.statusCode());
            assertTrue(s.body().contains("\"code\":500") && s.body().endsWith("data: [DONE]\n\n"), s.body());
        } finally {
            t.server.injectTokenFault(null);
        }
        complete("{\"prompt\":[7,7,9],\"max_tokens\":2}");
        t.assertPagesConserved();
    }

    @Test
    void clientDisconnectCancelsAndFreesPages() throws Exception {
        String before = t.get("/metrics").body();
        long decodedBefore = t.engine.snapshot().decodeTokens();
        // Pace the engine (5 ms a token, through the test seam on its token listener): on a quiet machine the
        // tiny model would otherwise finish all 950 tokens before the server sees the closed connection.
        t.server.injectTokenFault(tok -> {
            java.util.concurrent.locks.LockSupport.parkNanos(5_000_000L);
            return false;
        });
        try {
            disconnectMidStream(before, decodedBefore);
        } finally {
            t.server.injectTokenFault(null);
        }
    }

    private void disconnectMidStream(String before, long decodedBefore) throws Exception {
        HttpRequest req = HttpRequest.newBuilder(t.uri("/v1/completions")).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString("{\"prompt\":" + prompt(5000, 40)
                        + ",\"max_tokens\":950,\"temperature\":0,\"stream\":true}")).build();
        HttpResponse<InputStream> r = t.http.send(req, HttpResponse.BodyHandlers.ofInputStream());
        assertEquals(200, r.statusCode());
        BufferedReader in = new BufferedReader(new InputStreamReader(r.body(), StandardCharsets.UTF_8));
        assertTrue(in.readLine().startsWith("data: {"), "first event");
        in.close(); // the client goes away mid-stream
        t.assertPagesConserved();
        // the handler records the abort once the engine has ended the request: wait for it
        String abort = "radixkv:request_success_total{finished_reason=\"abort\"";
        long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
        String after = t.get("/metrics").body();
        while (metricOrZero(after, abort) == metricOrZero(before, abort) && System.nanoTime() < deadline) {
            Thread.sleep(20);
            after = t.get("/metrics").body();
        }
        assertEquals(1.0, metricOrZero(after, abort) - metricOrZero(before, abort), 1e-9);
        long decoded = t.engine.snapshot().decodeTokens() - decodedBefore;
        // the first token comes from prefill: a request run to its end decodes 949
        assertTrue(decoded < 900, "the request stopped early: " + decoded + " tokens decoded");
    }

    private static double metricOrZero(String text, String prefix) {
        return text.contains(prefix) ? metric(text, prefix) : 0;
    }

    @Test
    void fiftyConcurrentStreams() throws Exception {
        List<CompletableFuture<HttpResponse<String>>> fs = new ArrayList<>();
        for (int i = 0; i < 50; i++) {
            HttpRequest req = HttpRequest.newBuilder(t.uri("/v1/completions")).timeout(Duration.ofSeconds(120))
                    .header("Content-Type", "application/json")
                    .POST(HttpRequest.BodyPublishers.ofString("{\"prompt\":" + prompt(100 * i, 8 + i % 5)
                            + ",\"max_tokens\":" + (4 + i % 3) + ",\"stream\":true,\"stream_options\":"
                            + "{\"include_usage\":true}}")).build();
            fs.add(t.http.sendAsync(req, HttpResponse.BodyHandlers.ofString()));
        }
        for (int i = 0; i < 50; i++) {
            HttpResponse<String> r = fs.get(i).get();
            assertEquals(200, r.statusCode(), r.body());
            List<JsonNode> events = ServerTestSupport.sseEvents(r.body());
            int tokens = 0;
            String finish = null;
            for (JsonNode e : events) {
                if (!e.get("choices").isEmpty()) {
                    JsonNode c = e.get("choices").get(0);
                    tokens += c.has("token_ids") ? c.get("token_ids").size() : 0;
                    finish = c.get("finish_reason").isNull() ? finish : c.get("finish_reason").asText();
                }
            }
            assertEquals(4 + i % 3, tokens, "stream " + i);
            assertEquals("length", finish, "stream " + i);
            assertEquals(4 + i % 3, events.get(events.size() - 1).get("usage").get("completion_tokens").asInt());
        }
        t.assertPagesConserved();
    }
}
