package io.radixkv.model;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.radixkv.kernels.Bf16;
import io.radixkv.kernels.DType;
import java.io.IOException;
import java.io.OutputStream;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** Writes small HF-style checkpoints (config.json + safetensors) for loader tests. */
public final class SafetensorsTestWriter {
    private static final ObjectMapper JSON = new ObjectMapper();

    /** A tensor: name, HF dtype string, shape, float values. */
    public record T(String name, String dtype, long[] shape, float[] values) {}

    private SafetensorsTestWriter() {}

    static float[] floats(MemorySegment seg, DType d, long offset, long n) {
        float[] out = new float[(int) n];
        for (int i = 0; i < n; i++) {
            out[i] = d == DType.BF16 ? Bf16.toFloat(seg.getAtIndex(ValueLayout.JAVA_SHORT, offset + i))
                    : seg.getAtIndex(ValueLayout.JAVA_FLOAT, offset + i);
        }
        return out;
    }

    /** The HF tensors of a model's weights (unfused), in the given file dtype. */
    static List<T> tensorsOf(ModelWeights w, String dtype) {
        ModelConfig c = w.config();
        DType d = w.dtype();
        int h = c.hidden();
        int q = c.qDim();
        int kv = c.kvDim();
        int inter = c.intermediate();
        List<T> out = new ArrayList<>();
        out.add(new T("model.embed_tokens.weight", dtype, new long[] {c.vocab(), h}, floats(w.embed(), d, 0, (long) c.vocab() * h)));
        for (int l = 0; l < c.layers(); l++) {
            String p = "model.layers." + l + ".";
            ModelWeights.Layer L = w.layer(l);
            out.add(new T(p + "self_attn.q_proj.weight", dtype, new long[] {q, h}, floats(L.qkv(), d, 0, (long) q * h)));
            out.add(new T(p + "self_attn.k_proj.weight", dtype, new long[] {kv, h}, floats(L.qkv(), d, (long) q * h, (long) kv * h)));
            out.add(new T(p + "self_attn.v_proj.weight", dtype, new long[] {kv, h},
                    floats(L.qkv(), d, (long) (q + kv) * h, (long) kv * h)));
            out.add(new T(p + "self_attn.o_proj.weight", dtype, new long[] {h, q}, floats(L.o(), d, 0, (long) h * q)));
            out.add(new T(p + "mlp.gate_proj.weight", dtype, new long[] {inter, h}, floats(L.gateUp(), d, 0, (long) inter * h)));
            out.add(new T(p + "mlp.up_proj.weight", dtype, new long[] {inter, h},
                    floats(L.gateUp(), d, (long) inter * h, (long) inter * h)));
            out.add(new T(p + "mlp.down_proj.weight", dtype, new long[] {h, inter}, floats(L.down(), d, 0, (long) h * inter)));
            out.add(new T(p + "input_layernorm.weight", dtype, new long[] {h}, floats(L.inputNorm(), DType.F32, 0, h)));
            out.add(new T(p + "post_attention_layernorm.weight", dtype, new long[] {h},
                    floats(L.postNorm(), DType.F32, 0, h)));
        }
        out.add(new T("model.norm.weight", dtype, new long[] {h}, floats(w.finalNorm(), DType.F32, 0, h)));
        if (!c.tiedEmbeddings()) {
            out.add(new T("lm_head.weight", dtype, new long[] {c.vocab(), h}, floats(w.lmHead(), d, 0, (long) c.vocab() * h)));
        }
        return out;
    }

    static void writeConfig(Path dir, ModelConfig c) throws IOException {
        Files.createDirectories(dir);
        JSON.writerWithDefaultPrettyPrinter().writeValue(dir.resolve("config.json").toFile(), c.toHfConfig());
    }

    /**
     * The tensors in {@code shards} files named and indexed as transformers writes them
     * ({@code model-0000i-of-0000n.safetensors} + {@code model.safetensors.index.json}); within a
     * file the data is in name order, so fused tensors (q/k/v) are not adjacent.
     */
    static void writeSharded(Path dir, List<T> tensors, int shards) throws IOException {
        Files.createDirectories(dir);
        List<T> sorted = new ArrayList<>(tensors);
        sorted.sort(java.util.Comparator.comparing(T::name));
        ObjectNode index = JSON.createObjectNode();
        long total = 0;
        for (T t : sorted) {
            total += (long) t.values().length * (t.dtype().equals("F32") ? 4 : 2);
        }
        index.putObject("metadata").put("total_size", total);
        ObjectNode map = index.putObject("weight_map");
        int per = (sorted.size() + shards - 1) / shards;
        for (int i = 0; i < shards; i++) {
            String name = String.format("model-%05d-of-%05d.safetensors", i + 1, shards);
            List<T> part = sorted.subList(Math.min(i * per, sorted.size()), Math.min((i + 1) * per, sorted.size()));
            write(dir.resolve(name), part);
            for (T t : part) {
                map.put(t.name(), name);
            }
        }
        JSON.writerWithDefaultPrettyPrinter().writeValue(dir.resolve("model.safetensors.index.json").toFile(), index);
    }

    /** One safetensors file holding the tensors (data in the order given, header sorted as the format does not require). */
    public static void write(Path file, List<T> tensors) throws IOException {
        ObjectNode header = JSON.createObjectNode();
        header.putObject("__metadata__").put("format", "pt");
        long off = 0;
        Map<T, Long> offsets = new LinkedHashMap<>();
        for (T t : tensors) {
            long bytes = (long) t.values().length * (t.dtype().equals("F32") ? 4 : 2);
            ObjectNode e = header.putObject(t.name());
            e.put("dtype", t.dtype());
            var shape = e.putArray("shape");
            for (long s : t.shape()) {
                shape.add(s);
            }
            e.putArray("data_offsets").add(off).add(off + bytes);
            offsets.put(t, off);
            off += bytes;
        }
        byte[] hb = JSON.writeValueAsString(header).getBytes(StandardCharsets.UTF_8);
        try (OutputStream out = Files.newOutputStream(file)) {
            ByteBuffer len = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(hb.length);
            out.write(len.array());
            out.write(hb);
            for (T t : tensors) {
                boolean f32 = t.dtype().equals("F32");
                ByteBuffer b = ByteBuffer.allocate(t.values().length * (f32 ? 4 : 2)).order(ByteOrder.LITTLE_ENDIAN);
                for (float v : t.values()) {
                    switch (t.dtype()) {
                        case "F32" -> b.putFloat(v);
                        case "BF16" -> b.putShort(Bf16.fromFloat(v));
                        case "F16" -> b.putShort(Float.floatToFloat16(v));
                        default -> throw new IllegalArgumentException(t.dtype());
                    }
                }
                out.write(b.array());
            }
        }
    }
}
