package io.radixkv.cli;

import io.radixkv.engine.Engine;
import io.radixkv.engine.EngineConfig;
import io.radixkv.engine.EngineWarmup;
import io.radixkv.kvtier.KvTierExtension;
import io.radixkv.server.ChatOutputConfig;
import io.radixkv.server.HttpLimits;
import io.radixkv.server.ModelTokenizer;
import io.radixkv.server.OpenAiServer;
import io.radixkv.server.ServerConfig;
import io.radixkv.text.HfTokenizer;
import io.radixkv.text.UnsupportedTokenizerException;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code radixkv serve}: the OpenAI-compatible HTTP server in front of one engine. Runs until
 * SIGTERM / SIGINT, then shuts down gracefully (new requests refused, running ones given the
 * grace period, the rest aborted) and exits.
 */
@Command(name = "serve", mixinStandardHelpOptions = true,
        description = "OpenAI-compatible HTTP server: /v1/completions, /v1/chat/completions (SSE streaming), "
                + "/v1/models, /health, /metrics.")
final class ServeCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Mixin
    EngineOptions engineOptions;

    @Option(names = "--tokenizer", paramLabel = "DIR",
            description = "Directory with tokenizer.json (and tokenizer_config.json for the chat template) to serve text "
                    + "with, as vLLM's --tokenizer; default: the model directory's own, or the tokenizer and chat "
                    + "template rebuilt from a .gguf file's metadata.")
    Path tokenizerDir;

    @Option(names = "--host", paramLabel = "ADDR", defaultValue = "127.0.0.1",
            description = "Address to bind; 0.0.0.0 for every interface (default ${DEFAULT-VALUE}).")
    String host;

    @Option(names = "--port", paramLabel = "PORT", defaultValue = "8000",
            description = "TCP port; 0 picks a free one (default ${DEFAULT-VALUE}).")
    int port;

    @Option(names = "--served-model-name", paramLabel = "NAME",
            description = "Model id clients send (default: the preset name or the model directory's name).")
    String servedModelName;

    @Option(names = "--metrics-prefix", paramLabel = "NAME", defaultValue = ServerConfig.DEFAULT_METRICS_PREFIX,
            description = "Prefix of every /metrics series (default ${DEFAULT-VALUE}; vllm scrapes as vLLM's vllm: names).")
    String metricsPrefix;

    @Option(names = "--trust-request-chat-template",
            description = "Let requests bring their own chat_template (Jinja rendered by the server; off by default, as in vLLM).")
    boolean trustRequestChatTemplate;

    @Option(names = "--tool-call-parser", paramLabel = "NAME",
            description = "How chat outputs are read for tool calls: hermes, llama3_json or pythonic (vLLM's names; "
                    + "default: the model family's, Llama llama3_json, Qwen hermes, Gemma 3 pythonic).")
    String toolCallParser;

    @Option(names = "--enable-auto-tool-choice",
            description = "Serve tool_choice \"auto\", the default of requests with tools (as vLLM's flag).")
    boolean enableAutoToolChoice;

    @Option(names = "--exclude-tools-when-tool-choice-none",
            description = "With tool_choice \"none\" the chat template gets no tools (by default it gets them).")
    boolean excludeToolsWhenToolChoiceNone;

    @Option(names = "--reasoning-parser", paramLabel = "NAME",
            description = "Split the model's thinking into reasoning_content: qwen3 (vLLM's name).")
    String reasoningParser;

    @Option(names = "--lora-modules", paramLabel = "NAME=DIR", arity = "1..*",
            description = "PEFT LoRA adapters to serve, each selected by requests whose model is NAME (as vLLM's --lora-modules).")
    List<String> loraModules = new ArrayList<>();

    @Option(names = "--max-loras", paramLabel = "N", defaultValue = "8",
            description = "LoRA adapters running requests may use at once; requests of others wait (default ${DEFAULT-VALUE}).")
    int maxLoras;

    @Option(names = "--max-lora-rank", paramLabel = "R", defaultValue = "16",
            description = "Largest LoRA rank an adapter may have (default ${DEFAULT-VALUE}).")
    int maxLoraRank;

    @Option(names = "--allow-runtime-lora-updating",
            description = "Enable POST /v1/load_lora_adapter and /v1/unload_lora_adapter (vLLM's VLLM_ALLOW_RUNTIME_LORA_UPDATING).")
    boolean allowRuntimeLoraUpdating;

    @Option(names = "--max-waiting", paramLabel = "N", defaultValue = "256",
            description = "Requests that may wait beyond the running ones before new ones get 429 (default ${DEFAULT-VALUE}).")
    int maxWaiting;

    @Option(names = "--max-running", paramLabel = "N", defaultValue = "32",
            description = "Most requests running at once (default ${DEFAULT-VALUE}).")
    int maxRunning;

    @Option(names = "--max-n", paramLabel = "N", defaultValue = "16",
            description = "Most samples (n) one request may ask for; each counts against --max-running (default ${DEFAULT-VALUE}).")
    int maxN;

    @Option(names = "--max-batch-tokens", paramLabel = "N", defaultValue = "512",
            description = "Tokens per engine step (default ${DEFAULT-VALUE}).")
    int maxBatchTokens;

    @Option(names = "--pages", paramLabel = "N", description = "KV pages in the pool (default: --kv-cache-mb).")
    Integer pages;

    @Option(names = "--kv-cache-mb", paramLabel = "MB", defaultValue = "256",
            description = "KV pool budget in MiB when --pages is not given (default ${DEFAULT-VALUE}).")
    int kvCacheMb;

    @Option(names = "--max-seq-len", paramLabel = "N", defaultValue = "0",
            description = "Longest sequence, prompt + output (default: the model's maximum).")
    int maxSeqLen;

    @Option(names = "--prefix-cache", paramLabel = "on|off", defaultValue = "on",
            description = "Reuse KV across requests through the radix cache (default ${DEFAULT-VALUE}).")
    String prefixCache;

    @Option(names = "--kv-events", paramLabel = "ENDPOINT",
            description = "Publish KV cache events in vLLM's schema on a ZeroMQ PUB socket, e.g. tcp://*:5557 "
                    + "(binds; tcp://HOST:PORT connects, as vLLM does). Off by default.")
    String kvEvents;

    @Option(names = "--kv-events-replay", paramLabel = "ENDPOINT",
            description = "ROUTER socket for replaying missed KV event batches, e.g. tcp://*:5558 (needs --kv-events).")
    String kvEventsReplay;

    @Option(names = "--kv-tier", paramLabel = "redis://HOST:PORT",
            description = "Share evicted KV pages with other replicas through this Redis/Valkey server. Off by default.")
    String kvTier;

    @Option(names = "--kv-tier-write-on-cache",
            description = "Write pages to --kv-tier as soon as they are cached, not only when evicted.")
    boolean kvTierWriteOnCache;

    @Option(names = "--kv-hash-seed", paramLabel = "SEED", defaultValue = "0",
            description = "Block-hash seed (vLLM's PYTHONHASHSEED) shared by replicas and routers (default: ${DEFAULT-VALUE}).")
    String kvHashSeed;

    @Option(names = "--warmup", paramLabel = "on|off", defaultValue = "on",
            description = "Before listening, run two short requests through prefill and decode (outside the prefix "
                    + "cache), so the first client's request does not wait for JIT compilation (default ${DEFAULT-VALUE}).")
    String warmup;

    @Option(names = "--shutdown-grace", paramLabel = "SECONDS", defaultValue = "30",
            description = "On SIGTERM, how long running requests may finish before they are aborted (default ${DEFAULT-VALUE}).")
    int shutdownGrace;

    @Option(names = "--timeout-keep-alive", paramLabel = "SECONDS", defaultValue = "5",
            description = "How long an idle connection waits for its next request before it is closed "
                    + "(default ${DEFAULT-VALUE}, as uvicorn and vLLM).")
    double timeoutKeepAlive;

    @Option(names = "--read-timeout", paramLabel = "SECONDS", defaultValue = "30",
            description = "How long a started request may wait for its next bytes (headers, body) before the "
                    + "connection is closed (default ${DEFAULT-VALUE}).")
    double readTimeout;

    @Option(names = "--write-timeout", paramLabel = "SECONDS", defaultValue = "30",
            description = "How long one write to a client that does not read may block before its request is "
                    + "cancelled and the connection closed (default ${DEFAULT-VALUE}).")
    double writeTimeout;

    @Option(names = "--max-request-bytes", paramLabel = "BYTES", defaultValue = "8388608",
            description = "Largest request body; larger ones get 413 before they are read (default ${DEFAULT-VALUE}).")
    long maxRequestBytes;

    @Override
    public Integer call() throws IOException, InterruptedException {
        EngineOptions.Validated v = engineOptions.validate(spec);
        if (port < 0 || port > 65535) {
            throw CliSupport.usage(spec, "invalid value for --port: " + port + " (must be in 0..65535)");
        }
        if (maxWaiting < 0) {
            throw CliSupport.usage(spec, "invalid value for --max-waiting: " + maxWaiting + " (must be >= 0)");
        }
        if (shutdownGrace < 0) {
            throw CliSupport.usage(spec, "invalid value for --shutdown-grace: " + shutdownGrace + " (must be >= 0)");
        }
        if (maxRequestBytes <= 0) {
            throw CliSupport.invalid(spec, "--max-request-bytes", maxRequestBytes, "must be > 0");
        }
        HttpLimits limits;
        try {
            limits = new HttpLimits(seconds("--timeout-keep-alive", timeoutKeepAlive), seconds("--read-timeout", readTimeout),
                    seconds("--write-timeout", writeTimeout), maxRequestBytes);
        } catch (IllegalArgumentException e) {
            throw CliSupport.usage(spec, e.getMessage());
        }
        CliSupport.requirePositive(spec, "--max-running", maxRunning);
        CliSupport.requirePositive(spec, "--max-n", maxN);
        CliSupport.requirePositive(spec, "--max-loras", maxLoras);
        CliSupport.requirePositive(spec, "--max-lora-rank", maxLoraRank);
        CliSupport.requirePositive(spec, "--max-batch-tokens", maxBatchTokens);
        CliSupport.requirePositive(spec, "--kv-cache-mb", kvCacheMb);
        if (pages != null) {
            CliSupport.requirePositive(spec, "--pages", pages);
        }
        boolean cache = CliSupport.requireOneOf(spec, "--prefix-cache", prefixCache, "on", "off").equals("on");
        boolean warm = CliSupport.requireOneOf(spec, "--warmup", warmup, "on", "off").equals("on");
        Path dir = Path.of(v.model());
        boolean isDir = Files.isDirectory(dir);
        String name = servedModelName != null ? servedModelName
                : isDir ? dir.toAbsolutePath().normalize().getFileName().toString() : v.model();
        ServerConfig sc;
        EngineConfig ec;
        try {
            sc = new ServerConfig(host, port, name, maxWaiting, Duration.ofSeconds(shutdownGrace), limits, metricsPrefix,
                    trustRequestChatTemplate, new ChatOutputConfig(toolCallParser, enableAutoToolChoice,
                    excludeToolsWhenToolChoiceNone, reasoningParser));
            ec = EngineConfig.builder().model(v.model()).kvDtype(v.kvDtype()).pageSize(v.pageSize())
                    .backend(v.backend()).weightsDtype(v.weightsDtype()).packWeights(v.packWeights()).weightsQuant(v.weightsQuant()).maxRunning(maxRunning)
                    .maxBatchTokens(maxBatchTokens).numPages(pages == null ? 0 : pages)
                    .kvCacheBytes((long) kvCacheMb << 20).maxSeqLen(maxSeqLen).prefixCache(cache).maxSamples(maxN)
                    .maxLoras(maxLoras).maxLoraRank(maxLoraRank).build();
        } catch (IllegalArgumentException e) {
            throw CliSupport.usage(spec, e.getMessage());
        }
        PrintWriter out = spec.commandLine().getOut();
        if (tokenizerDir != null && !Files.isRegularFile(tokenizerDir.resolve("tokenizer.json"))) {
            throw CliSupport.invalid(spec, "--tokenizer", "'" + tokenizerDir + "'", "no tokenizer.json in it");
        }
        HfTokenizer tokenizer;
        try {
            tokenizer = ModelTokenizer.load(v.model(), tokenizerDir).orElse(null);
        } catch (UnsupportedTokenizerException e) {
            throw new UnsupportedTokenizerException(e.getMessage()
                    + " (--tokenizer DIR serves the model with its Hugging Face tokenizer files instead)");
        }
        if (kvEventsReplay != null && kvEvents == null) {
            throw CliSupport.usage(spec, "--kv-events-replay needs --kv-events");
        }
        KvTierExtension kv;
        try {
            kv = kvEvents == null && kvTier == null ? null : kvExtension();
        } catch (IllegalArgumentException e) {
            throw CliSupport.usage(spec, e.getMessage());
        }
        Map<String, Path> adapters = loraModules(name);
        Engine engine = null;
        OpenAiServer server;
        try {
            engine = Engine.start(ec, kv);
            for (Map.Entry<String, Path> a : adapters.entrySet()) {
                try {
                    engine.loadAdapter(a.getKey(), a.getValue());
                } catch (IllegalArgumentException | IllegalStateException ex) {
                    throw CliSupport.invalid(spec, "--lora-modules", "'" + a.getKey() + "=" + a.getValue() + "'",
                            ex.getMessage());
                }
            }
            if (warm) {
                EngineWarmup.Result w = engine.warmUp();
                out.printf(Locale.ROOT, "radixkv serve: warm-up: %d requests, %d prompt tokens, %d generated in %.1f s%n",
                        w.requests(), w.promptTokens(), w.generatedTokens(), w.nanos() / 1e9);
                out.flush();
            }
            server = OpenAiServer.start(engine, tokenizer, sc);
        } catch (RuntimeException e) {
            if (engine != null) {
                engine.close();
            }
            if (kv != null) {
                kv.close();
            }
            if (tokenizer != null) {
                tokenizer.close();
            }
            throw e;
        }
        server.allowRuntimeLoraUpdating(allowRuntimeLoraUpdating);
        if (kv != null) {
            kvMetrics(server, kv);
        }
        if (tokenizer == null) {
            out.println("radixkv serve: model '" + v.model() + "' has no tokenizer (tokenizer.json or GGUF tokenizer metadata; "
                    + "--tokenizer DIR names one): prompts must be token ids");
        }
        out.println("radixkv serve: model '" + name + "' listening on " + server.baseUri() + " (Ctrl-C or SIGTERM stops it)");
        out.flush();
        CountDownLatch stopped = new CountDownLatch(1);
        Engine e = engine;
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            try {
                server.shutdown();
                e.close();
                if (kv != null) {
                    kv.close();
                }
                if (tokenizer != null) {
                    tokenizer.close();
                }
            } finally {
                stopped.countDown();
                org.apache.logging.log4j.LogManager.shutdown(); // log4j's own hook is disabled (log4j2.xml)
            }
        }, "radixkv-serve-shutdown"));
        stopped.await();
        return Main.EXIT_OK;
    }

    /** {@code --lora-modules NAME=DIR ...} by name, in order; names must be distinct and not the served model's. */
    private Map<String, Path> loraModules(String servedName) {
        Map<String, Path> out = new LinkedHashMap<>();
        for (String m : loraModules) {
            int eq = m.indexOf('=');
            if (eq <= 0 || eq == m.length() - 1) {
                throw CliSupport.invalid(spec, "--lora-modules", "'" + m + "'", "expected NAME=DIR");
            }
            String n = m.substring(0, eq);
            if (n.equals(servedName) || out.put(n, Path.of(m.substring(eq + 1))) != null) {
                throw CliSupport.invalid(spec, "--lora-modules", "'" + m + "'", "the name " + n + " is already taken");
            }
        }
        return out;
    }

    /** A positive, finite number of seconds of at least a millisecond, as a duration. */
    private Duration seconds(String option, double value) {
        CliSupport.requirePositiveFinite(spec, option, value);
        if (value < 1e-3) {
            throw CliSupport.invalid(spec, option, value, "must be at least 0.001");
        }
        return Duration.ofNanos(Math.round(value * 1e9));
    }

    /** The KV event publisher's and the KV tier's counters on /metrics. */
    private static void kvMetrics(OpenAiServer server, KvTierExtension kv) {
        server.addCounter("kv_events_dropped", "KV events dropped because the publisher's queue was full",
                kv::eventsDropped);
        server.addCounter("kv_event_batches_published", "KV event batches published",
                kv::eventBatchesPublished);
        server.addCounter("kv_tier_pages_written", "KV pages stored in the shared tier",
                () -> kv.tierStats().pagesWritten());
        server.addCounter("kv_tier_bytes_written", "Bytes stored in the shared tier (headers included)",
                () -> kv.tierStats().bytesWritten());
        server.addCounter("kv_tier_writes_dropped",
                "KV pages not stored: queue full, byte budget spent or tier unreachable",
                () -> kv.tierStats().writesDropped());
        server.addCounter("kv_tier_pages_fetched", "KV pages loaded from the shared tier into the pool",
                () -> kv.tierStats().pagesFetched());
        server.addCounter("kv_tier_bytes_fetched", "Bytes loaded from the shared tier",
                () -> kv.tierStats().bytesFetched());
        server.addCounter("kv_tier_rejected",
                "Tier entries refused by the header check (foreign model or layout, corrupt, truncated)",
                () -> kv.tierStats().rejected());
        server.addCounter("kv_tier_errors", "Shared tier errors (each a miss or a dropped write)",
                () -> kv.tierStats().errors());
        server.addCounter("kv_tier_fetch_seconds", "Engine-thread time spent fetching from the shared tier",
                () -> kv.tierStats().fetchNanos() / 1e9);
    }

    private KvTierExtension kvExtension() {
        KvTierExtension.Builder b = KvTierExtension.builder().hashSeed(kvHashSeed);
        if (kvEvents != null) {
            b.kvEvents(kvEvents).replay(kvEventsReplay);
        }
        if (kvTier != null) {
            b.kvTier(kvTier).writeOnCache(kvTierWriteOnCache);
        }
        return b.build();
    }
}
