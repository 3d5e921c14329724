package io.radixkv.server;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.helidon.http.HeaderNames;
import io.helidon.webserver.http.ServerRequest;
import io.helidon.webserver.http.ServerResponse;
import io.prometheus.metrics.core.metrics.GaugeWithCallback;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import io.radixkv.engine.Engine;
import io.radixkv.engine.LoraStats;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.concurrent.ExecutionException;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

/**
 * LoRA adapters on the server, as vLLM serves them: every loaded adapter is a model of its own in
 * {@code /v1/models} ({@code parent} = the base model's id, {@code root} = its directory), a request's {@code model} selects it,
 * {@code POST /v1/load_lora_adapter {lora_name, lora_path}} and
 * {@code POST /v1/unload_lora_adapter {lora_name}} change the set at run time when allowed
 * ({@code serve --allow-runtime-lora-updating}, vLLM's {@code VLLM_ALLOW_RUNTIME_LORA_UPDATING};
 * otherwise they are 404 as unrouted paths), and the gauge {@code lora_requests_info} carries the
 * running and waiting requests' adapters and the slot count in its labels, its value the time of
 * the scrape (vLLM's {@code set_to_current_time}).
 */
final class LoraServing {
    private static final Logger LOG = LogManager.getLogger(LoraServing.class);

    private final Engine engine;
    private final String baseName;
    private final ObjectMapper json;
    private volatile boolean runtimeUpdates;

    LoraServing(Engine engine, String baseName, ObjectMapper json) {
        this.engine = engine;
        this.baseName = baseName;
        this.json = json;
    }

    void allowRuntimeUpdates(boolean allow) {
        runtimeUpdates = allow;
    }

    /** Registers {@code <prefix>:lora_requests_info} in {@code registry}. */
    void registerMetric(PrometheusRegistry registry, String prefix) {
        GaugeWithCallback.builder().name(prefix + ":lora_requests_info").help("Running stats on lora requests.")
                .labelNames("max_lora", "waiting_lora_adapters", "running_lora_adapters")
                .callback(cb -> {
                    LoraStats s = engine.loraStats();
                    cb.call(System.currentTimeMillis() / 1000.0, Integer.toString(s.maxLoras()),
                            String.join(",", s.waiting()), String.join(",", s.running()));
                })
                .register(registry);
    }

    /** Adds one {@code /v1/models} entry per adapter after the base model's. */
    void addModels(ArrayNode data, long created, int maxModelLen) {
        for (String name : engine.adapters()) {
            Path dir = engine.adapterDir(name);
            if (dir == null) {
                continue; // unloaded since the list was taken
            }
            ObjectNode m = data.addObject();
            m.put("id", name);
            m.put("object", "model");
            m.put("created", created);
            m.put("owned_by", "radixkv");
            m.put("root", dir.toString()); // vLLM: the adapter's path
            m.put("parent", baseName);
            m.put("max_model_len", maxModelLen);
        }
    }

    /** {@code POST /v1/load_lora_adapter}: 200 with vLLM's plain-text success line; 400 for a bad adapter. */
    void load(ServerRequest req, ServerResponse res, JsonNode body) {
        requireRuntimeUpdates(req);
        String name = text(body, "lora_name");
        String path = text(body, "lora_path");
        if (name == null || path == null) {
            throw ApiException.badRequest(name == null ? "lora_name" : "lora_path",
                    "Both 'lora_name' and 'lora_path' must be provided.");
        }
        if (name.equals(baseName) || engine.adapters().contains(name)) {
            throw ApiException.badRequest("lora_name", "The lora adapter '" + name + "' has already been loaded.");
        }
        try {
            engine.loadAdapter(name, Path.of(path));
        } catch (IllegalArgumentException | IllegalStateException e) { // InvalidPathException included
            throw ApiException.badRequest("lora_path", e.getMessage());
        }
        LOG.info("LoRA adapter {} loaded from {}", name, path);
        plain(res, "Success: LoRA adapter '" + name + "' added successfully.");
    }

    /**
     * {@code POST /v1/unload_lora_adapter}: refuses the adapter's new requests at once and answers
     * when its queued and running requests have finished; 404 for an unknown adapter.
     */
    void unload(ServerRequest req, ServerResponse res, JsonNode body) {
        requireRuntimeUpdates(req);
        String name = text(body, "lora_name");
        if (name == null) {
            throw ApiException.badRequest("lora_name", "'lora_name' must be provided.");
        }
        try {
            engine.unloadAdapter(name).get();
        } catch (IllegalArgumentException e) {
            throw ApiException.notFound("lora_name", "The lora adapter '" + name + "' cannot be found.");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw ApiException.unavailable("interrupted while unloading " + name);
        } catch (ExecutionException e) {
            throw ApiException.unavailable("unloading " + name + " failed: " + e.getCause().getMessage());
        }
        LOG.info("LoRA adapter {} unloaded", name);
        plain(res, "Success: LoRA adapter '" + name + "' removed successfully.");
    }

    private void requireRuntimeUpdates(ServerRequest req) {
        if (!runtimeUpdates) {
            throw ApiException.notFound(null, "no route for POST " + req.path().path()
                    + " (start the server with --allow-runtime-lora-updating)");
        }
    }

    private static String text(JsonNode body, String field) {
        JsonNode v = body.get(field);
        return v != null && v.isTextual() && !v.asText().isBlank() ? v.asText() : null;
    }

    private static void plain(ServerResponse res, String line) {
        res.header(HeaderNames.CONTENT_TYPE, "text/plain; charset=utf-8");
        res.send(line.getBytes(StandardCharsets.UTF_8));
    }
}
