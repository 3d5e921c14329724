package io.radixkv.model;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.radixkv.kernels.Bf16;
import io.radixkv.kernels.DType;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class ModelWeightsTest {
    /** A smaller vocabulary keeps the written checkpoints tiny. */
    private static final ModelConfig SMALL_VOCAB = new ModelConfig(32, 48, 2, 4, 2, 8, 300, 10000f, 1e-5f, false, 512);

    @TempDir
    Path tmp;

    private static boolean same(MemorySegment a, MemorySegment b) {
        return a.byteSize() == b.byteSize() && a.mismatch(b) == -1;
    }

    private static boolean sameWeights(ModelWeights a, ModelWeights b) {
        if (!same(a.embed(), b.embed()) || !same(a.finalNorm(), b.finalNorm()) || !same(a.lmHead(), b.lmHead())) {
            return false;
        }
        for (int l = 0; l < a.config().layers(); l++) {
            var x = a.layer(l);
            var y = b.layer(l);
            if (!same(x.qkv(), y.qkv()) || !same(x.o(), y.o()) || !same(x.gateUp(), y.gateUp()) || !same(x.down(), y.down())
                    || !same(x.inputNorm(), y.inputNorm()) || !same(x.postNorm(), y.postNorm())) {
                return false;
            }
        }
        return true;
    }

    @Test
    void randomWeightsAreDeterministicPerSeed() {
        try (var a = ModelWeights.random(ModelPresets.tiny(), DType.F32, 5);
             var b = ModelWeights.random(ModelPresets.tiny(), DType.F32, 5);
             var c = ModelWeights.random(ModelPresets.tiny(), DType.F32, 6)) {
            assertTrue(sameWeights(a, b));
            assertTrue(!sameWeights(a, c));
            // Scale: projections have std ~ 1/sqrt(fan_in), norms ~ 1.
            double ss = 0;
            long n = a.layer(0).qkv().byteSize() / 4;
            for (long i = 0; i < n; i++) {
                double v = a.layer(0).qkv().getAtIndex(ValueLayout.JAVA_FLOAT, i);
                ss += v * v;
            }
            assertEquals(1.0 / Math.sqrt(64), Math.sqrt(ss / n), 0.01);
            float g = a.finalNorm().getAtIndex(ValueLayout.JAVA_FLOAT, 3);
            assertTrue(g > 0.89f && g < 1.11f, "norm weight " + g);
        }
        try (var bf = ModelWeights.random(ModelPresets.tiny(), DType.BF16, 5);
             var f = ModelWeights.random(ModelPresets.tiny(), DType.F32, 5)) {
            assertEquals(f.embed().byteSize() / 2, bf.embed().byteSize());
            // bf16 weights are the f32 ones rounded.
            for (long i = 0; i < 1000; i++) {
                assertEquals(Bf16.fromFloat(f.layer(1).down().getAtIndex(ValueLayout.JAVA_FLOAT, i)),
                        bf.layer(1).down().getAtIndex(ValueLayout.JAVA_SHORT, i));
            }
            assertEquals(f.finalNorm().byteSize(), bf.finalNorm().byteSize(), "norms stay f32");
        }
    }

    @ParameterizedTest(name = "file {0} -> {1}, tied {2}")
    @CsvSource({"F32, f32, false", "BF16, bf16, false", "BF16, f32, true", "F16, f32, false", "F32, bf16, true",
        "F16, f16, false", "F32, f16, true", "BF16, f16, false"})
    void loaderRoundTrip(String fileDtype, String target, boolean tied) throws IOException {
        ModelConfig c = SMALL_VOCAB.withTiedEmbeddings(tied);
        DType t = DType.parse(target);
        try (var orig = ModelWeights.random(c, DType.F32, 42)) {
            Path dir = tmp.resolve("ckpt");
            SafetensorsTestWriter.writeConfig(dir, c);
            List<SafetensorsTestWriter.T> all = SafetensorsTestWriter.tensorsOf(orig, fileDtype);
            // Sharded like real checkpoints: two files.
            int half = all.size() / 2;
            SafetensorsTestWriter.write(dir.resolve("model-00001-of-00002.safetensors"), all.subList(0, half));
            SafetensorsTestWriter.write(dir.resolve("model-00002-of-00002.safetensors"), all.subList(half, all.size()));
            try (var loaded = ModelWeights.load(dir, t)) {
                assertEquals(c, loaded.config());
                assertEquals(t, loaded.dtype());
                if (tied) {
                    assertTrue(loaded.lmHead() == loaded.embed());
                }
                // Expected: the original values rounded through the file dtype, then to the target dtype.
                for (int l = 0; l < c.layers(); l++) {
                    compare(orig.layer(l).qkv(), loaded.layer(l).qkv(), t, fileDtype, "qkv " + l);
                    compare(orig.layer(l).gateUp(), loaded.layer(l).gateUp(), t, fileDtype, "gateUp " + l);
                    compare(orig.layer(l).down(), loaded.layer(l).down(), t, fileDtype, "down " + l);
                    compare(orig.layer(l).o(), loaded.layer(l).o(), t, fileDtype, "o " + l);
                    compare(orig.layer(l).postNorm(), loaded.layer(l).postNorm(), DType.F32, fileDtype, "norm " + l);
                }
                compare(orig.embed(), loaded.embed(), t, fileDtype, "embed");
                compare(orig.lmHead(), loaded.lmHead(), t, fileDtype, "lm_head");
            }
        }
    }

    private static void compare(MemorySegment origF32, MemorySegment loaded, DType t, String fileDtype, String what) {
        long n = origF32.byteSize() / 4;
        for (long i = 0; i < n; i++) {
            float v = origF32.getAtIndex(ValueLayout.JAVA_FLOAT, i);
            float inFile = switch (fileDtype) {
                case "BF16" -> Bf16.round((v));
                case "F16" -> Float.float16ToFloat(Float.floatToFloat16(v));
                default -> v;
            };
            float expected = switch (t) {
                case BF16 -> Bf16.round((inFile));
                case F16 -> Float.float16ToFloat(Float.floatToFloat16(inFile));
                default -> inFile;
            };
            float actual = switch (t) {
                case BF16 -> Bf16.toFloat(loaded.getAtIndex(ValueLayout.JAVA_SHORT, i));
                case F16 -> Float.float16ToFloat(loaded.getAtIndex(ValueLayout.JAVA_SHORT, i));
                default -> loaded.getAtIndex(ValueLayout.JAVA_FLOAT, i);
            };
            if (expected != actual) {
                throw new AssertionError(what + "[" + i + "]: expected " + expected + " but loaded " + actual);
            }
        }
    }

    @Test
    void loaderErrorsNameTheProblem() throws IOException {
        try (var orig = ModelWeights.random(SMALL_VOCAB, DType.F32, 1)) {
            List<SafetensorsTestWriter.T> all = SafetensorsTestWriter.tensorsOf(orig, "F32");

            Path missing = tmp.resolve("missing");
            SafetensorsTestWriter.writeConfig(missing, SMALL_VOCAB);
            List<SafetensorsTestWriter.T> without = new ArrayList<>(all);
            without.removeIf(x -> x.name().equals("model.layers.1.mlp.up_proj.weight"));
            SafetensorsTestWriter.write(missing.resolve("model.safetensors"), without);
            var e = assertThrows(IOException.class, () -> ModelWeights.load(missing, DType.F32));
            assertTrue(e.getMessage().contains("lacks tensor model.layers.1.mlp.up_proj.weight"), e.getMessage());

            Path shaped = tmp.resolve("shaped");
            SafetensorsTestWriter.writeConfig(shaped, SMALL_VOCAB);
            List<SafetensorsTestWriter.T> bad = new ArrayList<>(all);
            var q = bad.get(2); // k_proj [16, 32]
            bad.set(2, new SafetensorsTestWriter.T(q.name(), q.dtype(), new long[] {q.shape()[1], q.shape()[0]}, q.values()));
            SafetensorsTestWriter.write(shaped.resolve("model.safetensors"), bad);
            e = assertThrows(IOException.class, () -> ModelWeights.load(shaped, DType.F32));
            assertTrue(e.getMessage().contains("model.layers.0.self_attn.k_proj.weight")
                    && e.getMessage().contains("has shape [32, 16] but the config needs [16, 32]"), e.getMessage());

            Path dup = tmp.resolve("dup");
            SafetensorsTestWriter.writeConfig(dup, SMALL_VOCAB);
            SafetensorsTestWriter.write(dup.resolve("a.safetensors"), all);
            SafetensorsTestWriter.write(dup.resolve("b.safetensors"), all.subList(0, 1));
            e = assertThrows(IOException.class, () -> ModelWeights.load(dup, DType.F32));
            assertTrue(e.getMessage().contains("appears in both"), e.getMessage());

            Path garbage = tmp.resolve("garbage");
            SafetensorsTestWriter.writeConfig(garbage, SMALL_VOCAB);
            Files.write(garbage.resolve("model.safetensors"), new byte[] {(byte) 0xff, 1, 2, 3, 4, 5, 6, 7, 8, 9});
            e = assertThrows(IOException.class, () -> ModelWeights.load(garbage, DType.F32));
            assertTrue(e.getMessage().contains("header length"), e.getMessage());

            Path empty = tmp.resolve("empty");
            SafetensorsTestWriter.writeConfig(empty, SMALL_VOCAB);
            e = assertThrows(IOException.class, () -> ModelWeights.load(empty, DType.F32));
            assertTrue(e.getMessage().contains("no *.safetensors"), e.getMessage());

            Path i8 = tmp.resolve("i8");
            SafetensorsTestWriter.writeConfig(i8, SMALL_VOCAB);
            Files.writeString(i8.resolve("x.safetensors"), "");
            Files.write(i8.resolve("x.safetensors"), header("{\"model.embed_tokens.weight\":{\"dtype\":\"I8\","
                    + "\"shape\":[300,32],\"data_offsets\":[0,9600]}}", 9600));
            e = assertThrows(IOException.class, () -> ModelWeights.load(i8, DType.F32));
            assertTrue(e.getMessage().contains("dtype 'I8'"), e.getMessage());
        }
        assertThrows(IllegalArgumentException.class, () -> ModelWeights.random(SMALL_VOCAB, DType.FP8_E4M3, 1));
    }

    private static byte[] header(String json, int dataBytes) {
        byte[] h = json.getBytes(java.nio.charset.StandardCharsets.UTF_8);
        var b = java.nio.ByteBuffer.allocate(8 + h.length + dataBytes).order(java.nio.ByteOrder.LITTLE_ENDIAN);
        b.putLong(h.length).put(h);
        return b.array();
    }

    /** transformers' sharded layout (index + shards, name-ordered data): bf16 files into bf16 weights keep every bit. */
    @ParameterizedTest(name = "tied {0}")
    @CsvSource({"false", "true"})
    void shardedIndexBf16KeepsTheBits(boolean tied) throws IOException {
        ModelConfig c = SMALL_VOCAB.withTiedEmbeddings(tied);
        try (var orig = ModelWeights.random(c, DType.BF16, 11)) {
            Path dir = tmp.resolve("idx");
            SafetensorsTestWriter.writeConfig(dir, c);
            SafetensorsTestWriter.writeSharded(dir, SafetensorsTestWriter.tensorsOf(orig, "BF16"), 3);
            Files.write(dir.resolve("stray.safetensors"), new byte[] {1, 2, 3}); // not in the index: not read
            try (var loaded = ModelWeights.load(dir, DType.BF16)) {
                assertTrue(same(orig.embed(), loaded.embed()) && same(orig.lmHead(), loaded.lmHead()));
                for (int l = 0; l < c.layers(); l++) {
                    var x = orig.layer(l);
                    var y = loaded.layer(l);
                    assertTrue(same(x.qkv(), y.qkv()) && same(x.o(), y.o()) && same(x.gateUp(), y.gateUp())
                            && same(x.down(), y.down()), "layer " + l);
                    // Norms are f32 in memory, bf16 in the file.
                    compare(x.postNorm(), y.postNorm(), DType.F32, "BF16", "post norm " + l);
                    compare(x.inputNorm(), y.inputNorm(), DType.F32, "BF16", "input norm " + l);
                }
                compare(orig.finalNorm(), loaded.finalNorm(), DType.F32, "BF16", "final norm");
                assertEquals(tied, loaded.lmHead() == loaded.embed());
            }
        }
    }

    /** With tied embeddings an lm_head.weight that the file happens to carry is not used (transformers ties it). */
    @Test
    void tiedEmbeddingsIgnoreAStoredLmHead() throws IOException {
        ModelConfig c = SMALL_VOCAB.withTiedEmbeddings(true);
        try (var orig = ModelWeights.random(c, DType.F32, 12);
             var other = ModelWeights.random(SMALL_VOCAB, DType.F32, 13)) {
            Path dir = tmp.resolve("tied");
            SafetensorsTestWriter.writeConfig(dir, c);
            List<SafetensorsTestWriter.T> all = new ArrayList<>(SafetensorsTestWriter.tensorsOf(orig, "F32"));
            all.add(SafetensorsTestWriter.tensorsOf(other, "F32").stream().filter(t -> t.name().equals("lm_head.weight"))
                    .findFirst().orElseThrow());
            SafetensorsTestWriter.write(dir.resolve("model.safetensors"), all);
            try (var loaded = ModelWeights.load(dir, DType.F32)) {
                assertTrue(sameWeights(orig, loaded));
            }
        }
    }

    /**
     * Shapes are checked before anything is allocated: a header declaring a 4 TiB embedding in
     * a tiny file is an IOException naming the file and tensor, not an OutOfMemoryError.
     */
    @Test
    void hugeDeclaredShapeFailsBeforeAllocating() throws IOException {
        ModelConfig huge = new ModelConfig(1024, 2048, 1, 8, 2, 128, 1 << 30, 10000f, 1e-5f, true, 512);
        Path dir = tmp.resolve("huge");
        SafetensorsTestWriter.writeConfig(dir, huge);
        long bytes = (1L << 30) * 1024 * 4;
        Files.write(dir.resolve("model.safetensors"), header("{\"model.embed_tokens.weight\":{\"dtype\":\"F32\","
                + "\"shape\":[1073741824,1024],\"data_offsets\":[0," + bytes + "]}}", 64));
        var e = assertThrows(IOException.class, () -> ModelWeights.load(dir, DType.F32));
        assertTrue(e.getMessage().contains(dir.resolve("model.safetensors") + ": tensor model.embed_tokens.weight"),
                e.getMessage());
    }

    /** data_offsets whose sums overflow are an IOException naming the file and tensor, never a native address. */
    @Test
    void offsetOverflowNamesFileAndTensor() throws IOException {
        try (var orig = ModelWeights.random(SMALL_VOCAB, DType.F32, 14)) {
            Path dir = tmp.resolve("wrap");
            SafetensorsTestWriter.writeConfig(dir, SMALL_VOCAB);
            SafetensorsTestWriter.write(dir.resolve("model.safetensors"), SafetensorsTestWriter.tensorsOf(orig, "F32"));
            // One more file: a tensor whose element count times 4 wraps to 4 and whose end wraps the file offset.
            long end = Long.MAX_VALUE - 4;
            Files.write(dir.resolve("z.safetensors"), header("{\"extra.wrap\":{\"dtype\":\"F32\",\"shape\":["
                    + ((1L << 62) + 1) + "],\"data_offsets\":[" + (end - 4) + "," + end + "]}}", 8));
            Exception e = assertThrows(Exception.class, () -> ModelWeights.load(dir, DType.F32));
            assertTrue(e instanceof IOException, "not an IOException: " + e);
            assertTrue(e.getMessage().contains(dir.resolve("z.safetensors") + ": tensor extra.wrap")
                    && !e.getMessage().contains("0x"), e.getMessage());
        }
    }

    /**
     * A numeric config.json field given as text is refused, naming the field, instead of falling
     * back to the default.
     */
    @ParameterizedTest(name = "{0}")
    @CsvSource({"rms_norm_eps", "rope_theta", "max_position_embeddings"})
    void numericConfigFieldAsTextIsRefused(String field) throws IOException {
        try (var orig = ModelWeights.random(SMALL_VOCAB, DType.F32, 15)) {
            Path dir = tmp.resolve("text-" + field);
            SafetensorsTestWriter.writeConfig(dir, SMALL_VOCAB);
            var cfg = (com.fasterxml.jackson.databind.node.ObjectNode) new com.fasterxml.jackson.databind.ObjectMapper()
                    .readTree(dir.resolve("config.json").toFile());
            cfg.put(field, "fast");
            Files.writeString(dir.resolve("config.json"), cfg.toString());
            SafetensorsTestWriter.write(dir.resolve("model.safetensors"), SafetensorsTestWriter.tensorsOf(orig, "F32"));
            Exception e = assertThrows(Exception.class, () -> ModelWeights.load(dir, DType.F32).close());
            assertTrue(e.getMessage().contains(field), e.getMessage());
        }
    }

    @Test
    void loadedCheckpointRunsLikeTheOriginal() throws IOException {
        ModelConfig c = ModelPresets.tiny();
        try (var orig = ModelWeights.random(c, DType.F32, 77)) {
            Path dir = tmp.resolve("tiny");
            SafetensorsTestWriter.writeConfig(dir, c);
            SafetensorsTestWriter.write(dir.resolve("model.safetensors"), SafetensorsTestWriter.tensorsOf(orig, "F32"));
            try (var loaded = ModelWeights.load(dir, DType.F32)) {
                assertTrue(sameWeights(orig, loaded));
                assertNotEquals(0, loaded.bytes());
                assertEquals(c.parameterCount() * 4, loaded.bytes());
            }
        }
    }
}
