package io.radixkv.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.radixkv.engine.Engine;
import io.radixkv.engine.EngineConfig;
import io.radixkv.engine.EngineStats;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/** An engine + server on an ephemeral port, and a JDK HttpClient talking to it. */
final class ServerTestSupport implements AutoCloseable {
    static final ObjectMapper JSON = new ObjectMapper();

    final Engine engine;
    final OpenAiServer server;
    final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(10)).build();

    ServerTestSupport(EngineConfig engineConfig, io.radixkv.text.HfTokenizer tokenizer, ServerConfig serverConfig) {
        this(engineConfig, tokenizer, serverConfig, b -> { });
    }

    /** {@code socketTweak} adjusts the listener (socket buffer sizes). */
    ServerTestSupport(EngineConfig engineConfig, io.radixkv.text.HfTokenizer tokenizer, ServerConfig serverConfig,
                      java.util.function.Consumer<io.helidon.webserver.WebServerConfig.Builder> socketTweak) {
        this.engine = Engine.start(engineConfig);
        try {
            this.server = OpenAiServer.start(engine, tokenizer, serverConfig, socketTweak);
        } catch (RuntimeException e) {
            engine.close();
            throw e;
        }
    }

    /** The tiny preset (token ids only) on the CPU backend with a small pool. */
    static ServerTestSupport tinyPreset(int numPages, int maxRunning, int maxWaiting) {
        EngineConfig ec = EngineConfig.builder().model("tiny").backend("cpu").pageSize(16).numPages(numPages)
                .maxRunning(maxRunning).maxBatchTokens(256).maxSeqLen(1024).build();
        return new ServerTestSupport(ec, null, ServerConfig.local("tiny").withMaxWaiting(maxWaiting));
    }

    URI uri(String path) {
        return server.baseUri().resolve(path);
    }

    HttpResponse<String> post(String path, String body) throws IOException, InterruptedException {
        HttpRequest r = HttpRequest.newBuilder(uri(path)).timeout(Duration.ofSeconds(120))
                .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body)).build();
        return http.send(r, HttpResponse.BodyHandlers.ofString());
    }

    /** POSTs {@code body}, asserts a 200 and returns the JSON answer. */
    JsonNode postOk(String path, com.fasterxml.jackson.databind.node.ObjectNode body) throws Exception {
        HttpResponse<String> r = post(path, body.toString());
        assertEquals(200, r.statusCode(), r.body());
        return json(r);
    }

    /** Closes the server, then the tokenizer; either may be null (a failed start). */
    static void close(ServerTestSupport t, io.radixkv.text.HfTokenizer tokenizer) {
        if (t != null) {
            t.close();
        }
        if (tokenizer != null) {
            tokenizer.close();
        }
    }

    HttpResponse<String> get(String path) throws IOException, InterruptedException {
        return http.send(HttpRequest.newBuilder(uri(path)).timeout(Duration.ofSeconds(60)).GET().build(),
                HttpResponse.BodyHandlers.ofString());
    }

    static JsonNode json(HttpResponse<String> r) throws IOException {
        return JSON.readTree(r.body());
    }

    /**
     * Parses an SSE body as OpenAI streams it: events of one {@code data: ...} line each,
     * separated by blank lines, the last one {@code [DONE]}. Fails on any other framing.
     * Returns the JSON payloads before [DONE].
     */
    static List<JsonNode> sseEvents(String body) throws IOException {
        List<JsonNode> out = new ArrayList<>();
        assertTrue(body.endsWith("\n\n"), "an SSE stream ends with a blank line: " + tail(body));
        String[] events = body.substring(0, body.length() - 2).split("\n\n", -1);
        for (int i = 0; i < events.length; i++) {
            String ev = events[i];
            assertTrue(ev.startsWith("data: ") && !ev.contains("\n"), "event " + i + " is not one data: line: " + ev);
            String data = ev.substring("data: ".length());
            if (i == events.length - 1) {
                assertEquals("[DONE]", data, "the stream ends with data: [DONE]");
            } else {
                out.add(JSON.readTree(data));
            }
        }
        return out;
    }

    private static String tail(String s) {
        return s.length() < 200 ? s : s.substring(s.length() - 200);
    }

    /** The access-log lines matching {@code p}, waiting up to 10 s for at least one to be written. */
    static List<String> accessLines(java.util.function.Predicate<String> p) throws IOException, InterruptedException {
        java.nio.file.Path log = java.nio.file.Path.of(System.getProperty("radixkv.test.accesslog"));
        long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
        List<String> lines = java.nio.file.Files.readAllLines(log).stream().filter(p).toList();
        while (lines.isEmpty() && System.nanoTime() < deadline) {
            Thread.sleep(20);
            lines = java.nio.file.Files.readAllLines(log).stream().filter(p).toList();
        }
        return lines;
    }

    /** Waits until the engine is idle, then checks every page is free or the cache's. */
    void assertPagesConserved() throws InterruptedException {
        EngineStats s = engine.snapshot();
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while ((s.running() != 0 || s.waiting() != 0 || s.freePages() + s.cachedPages() != s.numPages())
                && System.nanoTime() < deadline) {
            Thread.sleep(20);
            s = engine.snapshot();
        }
        assertEquals(0, s.running(), "running requests");
        assertEquals(0, s.waiting(), "waiting requests");
        assertEquals(s.numPages(), s.freePages() + s.cachedPages(),
                "every page is free or cached once idle (free " + s.freePages() + ", cached " + s.cachedPages() + ")");
    }

    @Override
    public void close() {
        try {
            server.close();
        } finally {
            engine.close();
        }
    }

    /**
     * Runs the test resource {@code openai-client/<script>} with node against this server (the
     * official OpenAI client, installed by the test build) and returns the JSON it prints.
     */
    JsonNode runOpenAiClient(String script, String model) throws Exception {
        java.nio.file.Path clientDir = java.nio.file.Path.of(System.getProperty("radixkv.openai.client",
                "build/openai-client"));
        assertTrue(java.nio.file.Files.isRegularFile(clientDir.resolve("node_modules/openai/package.json")),
                "the test build installs the openai package (scripts/fetch-openai-client) into " + clientDir);
        // ESM resolves 'openai' from the script's own directory
        java.nio.file.Path copy = clientDir.resolve(script);
        java.net.URL src = ServerTestSupport.class.getResource("/openai-client/" + script);
        assertTrue(src != null, script + " is a test resource");
        java.nio.file.Files.copy(java.nio.file.Path.of(src.toURI()), copy,
                java.nio.file.StandardCopyOption.REPLACE_EXISTING);
        Process p = new ProcessBuilder("node", copy.toString(), server.baseUri().toString(), model).start();
        String out = new String(p.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
        String err = new String(p.getErrorStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
        assertTrue(p.waitFor(120, java.util.concurrent.TimeUnit.SECONDS), "node finished");
        assertEquals(0, p.exitValue(), "node failed: " + err + out);
        return JSON.readTree(out);
    }
}
