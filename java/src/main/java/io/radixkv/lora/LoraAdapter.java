package io.radixkv.lora;

import io.radixkv.checkpoint.Checkpoint;
import io.radixkv.checkpoint.CheckpointLoader;
import io.radixkv.checkpoint.ParamSpec;
import io.radixkv.checkpoint.ParameterStore;
import io.radixkv.checkpoint.SafetensorsFile;
import io.radixkv.checkpoint.TensorEntry;
import io.radixkv.checkpoint.TensorSpec;
import io.radixkv.kernels.DType;
import io.radixkv.model.ModelConfig;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.DigestInputStream;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A PEFT LoRA adapter directory ({@code adapter_config.json} + {@code adapter_model.safetensors},
 * f32, bf16 or f16 tensors) read and checked against a base model, its factors held as f32 in an
 * off-heap store (the host copy that {@link LoraSlots} copies into a slot). Tensor names are
 * PEFT's: {@code base_model.model.model.layers.N.self_attn.q_proj.lora_A.weight} ({@code [r, in]})
 * and {@code ...lora_B.weight} ({@code [out, r]}). Every module the config targets must be there
 * with its shape, and nothing else may be: a tensor radixkv would not apply (an embedding or
 * LM-head adapter, a DoRA magnitude, a bias) is refused rather than ignored. Immutable after
 * {@link #load}; {@link #close()} frees the store.
 */
public final class LoraAdapter implements AutoCloseable {
    public static final String WEIGHTS_FILE = "adapter_model.safetensors";
    private static final String PREFIX = "base_model.model.";
    private static final AtomicLong IDS = new AtomicLong(1);

    /** One adapted projection: where its factors are in the store, its rank and scale. */
    record Part(int layer, LoraModule module, int rank, float scale, String a, String b) {}

    private final String name;
    private final Path dir;
    private final long id;
    private final String sha256;
    private final ParameterStore store;
    private final List<Part> parts;
    private final int maxRank;

    private LoraAdapter(String name, Path dir, String sha256, ParameterStore store, List<Part> parts) {
        this.name = name;
        this.dir = dir;
        this.id = IDS.getAndIncrement();
        this.sha256 = sha256;
        this.store = store;
        this.parts = List.copyOf(parts);
        this.maxRank = parts.stream().mapToInt(Part::rank).max().orElse(0);
    }

    /**
     * Reads adapter {@code dir} for {@code model}.
     *
     * @throws IllegalArgumentException with one line naming what is wrong: the field of the
     *     config radixkv cannot serve, a missing or unexpected tensor, a shape that does not fit
     *     the base model, a rank over {@code maxRank} (--max-lora-rank), or an unreadable file
     */
    public static LoraAdapter load(String name, Path dir, ModelConfig model, int maxRank) {
        if (name == null || name.isBlank()) {
            throw new IllegalArgumentException("an adapter needs a name");
        }
        try {
            return read(name, dir, model, maxRank);
        } catch (IOException e) {
            throw new IllegalArgumentException("adapter " + name + ": " + e.getMessage(), e);
        }
    }

    private static LoraAdapter read(String name, Path dir, ModelConfig model, int maxRank) throws IOException {
        if (!Files.isDirectory(dir)) {
            throw new IllegalArgumentException("adapter " + name + ": " + dir + " is not a directory");
        }
        PeftAdapterConfig cfg = PeftAdapterConfig.read(dir);
        Path weights = dir.resolve(WEIGHTS_FILE);
        if (!Files.isRegularFile(weights)) {
            throw new IllegalArgumentException("adapter " + name + ": no " + WEIGHTS_FILE + " in " + dir
                    + " (only safetensors adapters are read)");
        }
        SafetensorsFile file = SafetensorsFile.read(weights);
        List<ParamSpec> params = new ArrayList<>();
        List<TensorSpec> tensors = new ArrayList<>();
        List<Part> parts = new ArrayList<>();
        Set<String> expected = new HashSet<>();
        for (int l = 0; l < model.layers(); l++) {
            for (LoraModule m : LoraModule.values()) {
                String key = m.key(l);
                if (!cfg.targets(key, l)) {
                    continue;
                }
                int rank = cfg.rankOf(key);
                if (rank > maxRank) {
                    throw new IllegalArgumentException("adapter " + name + ": rank " + rank + " of " + key
                            + " exceeds the maximum LoRA rank " + maxRank + " (--max-lora-rank)");
                }
                String a = PREFIX + key + ".lora_A.weight";
                String b = PREFIX + key + ".lora_B.weight";
                String pa = l + "." + m + ".a";
                String pb = l + "." + m + ".b";
                int in = m.inFeatures(model);
                int out = m.outFeatures(model);
                params.add(ParamSpec.of(pa, DType.F32, rank, in));
                params.add(ParamSpec.of(pb, DType.F32, out, rank));
                tensors.add(TensorSpec.of(a, pa, 0, rank, in));
                tensors.add(TensorSpec.of(b, pb, 0, out, rank));
                expected.add(a);
                expected.add(b);
                parts.add(new Part(l, m, rank, (float) cfg.scaleOf(key), pa, pb));
            }
        }
        if (parts.isEmpty()) {
            throw new IllegalArgumentException("adapter " + name + ": target_modules matches none of the model's "
                    + "projections (q/k/v/o/gate/up/down_proj of layers 0.." + (model.layers() - 1) + ")");
        }
        for (String t : file.tensors().keySet()) {
            if (!expected.contains(t)) {
                throw new IllegalArgumentException("adapter " + name + ": unexpected tensor " + t + " in " + weights
                        + " (only lora_A/lora_B of the targeted attention and MLP projections are applied)");
            }
        }
        for (TensorEntry t : file.tensors().values()) {
            if (!Set.of("F32", "BF16", "F16").contains(t.dtype())) {
                throw new IllegalArgumentException("adapter " + name + ": tensor " + t.name() + " is " + t.dtype()
                        + " (f32, bf16 or f16 only)");
            }
        }
        String sha256 = sha256(dir.resolve(PeftAdapterConfig.FILE), weights);
        Checkpoint ckpt = new Checkpoint(dir, List.of(file), file.tensors());
        ParameterStore store = CheckpointLoader.load(ckpt, params, tensors);
        return new LoraAdapter(name, dir, sha256, store, parts);
    }

    /** SHA-256 of the config's length, the config, then the weights file (the files as they are on disk). */
    private static String sha256(Path config, Path weights) throws IOException {
        MessageDigest md;
        try {
            md = MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 missing from the JDK", e);
        }
        md.update(Long.toString(Files.size(config)).getBytes(java.nio.charset.StandardCharsets.US_ASCII));
        for (Path p : List.of(config, weights)) {
            try (InputStream in = new DigestInputStream(Files.newInputStream(p), md)) {
                in.transferTo(OutputStream.nullOutputStream());
            }
        }
        return HexFormat.of().formatHex(md.digest());
    }

    /** The name requests select it by (the served model name). */
    public String name() {
        return name;
    }

    public Path dir() {
        return dir;
    }

    /** A number no other adapter loaded in this process has: tells a reload under the same name apart. */
    public long id() {
        return id;
    }

    /**
     * Hex SHA-256 of its files ({@code adapter_config.json}, then {@code adapter_model.safetensors}):
     * the same for the same files on every replica, different for other weights under the same name.
     */
    public String sha256() {
        return sha256;
    }

    /** The largest rank of its projections. */
    public int maxRank() {
        return maxRank;
    }

    /** The adapted projections. */
    List<Part> parts() {
        return parts;
    }

    MemorySegment block(String param) {
        return store.get(param);
    }

    /** Bytes of f32 factors held. */
    public long bytes() {
        return store.bytes();
    }

    @Override
    public void close() {
        store.close();
    }

    @Override
    public String toString() {
        return "LoRA adapter " + name + " (" + dir + ", " + parts.size() + " projections, rank <= " + maxRank + ")";
    }
}
