package io.radixkv.model;

import io.radixkv.kernels.BackendMemory;
import io.radixkv.checkpoint.CheckpointLoader;
import io.radixkv.checkpoint.ParamSpec;
import io.radixkv.checkpoint.ParameterStore;
import io.radixkv.kernels.DType;
import io.radixkv.kernels.DenseKernels;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;

/**
 * The parameters of a decoder model (any supported family): a {@link ParameterStore} laid out by
 * {@link WeightLayout} (off-heap, freed by {@link #close()}), with typed access for the forward
 * pass. Matrices are f32 or bf16 (row-major, {@code [out, in]} as in HF checkpoints); norm
 * weights are always f32.
 *
 * <p>Two sources: {@link #random} (deterministic pseudo-random from a seed, scaled so
 * activations stay near unit RMS through the layers) and {@link #load} (a Hugging Face
 * checkpoint directory: {@code config.json} + {@code *.safetensors} with f32/bf16/f16 tensors,
 * single or sharded; or a GGUF file with F32/F16/BF16 tensors).
 */
public final class ModelWeights implements AutoCloseable {
    /**
     * One decoder layer's parameters. The last five are null when the architecture has none:
     * {@code qkvBias} f32 {@code [qkvDim]}, {@code qNorm}/{@code kNorm} f32 {@code [headDim]},
     * {@code postAttnNorm}/{@code postFfNorm} f32 {@code [hidden]} (sandwich norms);
     * {@code postNorm} is the norm before the MLP.
     */
    public record Layer(MemorySegment qkv, MemorySegment o, MemorySegment gateUp, MemorySegment down,
                        MemorySegment inputNorm, MemorySegment postNorm, MemorySegment qkvBias, MemorySegment qNorm,
                        MemorySegment kNorm, MemorySegment postAttnNorm, MemorySegment postFfNorm) {}

    private final ModelConfig config;
    private final DType dtype;
    private final ParameterStore store;
    private final List<Layer> layers;
    private final boolean device;
    /** The quantized matrices' specs by their segment (the same objects the layers hold). */
    private final Map<MemorySegment, ParamSpec> quantized = new IdentityHashMap<>();
    private boolean layersPacked;
    private boolean lmHeadPacked;

    private ModelWeights(ModelConfig config, DType dtype, ParameterStore store) {
        this(config, dtype, store, false);
    }

    private ModelWeights(ModelConfig config, DType dtype, ParameterStore store, boolean device) {
        this.config = config;
        this.dtype = dtype;
        this.store = store;
        this.device = device;
        List<Layer> ls = new ArrayList<>();
        for (int l = 0; l < config.layers(); l++) {
            ls.add(new Layer(block(l, WeightLayout.QKV), block(l, WeightLayout.O), block(l, WeightLayout.GATE_UP),
                    block(l, WeightLayout.DOWN), block(l, WeightLayout.INPUT_NORM), block(l, WeightLayout.POST_NORM),
                    optional(l, WeightLayout.QKV_BIAS), optional(l, WeightLayout.Q_NORM),
                    optional(l, WeightLayout.K_NORM), optional(l, WeightLayout.POST_ATTN_NORM),
                    optional(l, WeightLayout.POST_FF_NORM)));
        }
        this.layers = List.copyOf(ls);
        for (ParamSpec p : store.specs()) {
            if (p.quantized()) {
                quantized.put(store.get(p.name()), p);
            }
        }
    }

    private MemorySegment optional(int layer, String part) {
        String name = WeightLayout.layer(layer, part);
        return store.contains(name) ? store.get(name) : null;
    }

    private static WeightLayout layout(ModelConfig config, DType dtype) {
        if (config == null) {
            throw new IllegalArgumentException("config must not be null");
        }
        return WeightLayout.of(config, dtype);
    }

    /**
     * Deterministic pseudo-random weights (see {@link WeightLayout#of} for the scales): every
     * tensor draws from its own stream, so the result is independent of threads.
     */
    public static ModelWeights random(ModelConfig config, DType dtype, long seed) {
        return random(config, dtype, seed, QuantRecipe.AS_STORED);
    }

    /** {@link #random(ModelConfig, DType, long)} with the matrices quantized as {@code recipe} says (the same values, then quantized). */
    public static ModelWeights random(ModelConfig config, DType dtype, long seed, QuantRecipe recipe) {
        return new ModelWeights(config, dtype, RandomWeights.create(layout(config, dtype, recipe), seed));
    }

    private static WeightLayout layout(ModelConfig config, DType dtype, QuantRecipe recipe) {
        layout(config, dtype); // the same checks
        return WeightLayout.of(config, dtype,
                (name, k) -> recipe.formatOf(name, k, config.layers(), config.tiedEmbeddings()));
    }

    /**
     * Loads {@code dir/config.json} and the safetensors files beside it, or, when {@code dir} is a
     * {@code *.gguf} file, the model that GGUF file holds (F32, F16 or BF16 tensors; see
     * {@link GgufWeights}); matrices become {@code dtype}.
     */
    public static ModelWeights load(Path dir, DType dtype) throws IOException {
        return load(dir, dtype, QuantRecipe.AS_STORED);
    }

    /**
     * {@link #load(Path, DType)} with the matrices held as {@code recipe} says: quantized GGUF
     * tensors as stored or dequantized, f32/bf16/f16 ones quantized at load ({@link QuantRecipe}).
     */
    public static ModelWeights load(Path dir, DType dtype, QuantRecipe recipe) throws IOException {
        if (isGgufFile(dir)) {
            GgufWeights.Loaded g = GgufWeights.load(dir, dtype, recipe);
            return new ModelWeights(g.config(), dtype, g.store());
        }
        Path cfg = dir.resolve("config.json");
        if (!Files.isRegularFile(cfg)) {
            throw new IOException("no config.json in " + dir);
        }
        ModelConfig config = ModelConfig.fromHfConfig(cfg);
        WeightLayout layout = layout(config, dtype, recipe);
        return new ModelWeights(config, dtype, CheckpointLoader.load(dir, layout.params(), layout.tensors()));
    }

    /** True for a regular file named {@code *.gguf} (any case): what {@link #load(Path, DType)} reads as GGUF. */
    public static boolean isGgufFile(Path path) {
        return Files.isRegularFile(path) && path.getFileName().toString().toLowerCase(Locale.ROOT).endsWith(".gguf");
    }

    /**
     * Loads the safetensors files of {@code dir} (single, or sharded with
     * {@code model.safetensors.index.json}) for the given shape; matrices become {@code dtype}.
     * Every tensor is checked before anything large is allocated.
     */
    public static ModelWeights load(Path dir, ModelConfig config, DType dtype) throws IOException {
        WeightLayout layout = layout(config, dtype);
        return new ModelWeights(config, dtype, CheckpointLoader.load(dir, layout.params(), layout.tensors()));
    }

    /**
     * These weights copied into a backend's memory (device memory for CUDA), for a model that
     * runs there; freed with {@code memory}. This object is unchanged and may be closed.
     */
    public ModelWeights copyTo(BackendMemory memory) {
        if (!quantized.isEmpty()) {
            throw new IllegalArgumentException("the weights hold block-quantized matrices (" + formatSummary()
                    + "), which only the CPU dense kernels run: load them with --weights-dtype f32, bf16 or f16 "
                    + "(dequantized: QuantRecipe.DEQUANTIZE) for another backend");
        }
        return new ModelWeights(config, dtype, store.copyTo(memory), memory.isDevice());
    }

    /**
     * Packs these weights' linear matrices in place into {@code dense}'s packed layout ({@link
     * DenseKernels#packLinearWeights}): every layer's q/k/v, o, gate/up and down projections when it
     * has the layout for all of them, and the LM head unless it is tied to the embeddings (whose
     * rows the embedding lookup reads). Only a model that runs on {@code dense} may use them after
     * this ({@link #layersPacked()} and {@link #lmHeadPacked()} say what to call). Idempotent.
     *
     * @return whether anything was packed
     */
    public synchronized boolean packLinearWeights(DenseKernels dense) {
        Objects.requireNonNull(dense, "dense");
        if (device) {
            throw new IllegalStateException("weights in device memory cannot be packed for " + dense.name());
        }
        boolean any = false;
        List<String> names = new ArrayList<>();
        for (int l = 0; l < config.layers(); l++) {
            for (String part : List.of(WeightLayout.QKV, WeightLayout.O, WeightLayout.GATE_UP, WeightLayout.DOWN)) {
                names.add(WeightLayout.layer(l, part));
            }
        }
        if (!layersPacked && names.stream().allMatch(nm -> packable(dense, nm))) {
            // one matrix per task: the native packing runs on its caller's thread only (radixkv.h)
            names.parallelStream().forEach(nm -> pack(dense, nm));
            layersPacked = true;
            any = true;
        }
        if (!lmHeadPacked && store.spec(WeightLayout.LM_HEAD).tiedTo() == null && packable(dense, WeightLayout.LM_HEAD)) {
            pack(dense, WeightLayout.LM_HEAD);
            lmHeadPacked = true;
            any = true;
        }
        return any;
    }

    private boolean packable(DenseKernels dense, String name) {
        long[] shape = store.spec(name).shape();
        return shape.length == 2 && !store.spec(name).quantized() && dense.packsLinearWeights(dtype, shape[0], shape[1]);
    }

    private void pack(DenseKernels dense, String name) {
        long[] shape = store.spec(name).shape();
        dense.packLinearWeights(store.get(name), dtype, shape[0], shape[1], false);
    }

    /** True when the layers' linear matrices are packed ({@link #packLinearWeights}). */
    public synchronized boolean layersPacked() {
        return layersPacked;
    }

    /** True when the LM head is packed ({@link #packLinearWeights}). */
    public synchronized boolean lmHeadPacked() {
        return lmHeadPacked;
    }

    /** True when the tensors are device memory ({@link #copyTo} a device backend): never read them from Java. */
    public boolean onDevice() {
        return device;
    }

    public ModelConfig config() {
        return config;
    }

    /** Dtype of the matrices (f32 or bf16); norm weights are f32. */
    public DType dtype() {
        return dtype;
    }

    /** {@code [vocab, hidden]}. */
    public MemorySegment embed() {
        return store.get(WeightLayout.EMBED);
    }

    public Layer layer(int i) {
        return layers.get(i);
    }

    public List<Layer> layers() {
        return layers;
    }

    /** {@code [hidden]} f32. */
    public MemorySegment finalNorm() {
        return store.get(WeightLayout.FINAL_NORM);
    }

    /** {@code [vocab, hidden]}; the same segment as {@link #embed()} when embeddings are tied. */
    public MemorySegment lmHead() {
        return store.get(WeightLayout.LM_HEAD);
    }

    /** Store block {@code name} (see {@link WeightLayout} for the names). */
    public MemorySegment block(String name) {
        return store.get(name);
    }

    /** Layer {@code layer}'s block {@code part}, e.g. {@link WeightLayout#QKV}. */
    public MemorySegment block(int layer, String part) {
        return store.get(WeightLayout.layer(layer, part));
    }

    /** True when the layout has block {@code name}. */
    public boolean has(String name) {
        return store.contains(name);
    }

    /**
     * The spec of a quantized matrix by the segment {@link #layer}, {@link #embed} or
     * {@link #lmHead} returned, or null for a dense one.
     */
    public ParamSpec quantized(MemorySegment block) {
        return quantized.get(block);
    }

    /** True when any matrix is block-quantized. */
    public boolean anyQuantized() {
        return !quantized.isEmpty();
    }

    /**
     * The matrices' formats with their shares of the matrix weights, e.g. {@code q4_k 71%, q6_k
     * 29%}, or the weights dtype alone for a dense model.
     */
    public String formatSummary() {
        Map<String, Long> weights = new java.util.TreeMap<>();
        for (ParamSpec p : matrices()) {
            long k = p.shape()[1];
            if (p.quantized()) {
                p.bands().forEach(b -> weights.merge(b.format().label(), b.rows() * k, Long::sum));
            } else {
                weights.merge(p.dtype().label(), p.elements(), Long::sum);
            }
        }
        long total = weights.values().stream().mapToLong(Long::longValue).sum();
        if (weights.size() == 1) {
            return weights.keySet().iterator().next();
        }
        StringBuilder sb = new StringBuilder();
        weights.entrySet().stream().sorted(Map.Entry.<String, Long>comparingByValue().reversed()).forEach(e -> sb
                .append(sb.isEmpty() ? "" : ", ").append(e.getKey()).append(' ')
                .append(Math.round(100.0 * e.getValue() / total)).append('%'));
        return sb.toString();
    }

    /** Bytes per matrix weight: the matrices' bytes over their values (bf16 2, Q8_0 1.0625, Q4_K 0.5625). */
    public double bytesPerWeight() {
        long bytes = 0;
        long values = 0;
        for (ParamSpec p : matrices()) {
            bytes += p.bytes();
            values += p.elements();
        }
        return values == 0 ? 0 : (double) bytes / values;
    }

    /** The formats, bytes per weight and decode stream of these weights. */
    public WeightsSummary summary() {
        boolean tied = store.spec(WeightLayout.LM_HEAD).tiedTo() != null;
        long decode = store.bytes() - (tied ? 0 : store.spec(WeightLayout.EMBED).bytes());
        return new WeightsSummary(formatSummary(), bytesPerWeight(), decode);
    }

    /** The matrix blocks that are not aliases (embeddings, projections, the untied LM head). */
    private List<ParamSpec> matrices() {
        return store.specs().stream().filter(p -> p.tiedTo() == null && p.shape().length == 2).toList();
    }

    /** The underlying store of named blocks. */
    public ParameterStore store() {
        return store;
    }

    /** Bytes of parameters held. */
    public long bytes() {
        return store.bytes();
    }

    @Override
    public void close() {
        store.close();
    }
}
