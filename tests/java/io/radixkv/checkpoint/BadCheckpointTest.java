package io.radixkv.checkpoint;

import static io.radixkv.checkpoint.SafetensorsBytes.f32;
import static io.radixkv.checkpoint.SafetensorsBytes.ramp;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.radixkv.kernels.DType;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Every kind of broken checkpoint fails before the store is allocated, with one line naming the file and tensor. */
class BadCheckpointTest {
    private static final List<ParamSpec> PARAMS = List.of(ParamSpec.of("w", DType.F32, 4, 8),
            ParamSpec.of("n", DType.F32, 8));
    private static final List<TensorSpec> TENSORS = List.of(TensorSpec.of("a.weight", "w", 0, 4, 8),
            TensorSpec.of("a.norm", "n", 0, 8));

    @TempDir
    Path tmp;

    private static SafetensorsBytes good() {
        return new SafetensorsBytes().tensor("a.weight", "F32", new long[] {4, 8}, f32(ramp(32, 0.1f)))
                .tensor("a.norm", "F32", new long[] {8}, f32(ramp(8, 0.5f)));
    }

    private static String fails(Path dir, List<ParamSpec> params, String... fragments) {
        var e = assertThrows(CheckpointException.class, () -> CheckpointLoader.load(dir, params, TENSORS).close());
        String m = e.getMessage();
        assertFalse(m.contains("\n"), "one line: " + m);
        assertFalse(m.contains("0x"), "no native address: " + m);
        for (String f : fragments) {
            assertTrue(m.contains(f), "'" + f + "' missing in: " + m);
        }
        return m;
    }

    private static String fails(Path dir, String... fragments) {
        return fails(dir, PARAMS, fragments);
    }

    @Test
    void theGoodFileLoads() throws IOException {
        Path dir = tmp.resolve("good");
        good().write(dir.resolve("model.safetensors"));
        try (ParameterStore s = CheckpointLoader.load(dir, PARAMS, TENSORS)) {
            assertTrue(s.get("n").getAtIndex(java.lang.foreign.ValueLayout.JAVA_FLOAT, 7) == 1.5f);
        }
    }

    @Test
    void truncatedFile() throws IOException {
        Path f = good().write(tmp.resolve("t/model.safetensors"));
        try (RandomAccessFile r = new RandomAccessFile(f.toFile(), "rw")) {
            r.setLength(r.length() - 10);
        }
        fails(f.getParent(), f.toString(), "tensor a.norm", "past the end");
    }

    @Test
    void fileCutInsideTheHeader() throws IOException {
        Path f = good().write(tmp.resolve("h/model.safetensors"));
        byte[] all = Files.readAllBytes(f);
        Files.write(f, java.util.Arrays.copyOf(all, 40));
        fails(f.getParent(), f.toString(), "header length", "truncated");
    }

    @Test
    void offsetsPastTheEnd() throws IOException {
        Path f = good().entry("a.big", "F32", new long[] {1000}, 160, 4160).write(tmp.resolve("p/model.safetensors"));
        fails(f.getParent(), f.toString(), "tensor a.big", "past the end");
    }

    @Test
    void overlappingOffsets() throws IOException {
        Path f = new SafetensorsBytes().tensor("a.weight", "F32", new long[] {4, 8}, f32(ramp(32, 0.1f)))
                .entry("a.norm", "F32", new long[] {8}, 96, 128).write(tmp.resolve("o/model.safetensors"));
        fails(f.getParent(), f.toString(), "tensor a.norm overlaps tensor a.weight");
    }

    @Test
    void negativeOffsets() throws IOException {
        Path f = good().entry("a.neg", "F32", new long[] {8}, -32, 0).write(tmp.resolve("n/model.safetensors"));
        fails(f.getParent(), f.toString(), "tensor a.neg", "bad data_offsets");
    }

    @Test
    void offsetsThatDoNotMatchTheShape() throws IOException {
        Path f = new SafetensorsBytes().tensor("a.weight", "F32", new long[] {4, 8}, f32(ramp(32, 0.1f)))
                .entry("a.norm", "F32", new long[] {8}, 128, 140).data(new byte[32]).write(tmp.resolve("m/x.safetensors"));
        fails(f.getParent(), f.toString(), "tensor a.norm", "needs 32 bytes");
    }

    @Test
    void textInNumericHeaderFields() throws IOException {
        Path dir = tmp.resolve("text");
        String json = "{\"a.weight\":{\"dtype\":\"F32\",\"shape\":[\"4\",8],\"data_offsets\":[0,128]}}";
        Files.createDirectories(dir);
        Files.write(dir.resolve("model.safetensors"), SafetensorsBytes.withHeader(json, new byte[128]));
        fails(dir, "model.safetensors", "tensor a.weight", "bad shape");
        json = "{\"a.weight\":{\"dtype\":\"F32\",\"shape\":[4,8],\"data_offsets\":[0.0,128]}}";
        Files.write(dir.resolve("model.safetensors"), SafetensorsBytes.withHeader(json, new byte[128]));
        fails(dir, "model.safetensors", "tensor a.weight", "bad data_offsets");
    }

    @Test
    void duplicateNamesInOneHeader() throws IOException {
        Path dir = tmp.resolve("dupkey");
        String e = "\"a.norm\":{\"dtype\":\"F32\",\"shape\":[8],\"data_offsets\":[0,32]}";
        Files.createDirectories(dir);
        Files.write(dir.resolve("model.safetensors"), SafetensorsBytes.withHeader("{" + e + "," + e + "}", new byte[32]));
        fails(dir, "model.safetensors", "a.norm");
    }

    @Test
    void shapeThatDoesNotMatchTheModel() throws IOException {
        Path f = new SafetensorsBytes().tensor("a.weight", "F32", new long[] {8, 4}, f32(ramp(32, 0.1f)))
                .tensor("a.norm", "F32", new long[] {8}, f32(ramp(8, 0.5f))).write(tmp.resolve("s/model.safetensors"));
        fails(f.getParent(), f.toString(), "tensor a.weight has shape [8, 4] but the config needs [4, 8]");
    }

    @Test
    void missingTensor() throws IOException {
        Path f = new SafetensorsBytes().tensor("a.weight", "F32", new long[] {4, 8}, f32(ramp(32, 0.1f)))
                .write(tmp.resolve("mt/model.safetensors"));
        fails(f.getParent(), f.getParent().toString(), "lacks tensor a.norm");
    }

    @Test
    void unknownAndUnsupportedDtypes() throws IOException {
        Path f = new SafetensorsBytes().tensor("a.weight", "F32", new long[] {4, 8}, f32(ramp(32, 0.1f)))
                .tensor("a.norm", "Q3_K", new long[] {8}, new byte[5]).write(tmp.resolve("u/model.safetensors"));
        fails(f.getParent(), f.toString(), "tensor a.norm has dtype 'Q3_K', not one of F32, BF16, F16, Q8_0, Q4_0, Q5_0, Q4_K, Q6_K");
        // A block format LoadPlan converts (as GGUF files declare it) must hold whole blocks in exactly its bytes.
        f = new SafetensorsBytes().tensor("a.weight", "F32", new long[] {4, 8}, f32(ramp(32, 0.1f)))
                .tensor("a.norm", "Q4_K", new long[] {8}, new byte[5]).write(tmp.resolve("q/model.safetensors"));
        fails(f.getParent(), f.toString(), "tensor a.norm of Q4_K has rows of 8 values in 5 bytes, not whole 256-value blocks");
        f = new SafetensorsBytes().tensor("a.weight", "F32", new long[] {4, 8}, f32(ramp(32, 0.1f)))
                .tensor("a.norm", "I8", new long[] {8}, new byte[8]).write(tmp.resolve("i8/model.safetensors"));
        fails(f.getParent(), f.toString(), "tensor a.norm has dtype 'I8'");
        // A tensor of an unknown dtype that the model does not use does not stop the load.
        Path ok = good().tensor("extra.q", "Q4_K", new long[] {8}, new byte[5]).write(tmp.resolve("ok/model.safetensors"));
        CheckpointLoader.load(ok.getParent(), PARAMS, TENSORS).close();
    }

    @Test
    void headerTooLarge() throws IOException {
        Path dir = tmp.resolve("big");
        Files.createDirectories(dir);
        byte[] b = ByteBuffer.allocate(64).order(ByteOrder.LITTLE_ENDIAN).putLong(200L << 20).array();
        Files.write(dir.resolve("model.safetensors"), b);
        fails(dir, "model.safetensors", "header length 209715200", "at most");
        b = ByteBuffer.allocate(64).order(ByteOrder.LITTLE_ENDIAN).putLong(-5).array();
        Files.write(dir.resolve("model.safetensors"), b);
        fails(dir, "model.safetensors", "header length -5");
    }

    @Test
    void shardListedInTheIndexButMissing() throws IOException {
        Path dir = tmp.resolve("shards");
        new SafetensorsBytes().tensor("a.weight", "F32", new long[] {4, 8}, f32(ramp(32, 0.1f)))
                .write(dir.resolve("model-00001-of-00002.safetensors"));
        Files.writeString(dir.resolve(Checkpoint.INDEX), """
                {"metadata": {"total_size": 160}, "weight_map": {
                  "a.weight": "model-00001-of-00002.safetensors",
                  "a.norm": "model-00002-of-00002.safetensors"}}""");
        fails(dir, "model-00002-of-00002.safetensors", "a.norm", "missing");
    }

    @Test
    void indexNamesAShardThatLacksTheTensor() throws IOException {
        Path dir = tmp.resolve("wrongshard");
        new SafetensorsBytes().tensor("a.weight", "F32", new long[] {4, 8}, f32(ramp(32, 0.1f)))
                .write(dir.resolve("model-00001-of-00002.safetensors"));
        new SafetensorsBytes().tensor("a.norm", "F32", new long[] {8}, f32(ramp(8, 0.5f)))
                .write(dir.resolve("model-00002-of-00002.safetensors"));
        Files.writeString(dir.resolve(Checkpoint.INDEX), """
                {"weight_map": {"a.weight": "model-00001-of-00002.safetensors",
                                "a.norm": "model-00001-of-00002.safetensors"}}""");
        fails(dir, "model-00001-of-00002.safetensors", "tensor a.norm", "does not hold it");
        Files.writeString(dir.resolve(Checkpoint.INDEX), """
                {"weight_map": {"a.weight": "../model-00001-of-00002.safetensors"}}""");
        fails(dir, Checkpoint.INDEX, "tensor a.weight", "not a file name");
    }

    @Test
    void tensorInTwoFiles() throws IOException {
        Path dir = tmp.resolve("two");
        good().write(dir.resolve("a.safetensors"));
        good().write(dir.resolve("b.safetensors"));
        fails(dir, "b.safetensors", "tensor a.weight appears in both");
    }

    /**
     * A header declaring a 4 TiB tensor in a small file (and a model whose store would be 4 TiB)
     * fails on the header: allocating the store first would throw OutOfMemoryError instead.
     */
    @Test
    void hugeDeclaredTensorFailsBeforeAnyAllocation() throws IOException {
        long rows = 1L << 20;
        long cols = 1L << 20;
        List<ParamSpec> huge = List.of(ParamSpec.of("w", DType.F32, rows, cols), ParamSpec.of("n", DType.F32, 8));
        List<TensorSpec> specs = List.of(TensorSpec.of("a.weight", "w", 0, rows, cols), TensorSpec.of("a.norm", "n", 0, 8));
        Path f = new SafetensorsBytes().entry("a.weight", "F32", new long[] {rows, cols}, 0, rows * cols * 4)
                .tensor("a.norm", "F32", new long[] {8}, f32(ramp(8, 0.5f))).write(tmp.resolve("huge/model.safetensors"));
        var e = assertThrows(CheckpointException.class, () -> CheckpointLoader.load(f.getParent(), huge, specs).close());
        assertTrue(e.getMessage().contains(f + ": tensor a.weight") && e.getMessage().contains("past the end"),
                e.getMessage());
        // A small tensor where the model wants a huge one: the shape check comes first too.
        Path g = good().write(tmp.resolve("huge2/model.safetensors"));
        e = assertThrows(CheckpointException.class, () -> CheckpointLoader.load(g.getParent(), huge, specs).close());
        assertTrue(e.getMessage().contains("has shape [4, 8] but the config needs [1048576, 1048576]"), e.getMessage());
    }

    /** Offsets near Long.MAX_VALUE whose sums wrap around must not reach a memory access. */
    @Test
    void offsetOverflowNamesFileAndTensor() throws IOException {
        long n = (1L << 62) + 1; // n * 4 wraps to 4
        long end = Long.MAX_VALUE - 4;
        Path f = good().entry("a.wrap", "F32", new long[] {n}, end - 4, end).write(tmp.resolve("wrap/model.safetensors"));
        fails(f.getParent(), f.toString(), "tensor a.wrap");
    }
}
