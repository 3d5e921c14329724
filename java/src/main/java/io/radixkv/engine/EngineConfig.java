package io.radixkv.engine;

import io.radixkv.cache.EvictionPolicy;
import io.radixkv.kernels.DType;
import io.radixkv.model.QuantRecipe;
import java.util.Locale;
import java.util.Objects;

/**
 * Engine settings. Build with {@link #builder()}; every value is checked here (ranges) and
 * again against the model in {@link #validateFor} (pool vs model, sequence length), with
 * messages naming the setting.
 *
 * @param model a preset name ({@code tiny}, {@code small}), a checkpoint directory
 *     ({@code config.json} + {@code *.safetensors}) or a {@code .gguf} file
 * @param weightsSeed seed of a preset's pseudo-random weights
 * @param kvDtype KV cache element type (f32, bf16, f16, fp8_e4m3, fp8_e5m2)
 * @param kvScale FP8 scale of the K and V pools (stored = real / scale); 1 for other dtypes
 * @param pageSize tokens per KV page
 * @param numPages KV pool size in pages; 0 = derive from {@code kvCacheBytes}
 * @param kvCacheBytes KV pool byte budget (all layers, K and V), used when numPages is 0
 * @param prefixCache reuse KV across requests through the radix cache (off: every page private)
 * @param maxBatchTokens tokens per step (decode tokens + prefill chunk budget)
 * @param maxRunning most requests admitted at once
 * @param maxSeqLen longest sequence (prompt + output); 0 = the model's maximum
 * @param backend kernel backend: {@code cpu}, {@code auto} (CUDA when present), {@code java}
 * @param evictionPolicy which unlocked cached pages go first
 * @param decodeReserveFraction bound on the decode-growth reserve, as a fraction of the pool
 * @param weightsDtype element type the weights are held in: f32 (default, exact), bf16 (half the
 *     memory; prefill GEMMs run as bf16 matmuls, on AMX where present, with activations rounded to bf16)
 *     or f16 (half the memory; f32 arithmetic on weights widened in registers)
 * @param packWeights lay the linear weights out in the dense kernels' packed layout where they have
 *     one (CPU: AVX-512, and AVX512-BF16 for bf16; radixkv.h rkv_linear_pack), which decode streams faster; the
 *     engine packs only weights it loads itself
 * @param maxSamples most samples one request may ask for ({@code n}; each counts against
 *     {@code maxRunning} while it runs)
 * @param maxLoras LoRA adapters the running requests may use at once (vLLM's {@code --max-loras}); requests of
 *     further adapters wait in the queue
 * @param maxLoraRank largest LoRA rank an adapter may have (vLLM's {@code --max-lora-rank}); the slots are sized by it
 * @param weightsQuant how matrices are held ({@link QuantRecipe}): as stored (default: a GGUF file's
 *     quantized tensors stay quantized, the rest {@code weightsDtype}), dequantized, or quantized
 *     at load with llama.cpp's Q8_0, Q4_0 or Q4_K_M recipe
 */
public record EngineConfig(String model, long weightsSeed, DType kvDtype, float kvScale, int pageSize, int numPages,
                           long kvCacheBytes, boolean prefixCache, int maxBatchTokens, int maxRunning, int maxSeqLen,
                           String backend, EvictionPolicy evictionPolicy, double decodeReserveFraction,
                           DType weightsDtype, boolean packWeights, int maxSamples, int maxLoras, int maxLoraRank,
                           QuantRecipe weightsQuant) {
    public static final int MAX_PAGE_SIZE = 1024;
    /** Largest per-step token budget (the model's activation scratch is sized by it). */
    public static final int MAX_BATCH_TOKENS = 65536;
    /** The default {@link #maxSamples}, as vLLM's OpenAI server allows. */
    public static final int DEFAULT_MAX_SAMPLES = 16;

    public EngineConfig {
        if (model == null || model.isBlank()) {
            throw new IllegalArgumentException("model must name a preset or a checkpoint directory");
        }
        Objects.requireNonNull(kvDtype, "kvDtype");
        if (!(kvScale > 0f) || Float.isInfinite(kvScale)) {
            throw new IllegalArgumentException("kvScale must be positive and finite, got " + kvScale);
        }
        if (!kvDtype.isFp8() && kvScale != 1f) {
            throw new IllegalArgumentException("kvScale must be 1 for a " + kvDtype + " KV cache, got " + kvScale);
        }
        if (pageSize < 1 || pageSize > MAX_PAGE_SIZE) {
            throw new IllegalArgumentException("pageSize must be in 1.." + MAX_PAGE_SIZE + ", got " + pageSize);
        }
        if (numPages < 0) {
            throw new IllegalArgumentException("numPages must not be negative, got " + numPages);
        }
        if (numPages == 0 && kvCacheBytes <= 0) {
            throw new IllegalArgumentException("give numPages or a positive kvCacheBytes budget (got numPages 0, kvCacheBytes "
                    + kvCacheBytes + ")");
        }
        if (maxRunning < 1) {
            throw new IllegalArgumentException("maxRunning must be positive, got " + maxRunning);
        }
        if (maxBatchTokens < maxRunning) {
            throw new IllegalArgumentException("maxBatchTokens (" + maxBatchTokens + ") must be at least maxRunning ("
                    + maxRunning + "): every running request decodes one token per step");
        }
        if (maxBatchTokens > MAX_BATCH_TOKENS) {
            throw new IllegalArgumentException("maxBatchTokens must be at most " + MAX_BATCH_TOKENS + ", got "
                    + maxBatchTokens);
        }
        if (maxSeqLen < 0) {
            throw new IllegalArgumentException("maxSeqLen must not be negative (0 = model maximum), got " + maxSeqLen);
        }
        if (backend == null || !java.util.Set.of("cpu", "auto", "java", "cuda").contains(backend.toLowerCase(Locale.ROOT))) {
            throw new IllegalArgumentException("backend must be cpu, auto, java or cuda, got " + backend);
        }
        backend = backend.toLowerCase(Locale.ROOT);
        Objects.requireNonNull(evictionPolicy, "evictionPolicy");
        Objects.requireNonNull(weightsQuant, "weightsQuant");
        if (weightsDtype != DType.F32 && weightsDtype != DType.BF16 && weightsDtype != DType.F16) {
            throw new IllegalArgumentException("weightsDtype must be f32, bf16 or f16, got " + weightsDtype);
        }
        if (maxSamples < 1) {
            throw new IllegalArgumentException("maxSamples must be positive, got " + maxSamples);
        }
        if (!(decodeReserveFraction >= 0 && decodeReserveFraction < 1)) {
            throw new IllegalArgumentException("decodeReserveFraction must be in [0, 1), got " + decodeReserveFraction);
        }
        if (maxLoras < 1) {
            throw new IllegalArgumentException("maxLoras must be positive, got " + maxLoras);
        }
        if (maxLoraRank < 1) {
            throw new IllegalArgumentException("maxLoraRank must be positive, got " + maxLoraRank);
        }
    }

    public static Builder builder() {
        return new Builder();
    }

    public Builder toBuilder() {
        return new Builder().model(model).weightsSeed(weightsSeed).kvDtype(kvDtype).kvScale(kvScale).pageSize(pageSize)
                .numPages(numPages).kvCacheBytes(kvCacheBytes).prefixCache(prefixCache).maxBatchTokens(maxBatchTokens)
                .maxRunning(maxRunning).maxSeqLen(maxSeqLen).backend(backend).evictionPolicy(evictionPolicy)
                .decodeReserveFraction(decodeReserveFraction).weightsDtype(weightsDtype).packWeights(packWeights)
                .maxSamples(maxSamples).maxLoras(maxLoras).maxLoraRank(maxLoraRank).weightsQuant(weightsQuant);
    }

    /** Mutable builder with serving defaults (tiny preset, bf16 pages of 16, 256 MiB pool, cache on). */
    public static final class Builder {
        private String model = "tiny";
        private long weightsSeed = 0;
        private DType kvDtype = DType.BF16;
        private float kvScale = 1f;
        private int pageSize = 16;
        private int numPages = 0;
        private long kvCacheBytes = 256L << 20;
        private boolean prefixCache = true;
        private int maxBatchTokens = 512;
        private int maxRunning = 32;
        private int maxSeqLen = 0;
        private String backend = "auto";
        private EvictionPolicy evictionPolicy = EvictionPolicy.LRU;
        private double decodeReserveFraction = 0.3;
        private DType weightsDtype = DType.F32;
        private boolean packWeights = true;
        private int maxSamples = DEFAULT_MAX_SAMPLES;
        private int maxLoras = 8;
        private int maxLoraRank = 16;
        private QuantRecipe weightsQuant = QuantRecipe.AS_STORED;

        public Builder model(String v) { model = v; return this; }
        public Builder weightsSeed(long v) { weightsSeed = v; return this; }
        public Builder kvDtype(DType v) { kvDtype = v; return this; }
        public Builder kvDtype(String v) { kvDtype = DType.parse(v); return this; }
        public Builder kvScale(float v) { kvScale = v; return this; }
        public Builder pageSize(int v) { pageSize = v; return this; }
        /** Pool size in pages (overrides the byte budget). */
        public Builder numPages(int v) { numPages = v; return this; }
        /** Pool byte budget, used when numPages is 0. */
        public Builder kvCacheBytes(long v) { kvCacheBytes = v; return this; }
        public Builder prefixCache(boolean v) { prefixCache = v; return this; }
        public Builder maxBatchTokens(int v) { maxBatchTokens = v; return this; }
        public Builder maxRunning(int v) { maxRunning = v; return this; }
        public Builder maxSeqLen(int v) { maxSeqLen = v; return this; }
        public Builder backend(String v) { backend = v; return this; }
        public Builder evictionPolicy(EvictionPolicy v) { evictionPolicy = v; return this; }
        public Builder decodeReserveFraction(double v) { decodeReserveFraction = v; return this; }
        public Builder weightsDtype(DType v) { weightsDtype = v; return this; }
        public Builder weightsDtype(String v) { weightsDtype = DType.parse(v); return this; }
        public Builder packWeights(boolean v) { packWeights = v; return this; }
        /** Most samples ({@code n}) one request may ask for. */
        public Builder maxSamples(int v) { maxSamples = v; return this; }
        public Builder maxLoras(int v) { maxLoras = v; return this; }
        public Builder maxLoraRank(int v) { maxLoraRank = v; return this; }
        public Builder weightsQuant(QuantRecipe v) { weightsQuant = v; return this; }

        public EngineConfig build() {
            return new EngineConfig(model, weightsSeed, kvDtype, kvScale, pageSize, numPages, kvCacheBytes, prefixCache,
                    maxBatchTokens, maxRunning, maxSeqLen, backend, evictionPolicy, decodeReserveFraction, weightsDtype,
                    packWeights, maxSamples, maxLoras, maxLoraRank, weightsQuant);
        }
    }
}
