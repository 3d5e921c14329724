package io.radixkv.engine;

import io.radixkv.kernels.KernelBackend;
import io.radixkv.model.LlamaModel;
import io.radixkv.model.ModelConfig;
import io.radixkv.model.ModelWeights;
import io.radixkv.model.WeightsSummary;
import io.radixkv.model.SamplingParams;
import io.radixkv.model.TokenCounts;
import io.radixkv.platform.LargePages;
import io.radixkv.sched.FinishReason;
import io.radixkv.sched.Scheduler;
import io.radixkv.sched.SchedulerConfig;
import io.radixkv.sched.Sequence;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.IntConsumer;
import java.util.function.IntFunction;
import java.util.function.Supplier;
import java.util.function.UnaryOperator;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

/**
 * The serving engine: requests in, tokens out. One engine thread owns the scheduler, the KV
 * pages, the prefix cache and the kernels, and runs steps in this order:
 * retire finished → release (unlock cache nodes, free private pages) → capacity (free +
 * evictable pages) → admit → build the batch (decode tokens plus prefill chunks within the
 * token budget) → run → sample → stream. {@link #submit} and {@link RequestHandle#cancel} are
 * thread-safe; token listeners and result futures run on the engine thread.
 *
 * <p>Failures are per request: a malformed request is refused by {@link #submit}
 * (IllegalArgumentException), one that can never fit completes as REJECTED, a forward pass
 * that throws is retried one sequence at a time so only the culprit fails, and a sampling or
 * token-listener failure (Errors included) ends only its request. Once the engine stops
 * (close, an internal error, an interrupted engine thread) {@link #submit} refuses with an
 * IllegalStateException naming why; every request it accepted completes.
 *
 * <p>This class wires the parts together: {@link KvSizing} (pool and sequence limits),
 * {@link BackendChoice}, {@link ModelLoading}, {@link KvState} (pool, pages, prefix cache),
 * {@link EngineLoop} (engine thread and inbox), {@link StepExecutor} (one step),
 * {@link TokenStreamer} (sampling, listeners, results) and {@link EngineCounters} (stats).
 */
public final class Engine implements AutoCloseable {
    private static final Logger LOG = LogManager.getLogger(Engine.class);

    /**
     * Observes the logits each token is sampled from: {@code outputIndex} 0 is the last prompt
     * position's (parity checks against other engines). Called on the engine thread for every
     * sampled token with a copy of the {@code vocab} logits, so it must be quick; an exception
     * from it fails that request.
     */
    @FunctionalInterface
    public interface LogitsProbe {
        void onLogits(String requestId, int outputIndex, float[] logits);
    }

    private final EngineConfig config;
    private final ModelConfig modelConfig;
    private final KernelBackend backend;
    private final ModelWeights weights;
    private final boolean ownsWeights;
    private final KvState kv;
    private final Scheduler scheduler;
    private final LlamaModel model;
    private final ModelRunner runner;
    private final EngineCounters counters;
    private final TokenStreamer streamer;
    private final StepExecutor executor;
    private final EngineLoop loop;
    private final EngineAdapters adapters;
    private final AtomicLong order = new AtomicLong();

    private Engine(EngineConfig config, KernelBackend backend, ModelWeights weights, boolean ownsWeights,
                   UnaryOperator<ModelRunner.Forward> forwardWrapper, KvExtension extension) {
        this.config = config;
        this.modelConfig = weights.config();
        this.backend = backend;
        this.weights = weights;
        this.ownsWeights = ownsWeights;
        KvSizing sizing = KvSizing.of(config, modelConfig);
        this.kv = new KvState(config, modelConfig, sizing, backend.memory(), extension);
        this.scheduler = new Scheduler(new SchedulerConfig(config.maxRunning(), config.maxBatchTokens(),
                config.decodeReserveFraction(), sizing.maxSeqLen()), kv.manager());
        this.model = new LlamaModel(modelConfig, weights, backend.dense(), backend, config.maxBatchTokens());
        this.adapters = new EngineAdapters(modelConfig, backend.dense(), !backend.deviceMemory(), backend.name(),
                config.maxLoras(), config.maxLoraRank(), config.maxRunning());
        adapters.attach(scheduler, kv);
        if (extension != null) {
            extension.adapters(adapters::identity);
        }
        model.setProjectionDelta(adapters.step());
        ModelRunner.Forward forward = model::forward;
        if (forwardWrapper != null) {
            forward = forwardWrapper.apply(forward);
        }
        this.runner = new ModelRunner(forward, kv.pool().layers(), kv.sequences(), config.maxRunning(),
                config.maxBatchTokens(), modelConfig.vocab(), backend.memory(), StepLogprobs::promptLogitsFrom);
        this.counters = new EngineCounters(kv, scheduler);
        kv.manager().setPageCopier(kv.pool().copier(backend.kv())); // a forked sample's copy of a partial page
        this.streamer = new TokenStreamer(scheduler, runner, backend.sampling().orElse(null), counters,
                backend.logprobs().orElse(null), new ConstrainedRows(scheduler, backend.tokenBitmask()));
        this.executor = new StepExecutor(scheduler, runner, counters, streamer, adapters);
        this.loop = new EngineLoop(executor);
    }

    /**
     * Loads the model, allocates the KV pool and starts the engine thread.
     *
     * @throws IllegalArgumentException for an invalid configuration (message names the setting)
     * @throws UncheckedIOException when a checkpoint cannot be read
     */
    public static Engine start(EngineConfig config) {
        return start(config, (UnaryOperator<ModelRunner.Forward>) null);
    }

    /**
     * {@link #start(EngineConfig)} with a {@link KvExtension} attached to the KV memory (KV events,
     * an external KV tier); null is the same as {@link #start(EngineConfig)}.
     */
    public static Engine start(EngineConfig config, KvExtension extension) {
        return start(config, () -> BackendChoice.create(config.backend()), null, null, extension);
    }

    /** {@link #start(EngineConfig)} with the forward pass wrapped (tests: failure injection). */
    static Engine start(EngineConfig config, UnaryOperator<ModelRunner.Forward> forwardWrapper) {
        return start(config, () -> BackendChoice.create(config.backend()), forwardWrapper);
    }

    /** {@link #start(EngineConfig)} on a given backend (tests), with an optional forward wrapper. */
    static Engine start(EngineConfig config, Supplier<KernelBackend> backendFactory,
                        UnaryOperator<ModelRunner.Forward> forwardWrapper) {
        return start(config, backendFactory, null, forwardWrapper);
    }

    /**
     * Tests: on a given backend, with weights loaded once and shared by several engines
     * ({@code sharedWeights}, not closed by the engine; null = load per {@code config}).
     */
    static Engine start(EngineConfig config, Supplier<KernelBackend> backendFactory, ModelWeights sharedWeights,
                        UnaryOperator<ModelRunner.Forward> forwardWrapper) {
        return start(config, backendFactory, sharedWeights, forwardWrapper, null);
    }

    /** The full form (tests: shared weights with a {@link KvExtension}); every other {@code start} calls it. */
    static Engine start(EngineConfig config, Supplier<KernelBackend> backendFactory, ModelWeights sharedWeights,
                        UnaryOperator<ModelRunner.Forward> forwardWrapper, KvExtension extension) {
        Objects.requireNonNull(config, "config");
        boolean own = sharedWeights == null;
        ModelWeights weights = own ? ModelLoading.load(config) : sharedWeights;
        KernelBackend backend = null;
        try {
            backend = backendFactory.get();
            LlamaModel.requireWeightDtype(backend.dense(), weights.dtype()); // before any upload
            if (backend.deviceMemory()) {
                // the model runs where its backend's memory is: upload once, free the host copy we own
                long t0 = System.nanoTime();
                ModelWeights onDevice = weights.copyTo(backend.memory());
                LOG.info("weights uploaded to {}: {} MB in {} ms", backend.name(), weights.bytes() >> 20,
                        (System.nanoTime() - t0) / 1_000_000);
                if (own) {
                    weights.close();
                }
                weights = onDevice;
                own = false; // freed with the backend's memory
            } else if (config.packWeights() && own) {
                long t0 = System.nanoTime();
                if (weights.packLinearWeights(backend.dense())) {
                    LOG.info("linear weights packed for the {} dense kernels (layers {}, LM head {}) in {} ms",
                            backend.dense().name(), weights.layersPacked(), weights.lmHeadPacked(),
                            (System.nanoTime() - t0) / 1_000_000);
                }
            }
            Engine e = new Engine(config, backend, weights, own, forwardWrapper, extension);
            e.loop.start();
            LOG.info("engine started: model {} ({} layers), backend {}, {} KV pages of {} tokens ({}), prefix cache {}, "
                    + "host memory: {}", config.model(), weights.config().layers(), backend.name(), e.numPages(),
                    config.pageSize(), config.kvDtype(), config.prefixCache() ? "on" : "off", LargePages.describe());
            return e;
        } catch (RuntimeException | Error ex) {
            if (backend != null) {
                backend.close();
            }
            if (own) {
                weights.close();
            }
            throw ex;
        }
    }

    public EngineConfig config() {
        return config;
    }

    public ModelConfig modelConfig() {
        return modelConfig;
    }

    /** What the model's weights are held as: formats, bytes per weight, bytes a decode step streams. */
    public WeightsSummary weightsSummary() {
        return weights.summary();
    }

    /** True when the layers' linear weights are in the dense kernels' packed layout ({@link EngineConfig#packWeights}). */
    public boolean linearWeightsPacked() {
        return weights.layersPacked();
    }

    /** KV pool size in pages. */
    public int numPages() {
        return kv.allocator().numPages();
    }

    /** Submits a request; see {@link #submit(GenerateRequest, IntConsumer)}. */
    public RequestHandle submit(GenerateRequest request) {
        return submit(request, null);
    }

    /**
     * Submits a request. Thread-safe.
     *
     * @param onToken called on the engine thread with every generated token as it is sampled
     *     (may be null); if it throws (anything, Errors included), that request ends as
     *     ERROR naming the throwable and the engine goes on serving the others
     * @return a handle whose result completes when the request ends; already completed as
     *     REJECTED when the request can never fit the KV pool or the sequence limit
     * @throws IllegalArgumentException for a malformed request (token id outside the
     *     vocabulary, non-positive maxTokens, ...), before anything is queued
     * @throws IllegalStateException once the engine no longer serves: after {@link #close()}
     *     began, after an internal error, or after its thread was interrupted (the message
     *     says which); a request is either refused this way or always completes
     */
    public RequestHandle submit(GenerateRequest request, IntConsumer onToken) {
        return submit(request, onToken, true);
    }

    /**
     * Submits a request for {@code n} samples. Thread-safe. The prompt is prefilled once; then
     * n sequences share its pages (its full pages by reference, each with a copy of its partial
     * last page) and sample i draws from seed + i, so its tokens are those of the same request of
     * one sample with seed + i. Each sample ends on its own (stop token, length) with its own
     * result; admission counts all n against {@link EngineConfig#maxRunning}.
     *
     * @param n samples, 1 .. {@link EngineConfig#maxSamples}
     * @param onToken called on the engine thread with each sample's tokens (may be null); if it
     *     throws, that sample ends as ERROR
     * @throws IllegalArgumentException for a malformed request or an n out of range, before
     *     anything is queued
     * @throws IllegalStateException once the engine no longer serves (see
     *     {@link #submit(GenerateRequest, IntConsumer)})
     */
    public MultiSampleHandle submit(GenerateRequest request, int n, SampleTokenListener onToken) {
        return submit(request, n, i -> onToken == null ? null : t -> onToken.onToken(i, t), true);
    }

    /** {@link #submit(GenerateRequest, IntConsumer)}; {@code usesPrefixCache} false bypasses the cache (warm-up). */
    RequestHandle submit(GenerateRequest request, IntConsumer onToken, boolean usesPrefixCache) {
        return submit(request, 1, i -> onToken, usesPrefixCache).sample(0);
    }

    /** Every submission: sample i's token listener is {@code listeners.apply(i)}. */
    private MultiSampleHandle submit(GenerateRequest request, int n, IntFunction<IntConsumer> listeners,
                                     boolean usesPrefixCache) {
        Objects.requireNonNull(request, "request");
        String refusal = loop.refusal();
        if (refusal != null) {
            throw new IllegalStateException(refusal);
        }
        int[] prompt = request.promptTokens().clone();
        int vocab = modelConfig.vocab();
        for (int i = 0; i < prompt.length; i++) {
            if (prompt[i] < 0 || prompt[i] >= vocab) {
                throw new IllegalArgumentException("request " + request.id() + ": prompt token " + i + " = " + prompt[i]
                        + " is outside the vocabulary [0, " + vocab + ")");
            }
        }
        SamplingParams p = request.params();
        if (p.maxTokens() <= 0) {
            throw new IllegalArgumentException("request " + request.id() + ": maxTokens must be positive, got "
                    + p.maxTokens());
        }
        SamplingChecks.requireInVocabulary(request.id(), p, vocab);
        LogprobOptions lp = request.logprobs();
        if (lp.any() && backend.logprobs().isEmpty()) {
            throw new IllegalArgumentException("request " + request.id() + ": the " + backend.name()
                    + " backend computes no log-probabilities");
        }
        if (Math.max(lp.topK(), lp.promptTopK()) > vocab) {
            throw new IllegalArgumentException("request " + request.id() + ": " + Math.max(lp.topK(), lp.promptTopK())
                    + " top log-probabilities asked of a vocabulary of " + vocab);
        }
        if (request.grammar() != null && request.grammar().vocabulary().size() != vocab) {
            throw new IllegalArgumentException("request " + request.id() + ": its grammar's vocabulary has "
                    + request.grammar().vocabulary().size() + " tokens, the model's " + vocab);
        }
        if (n < 1 || n > config.maxSamples()) {
            throw new IllegalArgumentException("request " + request.id() + ": n (samples) must be in 1.."
                    + config.maxSamples() + " (maxSamples), got " + n);
        }
        if (request.lora() != null) {
            adapters.require(request.id(), request.lora());
        }
        List<RequestHandle> handles = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            handles.add(new RequestHandle(i == 0 ? request.id() : request.id() + "/" + i, loop::wake));
        }
        RequestHandle handle = handles.get(0);
        SampleGroup group = n == 1 ? null : new SampleGroup(p, handles, listeners);
        RequestState state = new RequestState(handle, p, listeners.apply(0),
                p.needsTokenCounts() ? new TokenCounts(prompt) : null, lp.any() ? new RequestLogprobs(lp) : null,
                request.grammar() == null ? null : request.grammar().newMatcher(), group);
        // a cached page has no logits: prompt log-probabilities need the whole prompt computed
        Sequence s = new Sequence(order.getAndIncrement(), request.id(), request.ns(), prompt, p.maxTokens(),
                p.stopTokenIds().stream().mapToInt(Integer::intValue).toArray(), state, System.nanoTime(),
                usesPrefixCache && !lp.prompt());
        if (lp.prompt()) {
            s.wantPromptLogits();
        }
        s.setSamples(n);
        handle.bind(s);
        MultiSampleHandle all = new MultiSampleHandle(request.id(), handles);
        String why = scheduler.whyNeverFits(s); // reads only immutable limits: safe off the engine thread
        if (why != null) {
            RequestStats stats = EngineCounters.requestStats(s, System.nanoTime());
            for (RequestHandle h : handles) {
                h.complete(new RequestResult(h.id(), new int[0], FinishReason.REJECTED, stats, why));
            }
            return all;
        }
        loop.post(() -> {
            counters.countSubmitted();
            if (!adapters.stillLoaded(s)) {
                handle.complete(new RequestResult(request.id(), new int[0], FinishReason.ERROR,
                        EngineCounters.requestStats(s, System.nanoTime()),
                        "LoRA adapter " + request.lora() + " was unloaded"));
                return;
            }
            scheduler.enqueue(s);
        });
        return all;
    }

    /**
     * Runs the requests one after another (each submitted when the previous one finished, so
     * later ones reuse earlier ones' cached prefixes) and returns their results in order.
     */
    public List<RequestResult> runToCompletion(List<GenerateRequest> requests) {
        List<RequestResult> out = new ArrayList<>(requests.size());
        for (GenerateRequest r : requests) {
            out.add(join(submit(r).result()));
        }
        return out;
    }

    /** Submits all requests at once (in order) and waits for all; results in request order. */
    public List<RequestResult> runConcurrently(List<GenerateRequest> requests) {
        return runConcurrently(requests, true);
    }

    /** {@link #runConcurrently(List)}; {@code usesPrefixCache} false bypasses the cache (warm-up). */
    List<RequestResult> runConcurrently(List<GenerateRequest> requests, boolean usesPrefixCache) {
        List<RequestHandle> handles = new ArrayList<>(requests.size());
        for (GenerateRequest r : requests) {
            handles.add(submit(r, null, usesPrefixCache));
        }
        List<RequestResult> out = new ArrayList<>(handles.size());
        for (RequestHandle h : handles) {
            out.add(join(h.result()));
        }
        return out;
    }

    private static RequestResult join(CompletableFuture<RequestResult> f) {
        try {
            return f.get();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while waiting for a request", e);
        } catch (ExecutionException e) {
            throw new IllegalStateException("request failed: " + e.getCause(), e.getCause());
        }
    }

    /**
     * Runs a few short requests through prefill and decode so that the first client's request
     * does not pay for JIT compilation and the kernels' first calls (as SGLang's and llama.cpp's
     * servers warm up before serving). The requests bypass the prefix cache, so the cache, KV
     * events and a KV tier see nothing of them; the engine's counters ({@link #snapshot}) include
     * them. Call it before serving; it blocks until they end.
     *
     * @throws IllegalStateException when a warm-up request fails (the message names why): the
     *     engine cannot serve
     */
    public EngineWarmup.Result warmUp() {
        int pool = (int) Math.min(Integer.MAX_VALUE, (long) numPages() * config.pageSize());
        return EngineWarmup.run(this, Math.min(scheduler.config().maxSeqLen(), pool));
    }

    /**
     * Reads the PEFT LoRA adapter in {@code dir} and serves it under {@code name}: a request selects
     * it with {@code Namespace.ofLora(name)} (or a namespace with that {@code loraId} and a cache
     * salt). The adapter is checked against the model and {@link EngineConfig#maxLoraRank} here
     * (caller's thread) and copied into one of the {@link EngineConfig#maxLoras} slots when a
     * request first needs it. Thread-safe.
     *
     * @throws IllegalArgumentException with one line naming what is wrong with the adapter, or
     *     when {@code name} is already loaded
     * @throws IllegalStateException on a backend that does not run adapters (CUDA)
     */
    public void loadAdapter(String name, java.nio.file.Path dir) {
        Objects.requireNonNull(dir, "dir");
        adapters.load(name, dir);
    }

    /**
     * Stops serving adapter {@code name}: new requests naming it are refused at once; the requests
     * already queued or running under it finish normally, and then its slot and its cached KV
     * pages are dropped and the returned future completes. Thread-safe.
     *
     * @throws IllegalArgumentException when no adapter of that name is loaded (or it is already
     *     being unloaded)
     */
    public CompletableFuture<Void> unloadAdapter(String name) {
        adapters.beginUnload(name);
        CompletableFuture<Void> done = new CompletableFuture<>();
        loop.post(() -> adapters.finishUnload(name, done));
        return done;
    }

    /** The adapters requests may name now (sorted). */
    public List<String> adapters() {
        return adapters.names();
    }

    /** The directory adapter {@code name} was loaded from, or null when no such adapter serves requests. */
    public java.nio.file.Path adapterDir(String name) {
        return adapters.dirOf(name);
    }

    /** The adapters of the running and waiting requests at the end of the last step, and the slot count. */
    public LoraStats loraStats() {
        return adapters.stats();
    }

    /** Adapter slot loads and evictions so far (tests). */
    long[] loraSlotCounts() {
        return onEngineThread(adapters::slotCounts);
    }

    /** The latest counters (published by the engine thread after every step). */
    public EngineStats snapshot() {
        return counters.latest();
    }

    /** Sets (or with null removes) the one logits probe; it sees the tokens sampled from then on. */
    public void setLogitsProbe(LogitsProbe probe) {
        streamer.setProbe(probe);
    }

    /**
     * Runs {@code task} on the engine thread between steps and waits for it (tests: invariant
     * checks see a consistent state).
     */
    <T> T onEngineThread(Supplier<T> task) {
        return loop.call(task);
    }

    /**
     * Checks page conservation on the engine thread (see {@link KvState#checkInvariants});
     * with {@code expectIdle}, also that no request holds a page. Throws
     * IllegalStateException describing a violation.
     */
    void checkInvariants(boolean expectIdle) {
        onEngineThread(() -> {
            kv.checkInvariants(scheduler, expectIdle);
            return null;
        });
    }

    /**
     * Where the engine thread's step time went, over whole steps (measurements of per-step
     * overhead). From a token listener (mid-step) it is the reading at the end of the previous step.
     */
    StepBreakdown stepBreakdown() {
        return loop.isEngineThread() ? executor.lastStepEnd() : onEngineThread(executor::breakdown);
    }

    /** Evicts every unlocked cached page (tests: cold cache). Returns pages freed. */
    int evictAll() {
        return onEngineThread(kv::evictAll);
    }

    /**
     * Stops the engine thread (requests still queued or running end as ABORTED) and frees
     * the KV pool, the model and the backend.
     */
    @Override
    public void close() {
        if (loop.isEngineThread()) {
            throw new IllegalStateException("close() called on the engine thread (from a listener or a result callback)");
        }
        if (loop.closing()) {
            return;
        }
        if (!loop.stop(TimeUnit.SECONDS.toMillis(30))) {
            LOG.warn("engine thread did not stop within 30 s; leaking its memory rather than freeing it under it");
            return;
        }
        runner.close();
        model.close();
        adapters.close();
        kv.close();
        backend.close();
        if (ownsWeights) {
            weights.close();
        }
    }
}
