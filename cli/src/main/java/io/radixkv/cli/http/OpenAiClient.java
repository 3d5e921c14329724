package io.radixkv.cli.http;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * A client of an OpenAI-compatible server (radixkv's, vLLM, SGLang, ...) for the serving
 * benchmark, on the JDK's HTTP client (HTTP/1.1, one connection per concurrent stream, as the
 * Python benchmark clients use). Closing it aborts requests still streaming.
 */
public final class OpenAiClient implements AutoCloseable {
    private static final ObjectMapper JSON = new ObjectMapper();
    /** Error bodies are kept up to this many bytes. */
    private static final int ERROR_BODY_BYTES = 4096;

    private final URI base;
    private final HttpClient http;

    /** @param base the server's base URL ({@code http://host:port}, or with a path prefix before /v1) */
    public OpenAiClient(URI base) {
        String b = base.toString();
        this.base = URI.create(b.endsWith("/") ? b : b + "/");
        this.http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
                .connectTimeout(Duration.ofSeconds(10)).build();
    }

    public URI base() {
        return base;
    }

    /** The ids of {@code GET /v1/models}. */
    public List<String> modelIds() throws IOException, InterruptedException {
        HttpResponse<String> r = http.send(HttpRequest.newBuilder(base.resolve("v1/models"))
                .timeout(Duration.ofSeconds(30)).GET().build(), HttpResponse.BodyHandlers.ofString());
        if (r.statusCode() != 200) {
            throw new IOException("GET " + base.resolve("v1/models") + ": HTTP " + r.statusCode() + ": "
                    + CompletionStream.clip(r.body()));
        }
        List<String> ids = new ArrayList<>();
        for (JsonNode m : JSON.readTree(r.body()).path("data")) {
            if (m.path("id").isTextual()) {
                ids.add(m.get("id").asText());
            }
        }
        return ids;
    }

    /** The request body: token-id prompt, greedy, streamed with usage. */
    static ObjectNode completionBody(String model, int[] prompt, int maxTokens, boolean ignoreEos) {
        ObjectNode b = JSON.createObjectNode();
        b.put("model", model);
        var p = b.putArray("prompt");
        for (int t : prompt) {
            p.add(t);
        }
        b.put("max_tokens", maxTokens);
        b.put("temperature", 0.0);
        b.put("stream", true);
        b.putObject("stream_options").put("include_usage", true);
        if (ignoreEos) {
            b.put("ignore_eos", true); // vLLM / SGLang extension: exactly max_tokens tokens
        }
        return b;
    }

    /**
     * Sends one streamed completion and reads it to its end. Never throws for a failed request:
     * a non-200 status (with its body), a broken connection or a malformed stream is the
     * result's error. The clock starts just before the request is sent.
     */
    public CompletionStream.Result streamCompletion(String model, int[] prompt, int maxTokens, boolean ignoreEos) {
        HttpRequest req = HttpRequest.newBuilder(base.resolve("v1/completions"))
                .header("Content-Type", "application/json").header("Accept", "text/event-stream")
                .POST(HttpRequest.BodyPublishers.ofString(completionBody(model, prompt, maxTokens, ignoreEos).toString()))
                .build();
        long sent = System.nanoTime();
        try {
            HttpResponse<InputStream> r = http.send(req, HttpResponse.BodyHandlers.ofInputStream());
            try (InputStream body = r.body()) {
                if (r.statusCode() != 200) {
                    String text = new String(body.readNBytes(ERROR_BODY_BYTES), StandardCharsets.UTF_8);
                    return CompletionStream.Result.failed(sent, "HTTP " + r.statusCode() + ": " + CompletionStream.clip(text),
                            System.nanoTime());
                }
                CompletionStream s = new CompletionStream(sent);
                SseReader events = new SseReader(new InputStreamReader(body, StandardCharsets.UTF_8));
                String data;
                while ((data = events.next()) != null) {
                    if (s.accept(data, System.nanoTime())) {
                        break;
                    }
                }
                return s.result(System.nanoTime());
            }
        } catch (IOException e) {
            return CompletionStream.Result.failed(sent, describe(e), System.nanoTime());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return CompletionStream.Result.failed(sent, "interrupted", System.nanoTime());
        }
    }

    /** The first message along the cause chain (the JDK client's ConnectException has none of its own). */
    static String describe(Throwable e) {
        Throwable t = e;
        while (t.getMessage() == null && t.getCause() != null) {
            t = t.getCause();
        }
        String kind = e == t ? e.getClass().getSimpleName() : e.getClass().getSimpleName() + " (" + t.getClass().getSimpleName() + ")";
        return t.getMessage() == null ? kind : kind + ": " + t.getMessage();
    }

    @Override
    public void close() {
        http.shutdownNow();
    }
}
