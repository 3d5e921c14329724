package io.radixkv.model;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.radixkv.kernels.DType;
import io.radixkv.kernels.JavaDenseKernels;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.stream.IntStream;
import java.util.stream.Stream;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

/**
 * The parameters of a Llama-architecture model in off-heap memory owned by this object
 * (one shared {@link Arena}, freed by {@link #close()}). Matrices are f32 or bf16 (row-major,
 * {@code [out, in]} as in HF checkpoints); norm weights are always f32. Q/K/V projections are
 * stored fused as one {@code [qDim + 2*kvDim, hidden]} matrix and gate/up as one
 * {@code [2*intermediate, hidden]} matrix, so each is a single GEMM.
 *
 * <p>Two sources: {@link #random} (deterministic pseudo-random from a seed, scaled so
 * activations stay near unit RMS through the layers) and {@link #load} (a Hugging Face
 * checkpoint directory: {@code config.json} + {@code *.safetensors} with f32/bf16/f16 tensors).
 */
public final class ModelWeights implements AutoCloseable {
    private static final Logger LOG = LogManager.getLogger(ModelWeights.class);
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfShort U16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final long MAX_HEADER_BYTES = 100L << 20;

    /** One decoder layer's parameters. */
    public record Layer(MemorySegment qkv, MemorySegment o, MemorySegment gateUp, MemorySegment down,
                        MemorySegment inputNorm, MemorySegment postNorm) {}

    private final ModelConfig config;
    private final DType dtype;
    private final Arena arena;
    private final MemorySegment embed;
    private final List<Layer> layers;
    private final MemorySegment finalNorm;
    private final MemorySegment lmHead;

    private ModelWeights(ModelConfig config, DType dtype) {
        if (config == null) {
            throw new IllegalArgumentException("config must not be null");
        }
        if (dtype != DType.F32 && dtype != DType.BF16) {
            throw new IllegalArgumentException("weight dtype " + dtype + " is not supported (f32 or bf16)");
        }
        this.config = config;
        this.dtype = dtype;
        this.arena = Arena.ofShared();
        int h = config.hidden();
        this.embed = matrix(config.vocab(), h);
        List<Layer> ls = new ArrayList<>();
        for (int l = 0; l < config.layers(); l++) {
            ls.add(new Layer(matrix(config.qkvDim(), h), matrix(h, config.qDim()), matrix(2 * config.intermediate(), h),
                    matrix(h, config.intermediate()), vector(h), vector(h)));
        }
        this.layers = List.copyOf(ls);
        this.finalNorm = vector(h);
        this.lmHead = config.tiedEmbeddings() ? embed : matrix(config.vocab(), h);
    }

    private MemorySegment matrix(long rows, long cols) {
        return arena.allocate(Math.multiplyExact(rows * cols, (long) dtype.bytes()), 64);
    }

    private MemorySegment vector(long n) {
        return arena.allocate(4 * n, 64);
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
        return embed;
    }

    public Layer layer(int i) {
        return layers.get(i);
    }

    public List<Layer> layers() {
        return layers;
    }

    /** {@code [hidden]} f32. */
    public MemorySegment finalNorm() {
        return finalNorm;
    }

    /** {@code [vocab, hidden]}; the same segment as {@link #embed()} when embeddings are tied. */
    public MemorySegment lmHead() {
        return lmHead;
    }

    /** Bytes of parameters held. */
    public long bytes() {
        long b = embed.byteSize() + finalNorm.byteSize() + (config.tiedEmbeddings() ? 0 : lmHead.byteSize());
        for (Layer l : layers) {
            b += l.qkv.byteSize() + l.o.byteSize() + l.gateUp.byteSize() + l.down.byteSize() + l.inputNorm.byteSize()
                    + l.postNorm.byteSize();
        }
        return b;
    }

    @Override
    public void close() {
        arena.close();
    }

    // ---------------------------------------------------------------- random weights

    /**
     * Deterministic pseudo-random weights: every tensor draws uniform values from its own stream
     * (seeded by {@code seed} and the tensor's index), so the result is independent of threads.
     * Projections use standard deviation 1/sqrt(fan_in) (unit-RMS activations), embeddings 1,
     * norm weights 1 ± 0.1, the output projection 2/sqrt(hidden) (logits spread a few units, so
     * greedy decoding depends on the context instead of tying).
     */
    public static ModelWeights random(ModelConfig config, DType dtype, long seed) {
        ModelWeights w = new ModelWeights(config, dtype);
        try {
            int h = config.hidden();
            double normStd = 0.1 / Math.sqrt(3); // uniform in 1 +- 0.1
            List<Fill> fills = new ArrayList<>();
            fills.add(new Fill(w.embed, 0, 1.0, false));
            for (Layer l : w.layers) {
                fills.add(new Fill(l.qkv, 0, 1.0 / Math.sqrt(h), false));
                fills.add(new Fill(l.o, 0, 1.0 / Math.sqrt(config.qDim()), false));
                fills.add(new Fill(l.gateUp, 0, 1.0 / Math.sqrt(h), false));
                fills.add(new Fill(l.down, 0, 1.0 / Math.sqrt(config.intermediate()), false));
                fills.add(new Fill(l.inputNorm, 1, normStd, true));
                fills.add(new Fill(l.postNorm, 1, normStd, true));
            }
            fills.add(new Fill(w.finalNorm, 1, normStd, true));
            if (!config.tiedEmbeddings()) {
                fills.add(new Fill(w.lmHead, 0, 2.0 / Math.sqrt(h), false));
            }
            IntStream.range(0, fills.size()).parallel().forEach(i -> w.fillUniform(fills.get(i), mix(seed, i)));
            return w;
        } catch (RuntimeException e) {
            w.close();
            throw e;
        }
    }

    /** A tensor to fill with uniform values of the given mean and standard deviation. */
    private record Fill(MemorySegment seg, double mean, double std, boolean f32) {}

    private static long mix(long seed, long index) {
        long z = seed + 0x9E3779B97F4A7C15L * (index + 1);
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }

    private void fillUniform(Fill f, long seed) {
        SplittableRandom r = new SplittableRandom(seed);
        MemorySegment seg = f.seg();
        double mean = f.mean();
        double a = f.std() * Math.sqrt(3);
        if (f.f32() || dtype == DType.F32) {
            long n = seg.byteSize() / 4;
            for (long i = 0; i < n; i++) {
                seg.setAtIndex(F32, i, (float) (mean + (2 * r.nextDouble() - 1) * a));
            }
        } else {
            long n = seg.byteSize() / 2;
            for (long i = 0; i < n; i++) {
                seg.setAtIndex(U16, i, JavaDenseKernels.floatToBf16((float) (mean + (2 * r.nextDouble() - 1) * a)));
            }
        }
    }

    // ---------------------------------------------------------------- safetensors checkpoints

    /** A tensor of a mapped safetensors file. */
    private record Tensor(String name, Path file, String dtype, long[] shape, MemorySegment data) {
        long elements() {
            long n = 1;
            for (long d : shape) {
                n = Math.multiplyExact(n, d);
            }
            return n;
        }
    }

    /** Loads {@code dir/config.json} and the {@code *.safetensors} files beside it; matrices become {@code dtype}. */
    public static ModelWeights load(Path dir, DType dtype) throws IOException {
        Path cfg = dir.resolve("config.json");
        if (!Files.isRegularFile(cfg)) {
            throw new IOException("no config.json in " + dir);
        }
        return load(dir, ModelConfig.fromHfConfig(cfg), dtype);
    }

    /** Loads the {@code *.safetensors} files of {@code dir} for the given shape; matrices become {@code dtype}. */
    public static ModelWeights load(Path dir, ModelConfig config, DType dtype) throws IOException {
        List<Path> files;
        try (Stream<Path> s = Files.list(dir)) {
            files = s.filter(p -> p.getFileName().toString().endsWith(".safetensors")).sorted().toList();
        }
        if (files.isEmpty()) {
            throw new IOException("no *.safetensors files in " + dir);
        }
        long t0 = System.nanoTime();
        ModelWeights w = new ModelWeights(config, dtype);
        try (Arena mapArena = Arena.ofShared()) {
            Map<String, Tensor> tensors = new HashMap<>();
            for (Path f : files) {
                for (Tensor t : readSafetensors(f, mapArena)) {
                    Tensor prev = tensors.put(t.name(), t);
                    if (prev != null) {
                        throw new IOException("tensor " + t.name() + " appears in both " + prev.file() + " and " + f);
                    }
                }
            }
            w.copyFrom(tensors, dir);
        } catch (IOException | RuntimeException e) {
            w.close();
            throw e;
        }
        LOG.info("loaded {} ({} layers, {} MiB of {} weights) in {} ms", dir, config.layers(), w.bytes() >> 20, dtype,
                (System.nanoTime() - t0) / 1_000_000);
        return w;
    }

    private void copyFrom(Map<String, Tensor> t, Path dir) throws IOException {
        int h = config.hidden();
        int q = config.qDim();
        int kv = config.kvDim();
        int inter = config.intermediate();
        List<Runnable> copies = new ArrayList<>();
        // All lookups and shape checks run before any copying, so errors surface first and fast.
        plan(copies, t, dir, "model.embed_tokens.weight", embed, 0, config.vocab(), h);
        for (int l = 0; l < config.layers(); l++) {
            String p = "model.layers." + l + ".";
            Layer L = layers.get(l);
            plan(copies, t, dir, p + "self_attn.q_proj.weight", L.qkv, 0, q, h);
            plan(copies, t, dir, p + "self_attn.k_proj.weight", L.qkv, (long) q * h, kv, h);
            plan(copies, t, dir, p + "self_attn.v_proj.weight", L.qkv, (long) (q + kv) * h, kv, h);
            plan(copies, t, dir, p + "self_attn.o_proj.weight", L.o, 0, h, q);
            plan(copies, t, dir, p + "mlp.gate_proj.weight", L.gateUp, 0, inter, h);
            plan(copies, t, dir, p + "mlp.up_proj.weight", L.gateUp, (long) inter * h, inter, h);
            plan(copies, t, dir, p + "mlp.down_proj.weight", L.down, 0, h, inter);
            planVector(copies, t, dir, p + "input_layernorm.weight", L.inputNorm, h);
            planVector(copies, t, dir, p + "post_attention_layernorm.weight", L.postNorm, h);
        }
        planVector(copies, t, dir, "model.norm.weight", finalNorm, h);
        if (!config.tiedEmbeddings()) {
            plan(copies, t, dir, "lm_head.weight", lmHead, 0, config.vocab(), h);
        }
        copies.parallelStream().forEach(Runnable::run);
    }

    private void plan(List<Runnable> copies, Map<String, Tensor> t, Path dir, String name, MemorySegment dst,
                      long dstOffset, long rows, long cols) throws IOException {
        Tensor src = require(t, dir, name, rows, cols);
        copies.add(() -> convert(src, dst, dstOffset, dtype));
    }

    private void planVector(List<Runnable> copies, Map<String, Tensor> t, Path dir, String name, MemorySegment dst,
                            long n) throws IOException {
        Tensor src = require(t, dir, name, n);
        copies.add(() -> convert(src, dst, 0, DType.F32));
    }

    private static Tensor require(Map<String, Tensor> t, Path dir, String name, long... shape) throws IOException {
        Tensor src = t.get(name);
        if (src == null) {
            throw new IOException("checkpoint " + dir + " lacks tensor " + name);
        }
        if (!java.util.Arrays.equals(src.shape(), shape)) {
            throw new IOException("tensor " + name + " in " + src.file() + " has shape "
                    + java.util.Arrays.toString(src.shape()) + " but the config needs " + java.util.Arrays.toString(shape));
        }
        return src;
    }

    /** Copies src into dst (elements of dstType) starting at element dstOffset, converting the dtype. */
    private static void convert(Tensor src, MemorySegment dst, long dstOffset, DType dstType) {
        long n = src.elements();
        MemorySegment s = src.data();
        switch (src.dtype()) {
            case "F32" -> {
                if (dstType == DType.F32) {
                    MemorySegment.copy(s, 0, dst, dstOffset * 4, n * 4);
                } else {
                    for (long i = 0; i < n; i++) {
                        dst.setAtIndex(U16, dstOffset + i, JavaDenseKernels.floatToBf16(s.getAtIndex(F32, i)));
                    }
                }
            }
            case "BF16" -> {
                if (dstType == DType.BF16) {
                    MemorySegment.copy(s, 0, dst, dstOffset * 2, n * 2);
                } else {
                    for (long i = 0; i < n; i++) {
                        dst.setAtIndex(F32, dstOffset + i, JavaDenseKernels.bf16ToFloat(s.getAtIndex(U16, i)));
                    }
                }
            }
            case "F16" -> {
                for (long i = 0; i < n; i++) {
                    float f = Float.float16ToFloat(s.getAtIndex(U16, i));
                    if (dstType == DType.F32) {
                        dst.setAtIndex(F32, dstOffset + i, f);
                    } else {
                        dst.setAtIndex(U16, dstOffset + i, JavaDenseKernels.floatToBf16(f));
                    }
                }
            }
            default -> throw new IllegalStateException("unchecked dtype " + src.dtype());
        }
    }

    /** Parses a safetensors header and maps the file; every entry's dtype, shape and byte range are checked. */
    private static List<Tensor> readSafetensors(Path file, Arena arena) throws IOException {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
            long size = ch.size();
            if (size < 8) {
                throw new IOException(file + " is not a safetensors file (" + size + " bytes)");
            }
            ByteBuffer lenBuf = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN);
            readFully(ch, lenBuf, 0, file);
            long headerLen = lenBuf.getLong(0);
            if (headerLen <= 0 || headerLen > MAX_HEADER_BYTES || headerLen > size - 8) {
                throw new IOException(file + ": bad safetensors header length " + headerLen + " (file has " + size
                        + " bytes)");
            }
            ByteBuffer hb = ByteBuffer.allocate((int) headerLen);
            readFully(ch, hb, 8, file);
            JsonNode header;
            try {
                header = JSON.readTree(new String(hb.array(), StandardCharsets.UTF_8));
            } catch (IOException e) {
                throw new IOException(file + ": cannot parse the safetensors header: " + e.getMessage(), e);
            }
            if (header == null || !header.isObject()) {
                throw new IOException(file + ": the safetensors header is not a JSON object");
            }
            long dataStart = 8 + headerLen;
            MemorySegment mapped = ch.map(FileChannel.MapMode.READ_ONLY, 0, size, arena);
            List<Tensor> out = new ArrayList<>();
            for (Map.Entry<String, JsonNode> e : header.properties()) {
                String name = e.getKey();
                if (name.equals("__metadata__")) {
                    continue;
                }
                JsonNode d = e.getValue();
                String dt = d.path("dtype").asText("").toUpperCase(Locale.ROOT);
                int elem = switch (dt) {
                    case "F32" -> 4;
                    case "BF16", "F16" -> 2;
                    default -> throw new IOException(file + ": tensor " + name + " has dtype '" + d.path("dtype").asText()
                            + "' (supported: F32, BF16, F16)");
                };
                JsonNode shapeNode = d.path("shape");
                JsonNode offs = d.path("data_offsets");
                if (!shapeNode.isArray() || !offs.isArray() || offs.size() != 2) {
                    throw new IOException(file + ": tensor " + name + " lacks a shape or data_offsets");
                }
                long[] shape = new long[shapeNode.size()];
                long count = 1;
                for (int i = 0; i < shape.length; i++) {
                    shape[i] = shapeNode.get(i).asLong(-1);
                    if (shape[i] < 0) {
                        throw new IOException(file + ": tensor " + name + " has a bad shape " + shapeNode);
                    }
                    count = Math.multiplyExact(count, shape[i]);
                }
                long begin = offs.get(0).asLong(-1);
                long end = offs.get(1).asLong(-1);
                if (begin < 0 || end < begin || dataStart + end > size || end - begin != count * elem) {
                    throw new IOException(file + ": tensor " + name + " has data_offsets " + offs + " inconsistent with"
                            + " shape " + shapeNode + " of " + dt + " and the file size " + size);
                }
                out.add(new Tensor(name, file, dt, shape, mapped.asSlice(dataStart + begin, end - begin)));
            }
            return out;
        }
    }

    private static void readFully(FileChannel ch, ByteBuffer buf, long pos, Path file) throws IOException {
        while (buf.hasRemaining()) {
            int r = ch.read(buf, pos + buf.position());
            if (r < 0) {
                throw new IOException(file + ": unexpected end of file");
            }
        }
    }
}
