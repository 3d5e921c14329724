package io.radixkv.server;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.helidon.http.HeaderNames;
import io.helidon.http.HeaderValues;
import io.helidon.webserver.CloseConnectionException;
import io.helidon.http.Status;
import io.helidon.webserver.WebServer;
import io.helidon.webserver.WebServerConfig;
import io.helidon.webserver.http.HttpRouting;
import io.helidon.webserver.http.ServerRequest;
import io.helidon.webserver.http.ServerResponse;
import io.helidon.webserver.http1.Http1Config;
import io.radixkv.engine.Engine;
import io.radixkv.server.conn.ClientChannel;
import io.radixkv.server.conn.GuardedHttp1;
import io.radixkv.text.HfTokenizer;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Objects;
import java.util.function.Supplier;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

/**
 * radixkv's OpenAI-compatible server: Helidon SE's web server (a virtual thread per request)
 * in front of one {@link Engine}. The caller owns the engine and the tokenizer and closes
 * them after {@link #shutdown()}.
 *
 * <p>Endpoints: {@code POST /v1/completions}, {@code POST /v1/chat/completions} (JSON or SSE
 * with {@code "stream": true}), {@code GET /v1/models}, {@code GET /health},
 * {@code GET /metrics} (Prometheus text). Every error is OpenAI's JSON error shape.
 */
public final class OpenAiServer implements AutoCloseable {
    private static final Logger LOG = LogManager.getLogger(OpenAiServer.class);

    private final ServerConfig config;
    private final Engine engine;
    private final ObjectMapper json = new ObjectMapper();
    private final Admission admission;
    private final ServerMetrics metrics;
    private final CompletionService completions;
    private final TokenizeService tokens;
    private final LoraServing lora;
    private final long created = System.currentTimeMillis() / 1000;
    private final GuardedHttp1 connections;
    private final WebServer web;
    private volatile boolean stopped;

    private OpenAiServer(Engine engine, HfTokenizer tokenizer, ServerConfig config,
                         java.util.function.Consumer<WebServerConfig.Builder> socketTweak) {
        this.config = config;
        this.engine = engine;
        String name = config.servedModelName();
        TextModel text = tokenizer == null ? TextModel.none(name) : TextModel.of(tokenizer, name, config.trustRequestChatTemplate());
        this.admission = new Admission(engine.config().maxRunning(), config.maxWaiting());
        this.metrics = new ServerMetrics(name, config.metricsPrefix(), engine::snapshot);
        HttpLimits limits = config.limits();
        this.completions = new CompletionService(engine, text, admission, metrics, json, name,
                limits.maxRequestBytes(), config.chatOutput());
        this.tokens = new TokenizeService(completions, text, json);
        this.lora = new LoraServing(engine, name, json);
        metrics.register(lora::registerMetric);
        this.connections = new GuardedHttp1(Http1Config.builder().build(), limits.keepAliveTimeout(),
                limits.readTimeout(), limits.writeTimeout());
        WebServerConfig.Builder web = WebServer.builder()
                .host(config.host())
                .port(config.port())
                .shutdownHook(false)
                // the guarded HTTP/1 selector is the only protocol: every connection gets its timeouts
                .protocolsDiscoverServices(false)
                .addConnectionSelector(connections)
                .maxPayloadSize(limits.maxRequestBytes())
                .directHandlers(JsonDirectHandler.all(json, limits.maxRequestBytes()))
                .routing(this::routes);
        socketTweak.accept(web);
        this.web = web.build();
    }

    /**
     * Starts serving {@code engine}. {@code tokenizer} may be null (a preset model): then only
     * token-id prompts are accepted.
     */
    public static OpenAiServer start(Engine engine, HfTokenizer tokenizer, ServerConfig config) {
        Objects.requireNonNull(engine, "engine");
        Objects.requireNonNull(config, "config");
        return start(engine, tokenizer, config, b -> { });
    }

    /** Tests: {@code socketTweak} adjusts the listener (small socket buffers make a stalled client's writes block soon). */
    static OpenAiServer start(Engine engine, HfTokenizer tokenizer, ServerConfig config,
                              java.util.function.Consumer<WebServerConfig.Builder> socketTweak) {
        OpenAiServer s = new OpenAiServer(engine, tokenizer, config, socketTweak);
        s.web.start();
        LOG.info("serving model '{}' on http://{}:{} (context {} tokens, {} running + {} waiting requests at most)",
                config.servedModelName(), config.host(), s.web.port(), s.completions.contextLimit(),
                engine.config().maxRunning(), config.maxWaiting());
        return s;
    }

    /**
     * Adds a counter to {@code /metrics}, read from {@code value} at each scrape (labelled with the
     * served model's name like the others): counters of parts wired beside the server, such as
     * the KV event publisher and the shared KV tier. {@code name} follows Prometheus rules and
     * gets the configured prefix ({@code kv_events_dropped} scrapes as {@code radixkv:kv_events_dropped_total}).
     *
     * @throws IllegalArgumentException for a name already registered
     */
    public void addCounter(String name, String help, Supplier<Number> value) {
        metrics.counter(name, help, value);
    }

    /**
     * Enables {@code POST /v1/load_lora_adapter} and {@code /v1/unload_lora_adapter} (vLLM's
     * {@code VLLM_ALLOW_RUNTIME_LORA_UPDATING}); off by default, when they answer 404.
     */
    public void allowRuntimeLoraUpdating(boolean allow) {
        lora.allowRuntimeUpdates(allow);
    }

    private com.fasterxml.jackson.databind.JsonNode jsonObject(ServerRequest req) {
        com.fasterxml.jackson.databind.JsonNode body = completions.readJson(req);
        RequestParser.requireObject(body);
        return body;
    }

    /** The bound port (the ephemeral one when the config asked for 0). */
    public int port() {
        return web.port();
    }

    /** {@code http://host:port} as clients on this machine reach it. */
    public URI baseUri() {
        String h = config.host().equals("0.0.0.0") ? "127.0.0.1" : config.host();
        return URI.create("http://" + h + ":" + port());
    }

    /** Tests: the engine fails requests at tokens for which {@code p} is true (null: never). */
    void injectTokenFault(java.util.function.IntPredicate p) {
        completions.tokenFault = p;
    }

    /** Connections open now (tests: every client connection is closed once idle past the keep-alive timeout). */
    int openConnections() {
        return connections.openConnections();
    }

    private void routes(HttpRouting.Builder r) {
        // after a response, the connection waits for the next request under the keep-alive timeout,
        // unless either side said Connection: close (Helidon marks the response but would keep reading)
        r.addFilter((chain, req, res) -> {
            try {
                chain.proceed();
            } finally {
                ClientChannel.current().ifPresent(ClientChannel::exchangeDone);
            }
            if (res.isSent() && (req.headers().containsToken(HeaderValues.CONNECTION_CLOSE)
                    || res.headers().containsToken(HeaderValues.CONNECTION_CLOSE))) {
                throw new CloseConnectionException("Connection: close");
            }
        });
        r.post("/v1/completions", (req, res) -> completions.handle(req, res, false))
                .post("/v1/chat/completions", (req, res) -> completions.handle(req, res, true))
                .post("/tokenize", tokens::tokenize)
                .post("/detokenize", tokens::detokenize)
                .post("/v1/load_lora_adapter", (req, res) -> lora.load(req, res, jsonObject(req)))
                .post("/v1/unload_lora_adapter", (req, res) -> lora.unload(req, res, jsonObject(req)))
                .get("/version", this::version)
                .get("/v1/models", this::models)
                .get("/health", this::health)
                .get("/metrics", this::metricsEndpoint)
                .any(this::notFound)
                .error(ApiException.class, (req, res, e) -> sendError(res, json, e))
                .error(RuntimeException.class, (req, res, e) -> {
                    LOG.error("internal error on {}", req.path().path(), e);
                    sendError(res, json, ApiException.internal(e.toString()));
                });
    }

    private void models(ServerRequest req, ServerResponse res) {
        ObjectNode root = json.createObjectNode();
        root.put("object", "list");
        ObjectNode m = root.putArray("data").addObject();
        m.put("id", config.servedModelName());
        m.put("object", "model");
        m.put("created", created);
        m.put("owned_by", "radixkv");
        m.put("root", engine.config().model());
        m.put("max_model_len", completions.contextLimit());
        lora.addModels((com.fasterxml.jackson.databind.node.ArrayNode) root.get("data"), created,
                completions.contextLimit());
        sendJson(res, json, 200, root);
    }

    private void version(ServerRequest req, ServerResponse res) {
        sendJson(res, json, 200, json.createObjectNode().put("version", version()));
    }

    /** radixkv's version (the server module's jar's), or "development build" when run from classes. */
    public static String version() {
        Module m = OpenAiServer.class.getModule();
        if (m.getDescriptor() != null && m.getDescriptor().rawVersion().isPresent()) {
            return m.getDescriptor().rawVersion().get();
        }
        String v = OpenAiServer.class.getPackage().getImplementationVersion();
        return v != null ? v : "development build";
    }

    private void health(ServerRequest req, ServerResponse res) {
        if (admission.draining()) {
            sendError(res, json, ApiException.unavailable("the server is shutting down"));
        } else {
            sendJson(res, json, 200, json.createObjectNode().put("status", "ok"));
        }
    }

    private void metricsEndpoint(ServerRequest req, ServerResponse res) {
        res.header(HeaderNames.CONTENT_TYPE, ServerMetrics.CONTENT_TYPE);
        res.send(metrics.scrape().getBytes(StandardCharsets.UTF_8));
    }

    private void notFound(ServerRequest req, ServerResponse res) {
        sendError(res, json, ApiException.notFound(null, "no route for " + req.prologue().method().text() + " "
                + req.path().path()));
    }

    static void sendJson(ServerResponse res, ObjectMapper json, int status, ObjectNode body) {
        byte[] bytes;
        try {
            bytes = json.writeValueAsBytes(body);
        } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
        res.status(Status.create(status));
        res.header(HeaderNames.CONTENT_TYPE, "application/json");
        res.send(bytes);
    }

    static void sendError(ServerResponse res, ObjectMapper json, ApiException e) {
        if (res.isSent()) {
            return;
        }
        if (e.retryAfterSeconds() > 0) {
            res.header(HeaderNames.RETRY_AFTER, Integer.toString(e.retryAfterSeconds()));
        }
        if (e.closeConnection()) {
            res.header(HeaderNames.CONNECTION, "close");
        }
        sendJson(res, json, e.status(), e.toJson(json));
    }

    /**
     * Graceful shutdown: refuses new requests (503), lets running ones finish for up to the
     * grace period, cancels what is left (their clients get an error, their pages are freed;
     * a second later the connections of any still blocked writing to a client that does not
     * read are closed), then stops the web server. The engine stays open (the caller closes it).
     */
    public void shutdown() {
        if (stopped) {
            return;
        }
        stopped = true;
        admission.drain();
        LOG.info("shutting down: waiting up to {} for running requests", config.shutdownGrace());
        try {
            if (!admission.awaitIdle(config.shutdownGrace())) {
                int n = completions.cancelAll();
                LOG.warn("grace period over: aborted {} running requests", n);
                if (!admission.awaitIdle(Duration.ofSeconds(1))) {
                    // the rest are blocked writing to clients that do not read: cut them off
                    completions.closeConnections();
                    admission.awaitIdle(Duration.ofSeconds(10));
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        web.stop();
        connections.close();
        LOG.info("server stopped");
    }

    @Override
    public void close() {
        shutdown();
    }
}
