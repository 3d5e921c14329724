package io.radixkv.engine;

import io.radixkv.cache.RadixCache;
import io.radixkv.kernels.Backends;
import io.radixkv.kernels.CpuDenseKernels;
import io.radixkv.kernels.DType;
import io.radixkv.kernels.DenseKernels;
import io.radixkv.kernels.JavaDenseKernels;
import io.radixkv.kernels.KernelBackend;
import io.radixkv.kernels.PagedKvLayout;
import io.radixkv.model.LlamaModel;
import io.radixkv.model.ModelConfig;
import io.radixkv.model.ModelPresets;
import io.radixkv.model.ModelWeights;
import io.radixkv.model.Sampler;
import io.radixkv.model.SamplingParams;
import io.radixkv.paging.BlockAllocator;
import io.radixkv.paging.KvPool;
import io.radixkv.paging.KvSequences;
import io.radixkv.sched.FinishReason;
import io.radixkv.sched.KvManager;
import io.radixkv.sched.PrefixStore;
import io.radixkv.sched.RadixPrefixStore;
import io.radixkv.sched.Scheduler;
import io.radixkv.sched.SchedulerConfig;
import io.radixkv.sched.Sequence;
import io.radixkv.sched.StepPlan;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.IntConsumer;
import java.util.function.Supplier;
import java.util.function.UnaryOperator;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

/**
 * The serving engine: requests in, tokens out. One engine thread owns the scheduler, the KV
 * pages, the prefix cache and the kernels, and runs steps (seed 002's order):
 * retire finished → release (unlock cache nodes, free private pages) → capacity (free +
 * evictable pages) → admit → build the batch (decode tokens plus prefill chunks within the
 * token budget) → run → sample → stream. {@link #submit} and {@link RequestHandle#cancel} are
 * thread-safe; token listeners and result futures run on the engine thread.
 *
 * <p>Failures are per request: a malformed request is refused by {@link #submit}
 * (IllegalArgumentException), one that can never fit completes as REJECTED, and a forward
 * pass that throws is retried one sequence at a time so only the culprit fails.
 */
public final class Engine implements AutoCloseable {
    private static final Logger LOG = LogManager.getLogger(Engine.class);

    /** Observes the logits a token is sampled from (tests: parity of last-prompt logits). */
    @FunctionalInterface
    interface LogitsProbe {
        void onLogits(String requestId, int outputIndex, float[] logits);
    }

    /** Per-request engine state attached to its {@link Sequence}. */
    private record Attachment(RequestHandle handle, SamplingParams params, IntConsumer listener) {}

    private final EngineConfig config;
    private final ModelConfig modelConfig;
    private final KernelBackend backend;
    private final ModelWeights weights;
    private final boolean ownsWeights;
    private final KvPool pool;
    private final BlockAllocator allocator;
    private final KvSequences seqs;
    private final RadixCache cache;
    private final KvManager kv;
    private final Scheduler scheduler;
    private final LlamaModel model;
    private final ModelRunner runner;
    private final Thread thread;
    private final LinkedBlockingQueue<Runnable> inbox = new LinkedBlockingQueue<>();
    private final AtomicLong order = new AtomicLong();
    private volatile boolean closing;
    private volatile String fatal;
    private volatile EngineStats stats;
    private volatile LogitsProbe logitsProbe;

    // engine-thread counters
    private long steps;
    private long submitted;
    private long finished;
    private long decodeTokens;
    private long evictedPages;
    private long forwardNanos;
    private long stepNanos;
    private int peakPinned;
    private int peakAllocated;

    private Engine(EngineConfig config, ModelConfig modelConfig, KernelBackend backend, ModelWeights weights,
                   boolean ownsWeights, UnaryOperator<ModelRunner.Forward> forwardWrapper) {
        this.ownsWeights = ownsWeights;
        this.config = config;
        this.modelConfig = modelConfig;
        this.backend = backend;
        this.weights = weights;
        int ps = config.pageSize();
        int maxSeqLen = config.maxSeqLen() == 0 ? modelConfig.maxPositions() : config.maxSeqLen();
        if (maxSeqLen > modelConfig.maxPositions()) {
            throw new IllegalArgumentException("maxSeqLen " + maxSeqLen + " exceeds the model's maximum of "
                    + modelConfig.maxPositions() + " positions");
        }
        long bytesPerPage = KvPool.bytesPerPage(modelConfig.layers(), config.kvDtype(), ps, modelConfig.kvHeads(),
                modelConfig.headDim());
        int numPages = config.numPages() > 0 ? config.numPages()
                : KvPool.pagesForBudget(config.kvCacheBytes(), modelConfig.layers(), config.kvDtype(), ps,
                        modelConfig.kvHeads(), modelConfig.headDim());
        if (numPages == 0) {
            throw new IllegalArgumentException("kvCacheBytes " + config.kvCacheBytes() + " holds no KV page: one page of "
                    + ps + " tokens takes " + bytesPerPage + " bytes for this model (" + modelConfig.layers()
                    + " layers, " + modelConfig.kvHeads() + " KV heads of " + modelConfig.headDim() + ", "
                    + config.kvDtype() + ")");
        }
        if (numPages < 2) {
            throw new IllegalArgumentException("the KV pool must hold at least 2 pages, got " + numPages);
        }
        int maxPagesPerSeq = (int) Math.min((maxSeqLen + (long) ps - 1) / ps, numPages);
        PagedKvLayout layout = new PagedKvLayout(config.kvDtype(), numPages, ps, modelConfig.kvHeads(),
                modelConfig.headDim());
        this.pool = new KvPool(backend.memory(), modelConfig.layers(), layout, config.kvScale(), config.kvScale());
        this.allocator = new BlockAllocator(numPages);
        this.seqs = new KvSequences(allocator, ps, config.maxRunning(), maxPagesPerSeq);
        PrefixStore store;
        if (config.prefixCache()) {
            this.cache = new RadixCache(ps, config.evictionPolicy(), (pages, off, len) -> {
                allocator.freeCached(pages, off, len);
                evictedPages += len;
            });
            store = new RadixPrefixStore(cache, ps);
        } else {
            this.cache = null;
            store = PrefixStore.disabled();
        }
        this.kv = new KvManager(seqs, store);
        this.scheduler = new Scheduler(new SchedulerConfig(config.maxRunning(), config.maxBatchTokens(),
                config.decodeReserveFraction()), kv);
        DenseKernels dense = backend.name().equals("java") ? new JavaDenseKernels() : new CpuDenseKernels();
        this.model = new LlamaModel(modelConfig, weights, dense, backend, config.maxBatchTokens());
        ModelRunner.Forward forward = model::forward;
        if (forwardWrapper != null) {
            forward = forwardWrapper.apply(forward);
        }
        this.runner = new ModelRunner(forward, pool.layers(), seqs, config.maxRunning(), config.maxBatchTokens(),
                modelConfig.vocab(), backend.memory());
        this.stats = buildStats();
        this.thread = Thread.ofPlatform().name("radixkv-engine").daemon(true).unstarted(this::loop);
    }

    /**
     * Loads the model, allocates the KV pool and starts the engine thread.
     *
     * @throws IllegalArgumentException for an invalid configuration (message names the setting)
     * @throws UncheckedIOException when a checkpoint cannot be read
     */
    public static Engine start(EngineConfig config) {
        return start(config, null);
    }

    /** {@link #start(EngineConfig)} with the forward pass wrapped (tests: failure injection). */
    static Engine start(EngineConfig config, UnaryOperator<ModelRunner.Forward> forwardWrapper) {
        return start(config, () -> createBackend(config.backend()), forwardWrapper);
    }

    /**
     * The model runs its dense math on the host, so it needs a host-memory backend: "auto"
     * takes the CPU backend even where CUDA is present (with a log line); "cuda" is refused.
     */
    private static KernelBackend createBackend(String choice) {
        if (choice.equals("cuda")) {
            throw new IllegalArgumentException("backend cuda: the model runner computes on the host and needs a "
                    + "host-memory backend (cpu, java or auto)");
        }
        KernelBackend b = Backends.create(choice);
        if (b.deviceMemory()) {
            LOG.info("backend auto chose {}, but the model runner needs host memory: using the CPU backend", b.name());
            b.close();
            b = Backends.create("cpu");
        }
        return b;
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
        Objects.requireNonNull(config, "config");
        boolean own = sharedWeights == null;
        ModelWeights weights = own ? loadWeights(config) : sharedWeights;
        KernelBackend backend = null;
        try {
            backend = backendFactory.get();
            Engine e = new Engine(config, weights.config(), backend, weights, own, forwardWrapper);
            e.thread.start();
            LOG.info("engine started: model {} ({} layers), backend {}, {} KV pages of {} tokens ({}), prefix cache {}",
                    config.model(), weights.config().layers(), backend.name(), e.allocator.numPages(),
                    config.pageSize(), config.kvDtype(), config.prefixCache() ? "on" : "off");
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

    private static ModelWeights loadWeights(EngineConfig config) {
        String m = config.model().trim();
        if (ModelPresets.names().contains(m.toLowerCase(java.util.Locale.ROOT))) {
            return ModelWeights.random(ModelPresets.byName(m), config.weightsDtype(), config.weightsSeed());
        }
        Path dir = Path.of(m);
        if (!Files.isDirectory(dir)) {
            throw new IllegalArgumentException("model '" + m + "' is neither a preset " + ModelPresets.names()
                    + " nor a checkpoint directory");
        }
        try {
            return ModelWeights.load(dir, config.weightsDtype());
        } catch (IOException e) {
            throw new UncheckedIOException("cannot load checkpoint " + dir + ": " + e.getMessage(), e);
        }
    }

    public EngineConfig config() {
        return config;
    }

    public ModelConfig modelConfig() {
        return modelConfig;
    }

    /** KV pool size in pages. */
    public int numPages() {
        return allocator.numPages();
    }

    /** Submits a request; see {@link #submit(GenerateRequest, IntConsumer)}. */
    public RequestHandle submit(GenerateRequest request) {
        return submit(request, null);
    }

    /**
     * Submits a request. Thread-safe.
     *
     * @param onToken called on the engine thread with every generated token as it is sampled
     *     (may be null); if it throws, the request is cancelled with an error
     * @return a handle whose result completes when the request ends; already completed as
     *     REJECTED when the request can never fit the KV pool or the sequence limit
     * @throws IllegalArgumentException for a malformed request (token id outside the
     *     vocabulary, non-positive maxTokens, ...), before anything is queued
     * @throws IllegalStateException after {@link #close()}
     */
    public RequestHandle submit(GenerateRequest request, IntConsumer onToken) {
        Objects.requireNonNull(request, "request");
        if (closing) {
            throw new IllegalStateException("the engine is closed");
        }
        if (fatal != null) {
            throw new IllegalStateException("the engine stopped after an internal error: " + fatal);
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
        RequestHandle handle = new RequestHandle(request.id(), () -> inbox.add(() -> { }));
        Sequence s = new Sequence(order.getAndIncrement(), request.id(), request.ns(), prompt, p.maxTokens(),
                p.stopTokenIds().stream().mapToInt(Integer::intValue).toArray(), new Attachment(handle, p, onToken), System.nanoTime());
        handle.bind(s);
        String why = scheduler.whyNeverFits(s); // reads only immutable limits: safe off the engine thread
        if (why != null) {
            handle.complete(new RequestResult(request.id(), new int[0], FinishReason.REJECTED, statsOf(s, System.nanoTime()),
                    why));
            return handle;
        }
        inbox.add(() -> {
            submitted++;
            scheduler.enqueue(s);
        });
        return handle;
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
        List<RequestHandle> handles = new ArrayList<>(requests.size());
        for (GenerateRequest r : requests) {
            handles.add(submit(r));
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

    /** The latest counters (published by the engine thread after every step). */
    public EngineStats snapshot() {
        return stats;
    }

    void setLogitsProbe(LogitsProbe probe) {
        this.logitsProbe = probe;
    }

    /**
     * Runs {@code task} on the engine thread between steps and waits for it (tests: invariant
     * checks see a consistent state).
     */
    <T> T onEngineThread(java.util.function.Supplier<T> task) {
        CompletableFuture<T> f = new CompletableFuture<>();
        inbox.add(() -> {
            try {
                f.complete(task.get());
            } catch (Throwable t) {
                f.completeExceptionally(t);
            }
        });
        try {
            return f.get(60, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            if (e.getCause() instanceof RuntimeException re) {
                throw re;
            }
            throw new IllegalStateException(e.getCause());
        } catch (Exception e) {
            throw new IllegalStateException("engine thread did not run the task: " + e, e);
        }
    }

    /**
     * Checks page conservation on the engine thread: the allocator's and page tables'
     * invariants, the cache's ownership matching the allocator's CACHED pages, and, when
     * {@code expectIdle}, that no request holds a page (no leak: every allocated page is
     * the cache's). Throws IllegalStateException describing a violation.
     */
    void checkInvariants(boolean expectIdle) {
        onEngineThread(() -> {
            kv.checkInvariants();
            int cachedByCache = cache == null ? 0 : (int) cache.metrics().cachedPages();
            if (cachedByCache != allocator.cachedPages()) {
                throw new IllegalStateException("the cache owns " + cachedByCache + " pages but the allocator has "
                        + allocator.cachedPages() + " CACHED pages");
            }
            if (expectIdle) {
                if (scheduler.runningCount() != 0 || scheduler.waitingCount() != 0) {
                    throw new IllegalStateException("engine not idle: " + scheduler.runningCount() + " running, "
                            + scheduler.waitingCount() + " waiting");
                }
                if (allocator.privatePages() != 0 || seqs.openCount() != 0) {
                    throw new IllegalStateException("leak: " + allocator.privatePages() + " private pages and "
                            + seqs.openCount() + " open sequences with no request running");
                }
                if (cache != null && cache.metrics().protectedPages() != 0) {
                    throw new IllegalStateException("leak: " + cache.metrics().protectedPages()
                            + " cached pages still locked with no request running");
                }
                if (allocator.freePages() + allocator.cachedPages() != allocator.numPages()) {
                    throw new IllegalStateException("free " + allocator.freePages() + " + cached "
                            + allocator.cachedPages() + " != " + allocator.numPages());
                }
            }
            return null;
        });
    }

    /** Evicts every unlocked cached page (tests: cold cache). Returns pages freed. */
    int evictAll() {
        return onEngineThread(() -> cache == null ? 0 : (int) cache.evict(allocator.numPages()));
    }

    // ---------------------------------------------------------------- engine thread

    private void loop() {
        List<Runnable> batch = new ArrayList<>();
        while (!closing) {
            try {
                if (!scheduler.hasWork()) {
                    Runnable r = inbox.poll(50, TimeUnit.MILLISECONDS);
                    if (r != null) {
                        r.run();
                    }
                }
                inbox.drainTo(batch);
                for (Runnable r : batch) {
                    r.run();
                }
                batch.clear();
                if (scheduler.hasWork()) {
                    step();
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            } catch (Throwable t) {
                // a bug in the engine itself (not one request's failure): stop serving cleanly
                LOG.error("engine step failed; aborting all requests", t);
                fatal = String.valueOf(t);
                abortAll("engine error: " + t);
                break;
            }
        }
        // anything still queued (submissions racing close) must not hang
        List<Runnable> rest = new ArrayList<>();
        inbox.drainTo(rest);
        for (Runnable r : rest) {
            try {
                r.run();
            } catch (RuntimeException ignored) {
                // enqueue into a stopped scheduler: aborted below
            }
        }
        abortAll(fatal != null ? "engine error: " + fatal : "the engine was closed");
    }

    private void abortAll(String why) {
        report(scheduler.abortAll(why), System.nanoTime());
    }

    private void step() {
        long now = System.nanoTime();
        try {
            stepInner(now);
        } finally {
            stepNanos += System.nanoTime() - now;
        }
        // requests that finished in this step are retired (pages released, results completed) at
        // the start of the next one: the loop runs another step while the scheduler holds them
        publishStats();
    }

    private void stepInner(long now) {
        report(scheduler.retire(), now);
        scheduler.admit(now);
        StepPlan plan = scheduler.plan();
        notePeaks();
        if (!plan.isEmpty()) {
            steps++;
            execute(plan.entries());
        }
    }

    /** Forward + commit + sample; on a forward failure, isolates the failing sequence(s). */
    private void execute(List<StepPlan.Entry> entries) {
        long t0 = System.nanoTime();
        try {
            runner.run(entries);
        } catch (RuntimeException e) {
            forwardNanos += System.nanoTime() - t0;
            if (entries.size() == 1) {
                Sequence s = entries.get(0).seq();
                LOG.warn("request {} failed in the forward pass: {}", s.id(), e.toString());
                scheduler.fail(s, "forward pass failed: " + e.getMessage());
                return;
            }
            // nothing was committed: rerun one sequence at a time so only the culprit fails
            for (StepPlan.Entry one : entries) {
                execute(List.of(one));
            }
            return;
        }
        long now = System.nanoTime();
        forwardNanos += now - t0;
        int row = 0;
        for (StepPlan.Entry e : entries) {
            Sequence s = e.seq();
            scheduler.complete(e);
            if (e.decode()) {
                decodeTokens++;
            }
            if (!e.needsLogits()) {
                continue;
            }
            int logitRow = row++;
            Attachment a = (Attachment) s.attachment();
            int token;
            try {
                LogitsProbe probe = logitsProbe;
                if (probe != null) {
                    probe.onLogits(s.id(), s.outputLength(),
                            runner.logitsRow(logitRow).toArray(java.lang.foreign.ValueLayout.JAVA_FLOAT));
                }
                token = Sampler.sample(runner.logits(), logitRow, runner.vocab(), a.params(), s.outputLength());
            } catch (RuntimeException ex) {
                scheduler.fail(s, "sampling failed: " + ex.getMessage());
                continue;
            }
            scheduler.onToken(s, token, now);
            if (a.listener() != null) {
                try {
                    a.listener().accept(token);
                } catch (RuntimeException ex) {
                    LOG.warn("token listener of request {} threw; cancelling it", s.id(), ex);
                    if (s.status() != Sequence.Status.FINISHED) {
                        scheduler.fail(s, "token listener threw: " + ex);
                    }
                }
            }
        }
    }

    private void notePeaks() {
        peakPinned = Math.max(peakPinned, kv.pinnedPages());
        peakAllocated = Math.max(peakAllocated, allocator.allocatedPages());
    }

    /** Completes the requests' futures, after publishing stats that already count them. */
    private void report(List<Sequence> done, long now) {
        if (done.isEmpty()) {
            return;
        }
        finished += done.size();
        publishStats();
        for (Sequence s : done) {
            Attachment a = (Attachment) s.attachment();
            a.handle().complete(new RequestResult(s.id(), s.output(), s.finishReason(), statsOf(s, now), s.error()));
        }
    }

    private static RequestStats statsOf(Sequence s, long now) {
        return new RequestStats(s.queueNanos(), s.ttftNanos(), s.interTokenNanos(), now - s.submitNanos(),
                s.promptLength(), s.cachedPromptTokens(), s.computedPromptTokens(), s.preemptions());
    }

    private void publishStats() {
        stats = buildStats();
    }

    private EngineStats buildStats() {
        long reused = kv.reusedTokens();
        long computed = kv.computedTokens();
        double hit = reused + computed == 0 ? 0.0 : (double) reused / (reused + computed);
        long evicted = evictedPages;
        return new EngineStats(steps, submitted, finished, hit, reused, computed, decodeTokens,
                scheduler.preemptions(), evicted, scheduler.deferrals(), kv.duplicatePagesDropped(),
                allocator.numPages(), allocator.freePages(), allocator.cachedPages(), peakPinned, peakAllocated,
                scheduler.runningCount(), scheduler.waitingCount(), forwardNanos, stepNanos);
    }

    /**
     * Stops the engine thread (requests still queued or running end as ABORTED) and frees
     * the KV pool, the model and the backend.
     */
    @Override
    public void close() {
        if (Thread.currentThread() == thread) {
            throw new IllegalStateException("close() called on the engine thread (from a listener or a result callback)");
        }
        if (closing) {
            return;
        }
        closing = true;
        inbox.add(() -> { });
        try {
            thread.join(TimeUnit.SECONDS.toMillis(30));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        if (thread.isAlive()) {
            LOG.warn("engine thread did not stop within 30 s; leaking its memory rather than freeing it under it");
            return;
        }
        runner.close();
        model.close();
        seqs.close();
        pool.close();
        backend.close();
        if (ownsWeights) {
            weights.close();
        }
    }
}
