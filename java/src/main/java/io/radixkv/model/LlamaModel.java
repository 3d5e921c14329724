package io.radixkv.model;

import io.radixkv.checkpoint.ParamSpec;
import io.radixkv.kernels.AttentionParams;
import io.radixkv.kernels.AttentionPlan;
import io.radixkv.kernels.BackendMemory;
import io.radixkv.kernels.Checks;
import io.radixkv.kernels.DType;
import io.radixkv.kernels.DenseKernels;
import io.radixkv.kernels.KernelBackend;
import io.radixkv.kernels.KvCacheView;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The one decoder of every supported family (Llama 3.x, Qwen2/2.5, Qwen3, Mistral, Gemma 3),
 * following {@link ModelConfig#arch()} and {@link ModelConfig#layerAttention()} as data, over a
 * mixed batch with paged KV caches. Per layer:
 * <pre>
 *   a = norm_in(x) → fused QKV GEMM (+ q/k/v bias) → q/k per-head norm → RoPE (the layer's table)
 *   → scatter of K/V into the layer's pages → paged attention (the layer's window; append
 *   prefill, or decode when every sequence brings one token) → O projection
 *   x += a                       (x += norm_post_attn(a) with sandwich norms)
 *   m = down(act(gate(norm_pre_mlp(x))) · up(...))
 *   x += m                       (x += norm_post_ff(m) with sandwich norms)
 * </pre>
 * Embeddings are scaled (Gemma: sqrt(hidden) rounded to the weights' dtype) before the first
 * layer; after the last, the final norm and the output projection run only for the requested
 * rows, then the optional final-logit soft cap. Norms apply {@code x̂·(offset + w)}.
 *
 * <p>The dense math runs on the CPU ({@link DenseKernels}); the KV scatter and attention on
 * the given {@link KernelBackend}, which must work on host memory. The KV cache dtype is the
 * caches' (f32, bf16, f16, fp8 with scales). Sliding layers keep every token's K/V in their
 * pages (so cached prefixes stay valid for all layers); the attention kernel masks keys
 * outside the window. Scratch buffers are allocated once for {@code maxTokensPerStep} rows
 * and reused; a step allocates nothing.
 *
 * <p>Every argument is validated before anything runs: a rejected batch changes neither the
 * caches nor the logits. Not thread-safe: one engine thread drives a model.
 */
public final class LlamaModel implements AutoCloseable {
    /** Rows per step when the 4-argument constructor is used. */
    public static final int DEFAULT_MAX_TOKENS_PER_STEP = 2048;

    private static final ValueLayout.OfInt I32 = ValueLayout.JAVA_INT;

    private final ModelConfig config;
    private final ModelWeights weights;
    private final DenseKernels dense;
    private final KernelBackend backend;
    private final int maxTokens;
    private final float normOffset;
    private final float embedScale;
    /** Per layer: attention parameters (scale, window) and RoPE inverse frequencies (f64, shared between equal specs). */
    private final List<AttentionParams> layerParams;
    private final List<MemorySegment> layerInvFreq;
    private final BackendMemory memory;
    private final StepBuffers step;
    private final StepGraphs graphs;
    // Scratch, [maxTokens, width] f32 each.
    private final MemorySegment hidden;
    private final MemorySegment normed;
    private final MemorySegment qkv;
    private final MemorySegment q;
    private final MemorySegment k;
    private final MemorySegment v;
    private final MemorySegment attn;
    private final MemorySegment gateUp;
    private final MemorySegment act;
    private final MemorySegment branch;
    /** Adapter deltas after each projection (null: none). */
    private ProjectionDelta delta;

    public LlamaModel(ModelConfig config, ModelWeights weights, DenseKernels dense, KernelBackend backend) {
        this(config, weights, dense, backend, DEFAULT_MAX_TOKENS_PER_STEP);
    }

    public LlamaModel(ModelConfig config, ModelWeights weights, DenseKernels dense, KernelBackend backend,
                      int maxTokensPerStep) {
        if (config == null || weights == null || dense == null || backend == null) {
            throw new IllegalArgumentException("config, weights, dense kernels and backend must not be null");
        }
        if (!weights.config().equals(config)) {
            throw new IllegalArgumentException("the weights were made for " + weights.config() + ", not " + config);
        }
        if (backend.deviceMemory() != weights.onDevice()) {
            throw new IllegalArgumentException("backend '" + backend.name() + "' works on "
                    + (backend.deviceMemory() ? "device" : "host") + " memory but the weights are in "
                    + (weights.onDevice() ? "device" : "host") + " memory (ModelWeights.copyTo the backend's memory)");
        }
        requireWeightDtype(dense, weights.dtype());
        QuantizedMatrices.requireSupported(dense, weights);
        if ((weights.layersPacked() && !dense.packsLinearWeights(weights.dtype(), config.qkvDim(), config.hidden()))
                || (weights.lmHeadPacked() && !dense.packsLinearWeights(weights.dtype(), config.vocab(), config.hidden()))) {
            throw new IllegalArgumentException("the weights are packed (ModelWeights.packLinearWeights) in a layout the "
                    + dense.name() + " dense kernels do not read");
        }
        Checks.requirePositive("maxTokensPerStep", maxTokensPerStep);
        this.config = config;
        this.weights = weights;
        this.dense = dense;
        this.backend = backend;
        this.maxTokens = maxTokensPerStep;
        this.normOffset = config.arch().norm().weightOffset();
        this.embedScale = config.embedScale(weights.dtype());
        this.memory = backend.memory();
        AttentionParams base = new AttentionParams(config.heads(), config.smScale(), 0f);
        Map<RopeSpec, MemorySegment> tables = new HashMap<>();
        List<AttentionParams> params = new ArrayList<>();
        List<MemorySegment> inv = new ArrayList<>();
        for (LayerAttention la : config.layerAttention()) {
            params.add(base.withWindowLeft(la.windowLeft()));
            inv.add(tables.computeIfAbsent(la.rope(), r -> invFreqTable(r.invFreq(config.headDim()))));
        }
        this.layerParams = List.copyOf(params);
        this.layerInvFreq = List.copyOf(inv);
        long t = maxTokensPerStep;
        this.hidden = scratch(t * config.hidden());
        this.normed = scratch(t * config.hidden());
        this.qkv = scratch(t * config.qkvDim());
        this.q = scratch(t * config.qDim());
        this.k = scratch(t * config.kvDim());
        this.v = scratch(t * config.kvDim());
        this.attn = scratch(t * config.qDim());
        this.gateUp = scratch(t * 2L * config.intermediate());
        this.act = scratch(t * config.intermediate());
        this.branch = config.arch().sandwichNorms() ? scratch(t * config.hidden()) : null;
        this.step = new StepBuffers(memory, maxTokensPerStep);
        this.graphs = new StepGraphs(memory, StepGraphs.enabledByDefault());
    }

    /**
     * Refuses weights the dense kernels cannot multiply, naming what they take.
     *
     * @throws IllegalArgumentException e.g. f16 weights on the CUDA backend
     */
    public static void requireWeightDtype(DenseKernels dense, DType weights) {
        if (!dense.weightDtypes().contains(weights)) {
            throw new IllegalArgumentException("the " + dense.name() + " dense kernels take "
                    + dense.weightDtypes().stream().map(DType::toString).toList() + " weights, not " + weights
                    + ": load the model with another weights dtype (--weights-dtype)");
        }
    }

    /** Scratch in the backend's memory (device memory for CUDA), freed with it. */
    private MemorySegment scratch(long floats) {
        return memory.allocate(Math.multiplyExact(floats, 4L));
    }

    private MemorySegment invFreqTable(double[] invFreq) {
        try (Arena host = Arena.ofConfined()) {
            MemorySegment src = host.allocateFrom(ValueLayout.JAVA_DOUBLE, invFreq);
            MemorySegment dst = memory.allocate(src.byteSize());
            memory.copyFromHost(src, dst, src.byteSize());
            return dst;
        }
    }

    public ModelConfig config() {
        return config;
    }

    /** Sets (or with null removes) the delta added after every projection block (LoRA adapters). */
    public void setProjectionDelta(ProjectionDelta delta) {
        this.delta = delta;
    }

    public ModelWeights weights() {
        return weights;
    }

    public int maxTokensPerStep() {
        return maxTokens;
    }

    /**
     * Runs one step: writes the new tokens' K/V into {@code layerCaches} (one per layer, all with
     * the same layout) and the next-token logits of the rows {@code b.logitRows()} into
     * {@code logits [numLogitRows, vocab]} (f32).
     *
     * @throws IllegalArgumentException for anything inconsistent, before any work: a token id
     *     outside the vocabulary (naming it), a position or slot that does not match the page
     *     table, too many rows, a cache of the wrong shape, a short segment
     */
    public void forward(ForwardBatch b, List<KvCacheView> layerCaches, MemorySegment logits) {
        forward(b, layerCaches, StepOutput.logits(logits));
    }

    /**
     * {@link #forward(ForwardBatch, List, MemorySegment)} writing what {@code out} asks for: the
     * full logits, the logit rows' argmax, or both (greedy batches need only the argmax).
     */
    public void forward(ForwardBatch b, List<KvCacheView> layerCaches, StepOutput out) {
        boolean decode = StepChecks.validate(config, maxTokens, b, layerCaches, out);
        final int n = b.numTokens();
        final int r = b.numLogitRows();
        final int vocab = config.vocab();
        StepBuffers.Inputs in = step.upload(b);
        AttentionPlan plan = backend.attention().plan(layerCaches.get(0).layout(), b.kv(),
                decode ? MemorySegment.NULL : b.qoIndptr(), config.heads());
        // output buffers exist before anything is recorded (a graph must not allocate)
        MemorySegment logits = r > 0 ? step.logitsTarget(out.logits(), r, vocab) : null;
        MemorySegment argmax = r > 0 && out.argmax() != null ? step.argmaxTarget(out.argmax(), r) : null;
        graphs.run(decode ? graphKey(b, plan, layerCaches, logits, argmax) : null,
                () -> issue(b, in, plan, layerCaches, logits, argmax));
        if (r == 0) {
            memory.synchronize();
        } else {
            step.deliver(out, r, vocab);
        }
        backend.checkDeviceErrors();
    }

    /**
     * The key under which a decode step's launches may be recorded and replayed, or null: small
     * decode batches whose logit rows are all rows in order, with a plan whose runs can be
     * recorded. Everything else a step's launches bake in is fixed for this model (scratch, weights,
     * the step input buffers, the caches of an engine).
     */
    private Object graphKey(ForwardBatch b, AttentionPlan plan, List<KvCacheView> caches, MemorySegment logits,
                            MemorySegment argmax) {
        int n = b.numTokens();
        if (!memory.isDevice() || n > GRAPH_MAX_ROWS || b.numLogitRows() != n) {
            return null;
        }
        for (int i = 0; i < n; i++) {
            if (b.logitRows().getAtIndex(I32, i) != i) {
                return null;
            }
        }
        Object planKey = plan.graphKey();
        if (planKey == null) {
            return null;
        }
        return List.of(n, planKey, logits.address(), argmax == null ? 0L : argmax.address(),
                caches.get(0).kCache().address(), caches.size());
    }

    /** Issues one step's kernels: embedding, every layer, then the logit rows' norm, projection and argmax. */
    private void issue(ForwardBatch b, StepBuffers.Inputs in, AttentionPlan plan, List<KvCacheView> layerCaches,
                       MemorySegment logits, MemorySegment argmax) {
        final int n = b.numTokens();
        final int h = config.hidden();
        final int qd = config.qDim();
        final int kvd = config.kvDim();
        final int qkvd = config.qkvDim();
        final int inter = config.intermediate();
        final DType wt = weights.dtype();
        final float eps = config.rmsEps();
        final Architecture arch = config.arch();
        ParamSpec qEmbed = weights.quantized(weights.embed());
        if (qEmbed != null) {
            dense.embeddingQuantized(in.tokenIds(), n, weights.embed(), QuantizedMatrices.tableFormat(qEmbed),
                    config.vocab(), h, hidden);
        } else {
            dense.embedding(in.tokenIds(), n, weights.embed(), wt, config.vocab(), h, hidden);
        }
        if (embedScale != 1f) {
            dense.scale(hidden, (long) n * h, embedScale);
        }
        for (int l = 0; l < config.layers(); l++) {
            ModelWeights.Layer w = weights.layer(l);
            KvCacheView cache = layerCaches.get(l);
            AttentionParams ap = layerParams.get(l);
            dense.rmsnorm(hidden, w.inputNorm(), normed, n, h, eps, normOffset);
            linear(normed, w.qkv(), qkv, n, qkvd, h, false);
            addDelta(l, WeightLayout.QKV, normed, qkv, n);
            if (arch.qkvBias()) {
                dense.addBias(qkv, w.qkvBias(), n, qkvd);
            }
            splitQkv(n, qd, kvd, qkvd);
            if (arch.qkNorm()) {
                dense.rmsnorm(q, w.qNorm(), q, (long) n * config.heads(), config.headDim(), eps, normOffset);
                dense.rmsnorm(k, w.kNorm(), k, (long) n * config.kvHeads(), config.headDim(), eps, normOffset);
            }
            dense.ropeTable(q, k, in.positions(), n, config.heads(), config.kvHeads(), config.headDim(),
                    layerInvFreq.get(l));
            backend.kv().reshapeAndCache(k, v, DType.F32, in.slotMapping(), n, cache);
            backend.attention().run(plan, q, DType.F32, attn, DType.F32, MemorySegment.NULL, cache, ap);
            residual(l, WeightLayout.O, attn, w.o(), qd, w.postAttnNorm(), n);
            dense.rmsnorm(hidden, w.postNorm(), normed, n, h, eps, normOffset);
            linear(normed, w.gateUp(), gateUp, n, 2L * inter, h, false);
            addDelta(l, WeightLayout.GATE_UP, normed, gateUp, n);
            switch (arch.activation()) {
                case SILU -> dense.siluMul(gateUp, act, n, inter);
                case GELU_TANH -> dense.geluTanhMul(gateUp, act, n, inter);
            }
            residual(l, WeightLayout.DOWN, act, w.down(), inter, w.postFfNorm(), n);
        }
        int r = b.numLogitRows();
        if (r == 0) {
            return;
        }
        // Only the requested rows go through the final norm and the (vocab-wide) output projection.
        step.gatherRows(hidden, b.logitRows(), r, normed, (long) h * 4);
        dense.rmsnorm(normed, weights.finalNorm(), normed, r, h, eps, normOffset);
        linear(weights.lmHeadPacked(), normed, weights.lmHead(), logits, r, config.vocab(), h, false);
        if (arch.finalLogitSoftCap() > 0) {
            dense.softCap(logits, (long) r * config.vocab(), arch.finalLogitSoftCap());
        }
        if (argmax != null) {
            dense.argmax(logits, r, config.vocab(), argmax);
        }
    }

    /**
     * {@code hidden += in · Wᵀ}, or with a sandwich norm {@code hidden += norm(in · Wᵀ)}
     * ({@code postNorm} null: no norm).
     */
    private void residual(int layer, String block, MemorySegment in, MemorySegment w, int inDim,
                          MemorySegment postNorm, int n) {
        int h = config.hidden();
        if (postNorm == null) {
            linear(in, w, hidden, n, h, inDim, true);
            addDelta(layer, block, in, hidden, n);
            return;
        }
        linear(in, w, branch, n, h, inDim, false);
        addDelta(layer, block, in, branch, n);
        dense.rmsnorm(branch, postNorm, branch, n, h, config.rmsEps(), normOffset);
        dense.addInplace(hidden, branch, (long) n * h);
    }

    private void addDelta(int layer, String block, MemorySegment x, MemorySegment y, int n) {
        if (delta != null) {
            delta.apply(layer, block, x, y, n);
        }
    }

    /** A layer's linear projection, packed or row-major as the weights are ({@link ModelWeights#packLinearWeights}). */
    private void linear(MemorySegment x, MemorySegment w, MemorySegment y, long m, long n, long k, boolean accumulate) {
        linear(weights.layersPacked(), x, w, y, m, n, k, accumulate);
    }

    private void linear(boolean packed, MemorySegment x, MemorySegment w, MemorySegment y, long m, long n, long k,
                        boolean accumulate) {
        ParamSpec q = weights.quantized(w);
        if (q != null) {
            QuantizedMatrices.linear(dense, q, x, w, y, m, n, k, accumulate);
        } else if (packed) {
            dense.linearPacked(x, w, weights.dtype(), y, m, n, k, accumulate);
        } else {
            dense.linear(x, w, weights.dtype(), y, m, n, k, accumulate);
        }
    }

    /** Copies the fused [n, q|k|v] projection into contiguous q, k, v (RoPE and the KV scatter want them dense). */
    private void splitQkv(int n, int qd, int kvd, int qkvd) {
        long pitch = qkvd * 4L;
        memory.copyRows(qkv, 0, pitch, q, 0, qd * 4L, qd * 4L, n);
        memory.copyRows(qkv, qd * 4L, pitch, k, 0, kvd * 4L, kvd * 4L, n);
        memory.copyRows(qkv, (qd + kvd) * 4L, pitch, v, 0, kvd * 4L, kvd * 4L, n);
    }

    /** Decode steps of at most this many rows may be recorded as graphs (the GEMV path of the GPU). */
    static final int GRAPH_MAX_ROWS = 8;

    /** Frees the recorded step graphs; scratch and tables live in the backend's memory and go with it. */
    @Override
    public void close() {
        graphs.close();
    }

    /** Decode steps recorded as graphs and steps replayed from them so far (tests, benchmarks). */
    long[] graphCounts() {
        return new long[] {graphs.captures(), graphs.replays()};
    }
}
