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
            assertEquals("1", r.headers().firstValue("retry-after").orElse(null), "429 says when to retry");
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
            assertEquals("1", refused.headers().firstValue("retry-after").orElse(null), "503 says when to retry");
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

    @Test
    void shutdownCutsOffAStalledReaderQuietly() throws Exception {
        io.radixkv.engine.EngineConfig ec = io.radixkv.engine.EngineConfig.builder().model("tiny").backend("cpu")
                .pageSize(16).numPages(128).maxRunning(2).maxBatchTokens(256).maxSeqLen(1024).build();
        // a write timeout far past the grace period: shutdown, not the timeout, ends the stalled stream
        HttpLimits limits = new HttpLimits(Duration.ofSeconds(60), Duration.ofSeconds(60), Duration.ofSeconds(60), 1 << 20);
        java.util.List<java.util.logging.LogRecord> warnings = new java.util.concurrent.CopyOnWriteArrayList<>();
        java.util.logging.Handler capture = new java.util.logging.Handler() {
            @Override
            public void publish(java.util.logging.LogRecord r) {
                if (r.getLevel().intValue() >= java.util.logging.Level.WARNING.intValue()) {
                    warnings.add(r);
                }
            }

            @Override
            public void flush() {
            }

            @Override
            public void close() {
            }
        };
        java.util.logging.Logger root = java.util.logging.Logger.getLogger("");
        try (ServerTestSupport t = new ServerTestSupport(ec, null,
                ServerConfig.local("tiny").withShutdownGrace(Duration.ofMillis(200)).withLimits(limits),
                b -> b.connectionOptions(io.helidon.common.socket.SocketOptions.builder().socketSendBufferSize(4096)
                        .build()));
             RawHttp stalled = RawHttp.connect(t.server.baseUri(), 4096)) {
            long decoded = t.engine.snapshot().decodeTokens();
            stalled.post("/v1/completions", "HTTP/1.1", "", ("{\"prompt\":[1,2,3,4],\"max_tokens\":300,"
                    + "\"temperature\":0,\"stream\":true}").getBytes(StandardCharsets.UTF_8));
            // 200 tokens are about 30 KB of events, past the socket buffers: the handler is blocked writing
            // to the client that does not read when the shutdown comes
            long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
            while (t.engine.snapshot().decodeTokens() - decoded < 200 && System.nanoTime() < deadline) {
                Thread.sleep(10);
            }
            root.addHandler(capture);
            long t0 = System.nanoTime();
            try {
                t.server.shutdown();
            } finally {
                root.removeHandler(capture);
            }
            long shutdownMs = (System.nanoTime() - t0) / 1_000_000;
            // grace 200 ms, a second for aborted requests to answer, then the stalled connection is closed
            assertTrue(shutdownMs < 5000, "the stalled client did not hold the shutdown: " + shutdownMs + " ms");
            assertTrue(stalled.closedWithin(Duration.ofSeconds(10)), "the stalled connection is closed");
            t.assertPagesConserved();
            assertTrue(!ServerTestSupport.accessLines(l -> l.contains("reason=shutdown")).isEmpty(),
                    "the access log says the shutdown ended it");
            for (java.util.logging.LogRecord r : warnings) {
                String text = r.getMessage() + " " + r.getThrown();
                assertTrue(!text.contains("nterrupt") && !text.contains("Internal server error"),
                        "no error logged for a request the shutdown ended: " + text);
            }
        }
    }
}
