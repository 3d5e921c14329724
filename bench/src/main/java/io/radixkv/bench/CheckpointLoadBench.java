package io.radixkv.bench;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.radixkv.checkpoint.Checkpoint;
import io.radixkv.checkpoint.CheckpointFile;
import io.radixkv.checkpoint.ParamSpec;
import io.radixkv.checkpoint.ParameterStore;
import io.radixkv.checkpoint.TensorSpec;
import io.radixkv.kernels.DType;
import io.radixkv.model.ModelConfig;
import io.radixkv.model.ModelWeights;
import io.radixkv.model.WeightLayout;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.AuxCounters;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.infra.Blackhole;

/**
 * Checkpoint load throughput: {@link ModelWeights#load} of a bf16 checkpoint (written by the
 * setup to {@code build/bench-checkpoint}, sharded with an index as transformers writes it,
 * ~440 MB) into bf16 or f32 weights, next to a plain sequential {@link FileChannel} read of the
 * same files in the same run. Both read from the page cache (the files were just written), so
 * the ratio is the loader's overhead (validation, allocation, copy/convert), not the disk.
 * Read {@code gbs}: GB of checkpoint files per second.
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@State(Scope.Benchmark)
public class CheckpointLoadBench {
    /** GB of file bytes per second. */
    @AuxCounters(AuxCounters.Type.OPERATIONS)
    @State(Scope.Thread)
    public static class Traffic {
        public double gbs;

        @Setup(Level.Iteration)
        public void reset() {
            gbs = 0;
        }

        public void add(long bytes) {
            gbs += bytes / 1e9;
        }
    }

    /** Weights dtype of the loaded model (the file is bf16). */
    @Param({"bf16", "f32"})
    public String weights;

    /** Largest shard in MiB. */
    @Param({"200"})
    public int shardMib;

    /** A Llama shape of ~440 MB in bf16: 2 layers of a 1B-class model with its 32k vocabulary. */
    static final ModelConfig CONFIG = new ModelConfig(2048, 5632, 2, 16, 4, 128, 32000, 10000f, 1e-5f, false, 4096);

    private Path dir;
    private List<Path> files;
    private long fileBytes;

    @Setup(Level.Trial)
    public void setUp() throws IOException {
        dir = Path.of(System.getProperty("radixkv.bench.checkpoint", "build/bench-checkpoint")).toAbsolutePath();
        write(dir, CONFIG, (long) shardMib << 20);
        files = new ArrayList<>();
        for (CheckpointFile f : Checkpoint.open(dir).files()) {
            files.add(f.file());
        }
        fileBytes = Checkpoint.open(dir).fileBytes();
    }

    @Benchmark
    public void load(Traffic t, Blackhole bh) throws IOException {
        try (ModelWeights w = ModelWeights.load(dir, DType.parse(weights))) {
            bh.consume(w.bytes());
        }
        t.add(fileBytes);
    }

    /** The baseline: every file read front to back through one 16 MiB direct buffer. */
    @Benchmark
    public void sequentialRead(Traffic t, Blackhole bh) throws IOException {
        ByteBuffer buf = ByteBuffer.allocateDirect(16 << 20);
        long sum = 0;
        for (Path p : files) {
            try (FileChannel ch = FileChannel.open(p, StandardOpenOption.READ)) {
                while (ch.read(buf) >= 0) {
                    buf.flip();
                    sum += buf.get(0);
                    buf.clear();
                }
            }
        }
        bh.consume(sum);
        t.add(fileBytes);
    }

    /**
     * Writes random weights of {@code config} as a transformers-style bf16 checkpoint (matrices
     * bf16, norms f32): {@code model-0000i-of-0000n.safetensors} shards of at most
     * {@code shardBytes} plus {@code model.safetensors.index.json} and {@code config.json}.
     */
    static void write(Path dir, ModelConfig config, long shardBytes) throws IOException {
        ObjectMapper json = new ObjectMapper();
        Files.createDirectories(dir);
        try (var old = Files.list(dir)) { // only what an earlier run wrote
            for (Path p : old.toList()) {
                String n = p.getFileName().toString();
                if (n.endsWith(".safetensors") || n.equals(Checkpoint.INDEX) || n.equals("config.json")) {
                    Files.delete(p);
                }
            }
        }
        WeightLayout layout = WeightLayout.of(config, DType.BF16);
        try (ModelWeights w = ModelWeights.random(config, DType.BF16, 1)) {
            ParameterStore store = w.store();
            List<List<TensorSpec>> shards = new ArrayList<>();
            long used = 0;
            for (TensorSpec t : layout.tensors()) {
                long bytes = t.elements() * store.spec(t.param()).dtype().bytes();
                if (shards.isEmpty() || (used > 0 && used + bytes > shardBytes)) {
                    shards.add(new ArrayList<>());
                    used = 0;
                }
                shards.getLast().add(t);
                used += bytes;
            }
            ObjectNode index = json.createObjectNode();
            ObjectNode map = json.createObjectNode();
            long total = 0;
            for (int s = 0; s < shards.size(); s++) {
                String name = String.format("model-%05d-of-%05d.safetensors", s + 1, shards.size());
                total += writeShard(dir.resolve(name), shards.get(s), store, json);
                for (TensorSpec t : shards.get(s)) {
                    map.put(t.hfName(), name);
                }
            }
            index.putObject("metadata").put("total_size", total);
            index.set("weight_map", map);
            json.writeValue(dir.resolve(Checkpoint.INDEX).toFile(), index);
            ObjectNode cfg = (ObjectNode) config.toHfConfig();
            cfg.put("torch_dtype", "bfloat16");
            json.writeValue(dir.resolve("config.json").toFile(), cfg);
        }
    }

    private static long writeShard(Path file, List<TensorSpec> tensors, ParameterStore store, ObjectMapper json)
            throws IOException {
        ObjectNode header = json.createObjectNode();
        header.putObject("__metadata__").put("format", "pt");
        List<MemorySegment> data = new ArrayList<>();
        long off = 0;
        for (TensorSpec t : tensors) {
            ParamSpec block = store.spec(t.param());
            long elem = block.dtype().bytes();
            MemorySegment src = store.get(t.param()).asSlice(t.offset() * elem, t.elements() * elem);
            ObjectNode e = header.putObject(t.hfName());
            e.put("dtype", block.dtype() == DType.BF16 ? "BF16" : "F32");
            var shape = e.putArray("shape");
            for (long d : t.shape()) {
                shape.add(d);
            }
            e.putArray("data_offsets").add(off).add(off + src.byteSize());
            off += src.byteSize();
            data.add(src);
        }
        byte[] h = json.writeValueAsString(header).getBytes(StandardCharsets.UTF_8);
        int pad = (8 - h.length % 8) % 8; // safetensors pads the header with spaces to 8 bytes
        ByteBuffer head = ByteBuffer.allocate(8 + h.length + pad).order(ByteOrder.LITTLE_ENDIAN);
        head.putLong(h.length + pad).put(h);
        while (head.hasRemaining()) {
            head.put((byte) ' ');
        }
        head.flip();
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                StandardOpenOption.TRUNCATE_EXISTING)) {
            writeFully(ch, head);
            for (MemorySegment s : data) {
                writeFully(ch, s.asByteBuffer());
            }
        }
        return off;
    }

    private static void writeFully(FileChannel ch, ByteBuffer b) throws IOException {
        while (b.hasRemaining()) {
            ch.write(b);
        }
    }

    /** Writes the checkpoint to the given directory (default build/bench-checkpoint) without benchmarking. */
    public static void main(String[] args) {
        try {
            write(Path.of(args.length > 0 ? args[0] : "build/bench-checkpoint"), CONFIG, 200L << 20);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
