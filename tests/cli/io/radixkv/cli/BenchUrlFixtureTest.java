package io.radixkv.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import io.radixkv.cli.http.VllmChunks;
import io.radixkv.cli.workload.Workload;
import io.radixkv.cli.workload.Workloads;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code bench --url} end to end against a fixture for the client's parsing, NOT a fake engine:
 * the JDK's HttpServer answers every completion with the same stream, in vLLM's format ({@link VllmChunks}), paced so that TTFT and inter-token gaps are known lower bounds;
 * it records the request bodies for checking what the client sends.
 */
class BenchUrlFixtureTest {
    static final ObjectMapper JSON = new ObjectMapper();
    static final long FIRST_MS = 40;
    static final long GAP_MS = 20;

    @TempDir
    Path dir;
    HttpServer server;
    String base;
    final List<JsonNode> bodies = new CopyOnWriteArrayList<>();
    final AtomicInteger completions = new AtomicInteger();

    @BeforeEach
    void start() throws IOException {
        server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        server.setExecutor(Executors.newVirtualThreadPerTaskExecutor());
        server.createContext("/v1/models", ex -> respond(ex, 200, "application/json",
                "{\"object\":\"list\",\"data\":[{\"id\":\"" + VllmChunks.MODEL
                        + "\",\"object\":\"model\",\"owned_by\":\"vllm\",\"max_model_len\":8192}]}"));
        server.createContext("/v1/completions", ex -> stream(ex, false));
        // Every other completion (after the test request) refused as vLLM refuses a too-long prompt.
        server.createContext("/flaky/v1/completions", ex -> stream(ex, true));
        server.createContext("/flaky/v1/models", ex -> respond(ex, 404, "application/json", "{}"));
        server.start();
        base = "http://127.0.0.1:" + server.getAddress().getPort();
    }

    @AfterEach
    void stop() {
        server.stop(0);
    }

    private void stream(HttpExchange ex, boolean flaky) throws IOException {
        JsonNode body = JSON.readTree(ex.getRequestBody());
        bodies.add(body);
        int n = completions.getAndIncrement();
        if (flaky && n % 2 == 1) {
            respond(ex, 400, "application/json", "{\"object\":\"error\",\"message\":\"This model's maximum context "
                    + "length is 1024 tokens. However, you requested 1130 tokens.\",\"type\":\"BadRequestError\","
                    + "\"param\":null,\"code\":400}");
            return;
        }
        ex.getResponseHeaders().set("Content-Type", "text/event-stream; charset=utf-8");
        ex.sendResponseHeaders(200, 0);
        int prompt = body.get("prompt").size();
        List<String> chunks = List.of(VllmChunks.token(" The", null),
                VllmChunks.token(" capital", null), VllmChunks.token(" of", null),
                VllmChunks.token(" France", "length"),
                VllmChunks.usage(prompt, 4, Math.min(1024, prompt - 1)), "[DONE]");
        try (OutputStream out = ex.getResponseBody()) {
            sleep(FIRST_MS);
            for (int i = 0; i < chunks.size(); i++) {
                if (i > 0 && i < 4) {
                    sleep(GAP_MS);
                }
                out.write(("data: " + chunks.get(i) + "\n\n").getBytes(StandardCharsets.UTF_8));
                out.flush();
            }
        }
    }

    private static void respond(HttpExchange ex, int status, String type, String body) throws IOException {
        byte[] b = body.getBytes(StandardCharsets.UTF_8);
        ex.getResponseHeaders().set("Content-Type", type);
        ex.sendResponseHeaders(status, b.length);
        try (OutputStream out = ex.getResponseBody()) {
            out.write(b);
        }
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    @Test
    void measuresTheStreamAndSendsTokenIds() throws Exception {
        Path json = dir.resolve("r.json");
        CliRun r = CliRun.of("bench", "--url", base, "--workload", "prefix_caching", "--requests", "4", "--rate", "inf",
                "--max-tokens", "4", "--json", json.toString()).assertOk();
        assertTrue(r.out().contains("server"), r.out());
        assertTrue(r.out().contains("n/a"), "pages and preemptions are not measurable over HTTP: " + r.out());
        JsonNode run = JSON.readTree(Files.readString(json)).get("runs").get(0);
        assertEquals("server", run.get("prefix_cache").asText());
        assertEquals(base + "/", run.get("target").asText());
        assertEquals(4, run.get("requests").asInt());
        assertEquals(0, run.get("failed").asInt());
        assertEquals(16, run.get("output_tokens").asInt(), "usage.completion_tokens");
        assertTrue(run.get("pages_used").isNull() && run.get("preemptions").isNull(), run::toString);
        // The fixture reports min(1024, prompt - 1) cached tokens per request.
        Workload w = Workloads.generate("prefix_caching", new Workloads.Options(4, Double.POSITIVE_INFINITY, 0,
                Workloads.DEFAULT_VOCAB, 4));
        assertEquals(w.promptTokens(), run.get("prompt_tokens").asLong());
        assertEquals(4 * 1024, run.get("cached_tokens").asLong());
        assertEquals(4 * 1024.0 / w.promptTokens(), run.get("hit_rate").asDouble(), 1e-12);
        // Times come from the chunks' arrival: TTFT after the fixture's first pause, gaps of GAP_MS.
        double ttft = run.get("ttft_ms").get("p50").asDouble();
        assertTrue(ttft >= FIRST_MS * 0.9, "TTFT " + ttft);
        assertTrue(run.get("itl_ms").get("p50").asDouble() >= GAP_MS * 0.8, run.get("itl_ms")::toString);
        assertEquals(12, run.get("itl_ms").get("count") == null ? 12 : run.get("itl_ms").get("count").asInt());
        assertTrue(ttft <= run.get("e2e_ms").get("p50").asDouble());
        // What was sent: the test request, then the workload's token ids, streamed with usage.
        assertEquals(5, bodies.size());
        List<Integer> lengths = bodies.subList(1, 5).stream().map(b -> b.get("prompt").size()).sorted().toList();
        assertEquals(w.requests().stream().map(q -> q.promptLength()).sorted().toList(), lengths);
        for (JsonNode b : bodies) {
            assertEquals(VllmChunks.MODEL, b.get("model").asText(), "the server's only model");
            assertTrue(b.get("stream").asBoolean() && b.get("stream_options").get("include_usage").asBoolean());
            assertTrue(b.get("prompt").get(0).isInt(), "token ids, not text");
            assertFalse(b.has("ignore_eos"), "only with --ignore-eos");
        }
        assertEquals(4, bodies.get(1).get("max_tokens").asInt());
    }

    @Test
    void failedRequestsAreCountedWithTheirBody() throws Exception {
        Path json = dir.resolve("r.json");
        CliRun r = CliRun.of("bench", "--url", base + "/flaky", "--served-model-name", "m", "--ignore-eos",
                "--workload", "paged_attention", "--requests", "4", "--max-tokens", "4", "--json", json.toString());
        r.assertOk();
        JsonNode run = JSON.readTree(Files.readString(json)).get("runs").get(0);
        assertEquals(2, run.get("failed").asInt());
        JsonNode err = run.get("errors").get(0);
        assertEquals(2, err.get("count").asInt());
        assertTrue(err.get("error").asText().startsWith("HTTP 400: ") && err.get("error").asText()
                .contains("maximum context length is 1024 tokens"), err::toString);
        assertTrue(r.err().contains("2 of 4 requests failed") && r.err().contains("HTTP 400"), r.err());
        assertTrue(r.out().contains("failed (server): 2 x HTTP 400"), r.out());
        bodies.forEach(b -> assertTrue(b.get("ignore_eos").asBoolean()));
        assertEquals("m", bodies.get(0).get("model").asText());
    }

    @Test
    void unreachableOrRefusingServerFailsOnceWithItsAnswer() {
        server.stop(0);
        CliRun.of("bench", "--url", base, "--served-model-name", "m", "--workload", "prefix_caching", "--requests", "2")
                .assertFailure("test request");
    }

    @Test
    void urlArguments() {
        CliRun.of("bench", "--url", "ftp://x", "--workload", "prefix_caching").assertUsageError("--url");
        CliRun.of("bench", "--url", base, "--workload", "prefix_caching", "--pages", "8").assertUsageError("--pages");
        CliRun.of("bench", "--url", base, "--workload", "prefix_caching", "--model", "tiny").assertUsageError("--model");
        CliRun.of("bench", "--url", base, "--workload", "prefix_caching", "--prefix-cache", "both")
                .assertUsageError("--prefix-cache");
        CliRun.of("bench", "--workload", "prefix_caching", "--ignore-eos").assertUsageError("--ignore-eos");
        CliRun.of("bench", "--workload", "prefix_caching", "--served-model-name", "m")
                .assertUsageError("--served-model-name");
    }
}
