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
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

/** The bounded waiting queue (429) and graceful shutdown (503, abort after the grace period). */
class AdmissionAndShutdownTest {

    private static HttpRequest stream(ServerTestSupport t, int maxTokens) {
        return HttpRequest.newBuilder(t.uri("/v1/completions")).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString("{\"prompt\":[1,2,3,4],\"max_tokens\":" + maxTokens
                        + ",\"temperature\":0,\"stream\":true}")).build();
    }

    @Test
    void fullQueueIs429() throws Exception {
        try (ServerTestSupport t = ServerTestSupport.tinyPreset(128, 1, 0)) {
            HttpResponse<InputStream> running = t.http.send(stream(t, 900), HttpResponse.BodyHandlers.ofInputStream());
            BufferedReader in = new BufferedReader(new InputStreamReader(running.body(), StandardCharsets.UTF_8));
            assertTrue(in.readLine().startsWith("data: "), "the first request runs");
            HttpResponse<String> r = t.post("/v1/completions", "{\"prompt\":[5,6],\"max_tokens\":2}");
            assertEquals(429, r.statusCode(), r.body());
            JsonNode e = ServerTestSupport.json(r).get("error");
            assertEquals(429, e.get("code").asInt());
            assertTrue(e.get("message").asText().contains("waiting queue is full"), e.toString());
            in.close();
            t.assertPagesConserved();
            // the slot is free again once the first request has ended
            long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
            int status;
            do {
                status = t.post("/v1/completions", "{\"prompt\":[5,6],\"max_tokens\":2}").statusCode();
            } while (status == 429 && System.nanoTime() < deadline);
            assertEquals(200, status);
        }
    }

    @Test
    void shutdownRefusesNewRequestsAndAbortsAfterGrace() throws Exception {
        io.radixkv.engine.EngineConfig ec = io.radixkv.engine.EngineConfig.builder().model("tiny").backend("cpu")
                .numPages(128).maxRunning(4).maxBatchTokens(64).maxSeqLen(4096).build();
        try (ServerTestSupport t = new ServerTestSupport(ec, null,
                ServerConfig.local("tiny").withShutdownGrace(Duration.ofMillis(300)))) {
            HttpResponse<InputStream> running = t.http.send(stream(t, 2000), HttpResponse.BodyHandlers.ofInputStream());
            BufferedReader in = new BufferedReader(new InputStreamReader(running.body(), StandardCharsets.UTF_8));
            assertTrue(in.readLine().startsWith("data: "));
            CompletableFuture<Void> down = CompletableFuture.runAsync(t.server::shutdown);
            long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
            int health = 200;
            while (health == 200 && System.nanoTime() < deadline) {
                health = t.get("/health").statusCode();
            }
            assertEquals(503, health, "draining: health is 503");
            HttpResponse<String> refused = t.post("/v1/completions", "{\"prompt\":[5,6],\"max_tokens\":2}");
            assertEquals(503, refused.statusCode(), refused.body());
            // the running stream is aborted after the grace period: an error event, then [DONE]
            StringBuilder rest = new StringBuilder();
            for (String line; (line = in.readLine()) != null; ) {
                rest.append(line).append('\n');
            }
            String tail = rest.toString();
            assertTrue(tail.contains("\"code\":503") && tail.endsWith("data: [DONE]\n\n"),
                    tail.substring(Math.max(0, tail.length() - 400)));
            down.get();
            t.assertPagesConserved();
        }
    }
}
