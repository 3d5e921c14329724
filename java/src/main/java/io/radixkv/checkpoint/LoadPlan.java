package io.radixkv.checkpoint;

import io.radixkv.kernels.DType;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Which checkpoint tensor goes where, fully checked before anything large is allocated: every
 * required tensor is present with the shape its {@link TensorSpec} needs and a dtype that
 * converts (F32, BF16, F16), and every destination lies inside its block. {@link #copyInto}
 * then memory-maps each file once and copies each tensor once, converting where the dtypes
 * differ.
 */
public final class LoadPlan {
    /** One tensor to copy. */
    private record Copy(TensorEntry src, DType srcType, String param, DType dstType, long offset, long elements) {}

    /** Bytes read from the files and the seconds the copy took. */
    public record Stats(long bytes, double seconds) {
        public double gbPerSecond() {
            return seconds > 0 ? bytes / seconds / 1e9 : Double.POSITIVE_INFINITY;
        }
    }

    private final Checkpoint checkpoint;
    private final List<Copy> copies;
    private final long bytes;

    private LoadPlan(Checkpoint checkpoint, List<Copy> copies) {
        this.checkpoint = checkpoint;
        this.copies = List.copyOf(copies);
        this.bytes = copies.stream().mapToLong(c -> c.src().bytes()).sum();
    }

    /**
     * Matches {@code tensors} against the checkpoint and the store blocks {@code params}.
     *
     * @throws CheckpointException naming the file and tensor for a missing tensor, a shape the
     *     spec does not allow or a dtype that does not convert
     * @throws IllegalArgumentException when a spec points outside its block (a model bug)
     */
    public static LoadPlan of(Checkpoint checkpoint, List<ParamSpec> params, List<TensorSpec> tensors)
            throws CheckpointException {
        Map<String, ParamSpec> blocks = new HashMap<>();
        for (ParamSpec p : params) {
            blocks.put(p.name(), p);
        }
        List<Copy> copies = new ArrayList<>();
        for (TensorSpec spec : tensors) {
            ParamSpec block = blocks.get(spec.param());
            if (block == null || block.tiedTo() != null
                    || spec.offset() + spec.elements() > block.elements()) {
                throw new IllegalArgumentException(spec + " does not fit block " + block);
            }
            TensorEntry t = checkpoint.tensors().get(spec.hfName());
            if (t == null) {
                if (spec.optional()) {
                    continue;
                }
                throw new CheckpointException("checkpoint " + checkpoint.dir() + " lacks tensor " + spec.hfName());
            }
            if (!t.hasShape(spec.shape())) {
                throw new CheckpointException(t.file() + ": tensor " + t.name() + " has shape "
                        + Arrays.toString(t.shape()) + " but the config needs " + Arrays.toString(spec.shape()));
            }
            DType srcType = switch (t.dtype()) {
                case "F32" -> DType.F32;
                case "BF16" -> DType.BF16;
                case "F16" -> DType.F16;
                default -> throw new CheckpointException(t.file() + ": tensor " + t.name() + " has dtype '" + t.dtype()
                        + "' (supported: F32, BF16, F16)");
            };
            copies.add(new Copy(t, srcType, spec.param(), block.dtype(), spec.offset(), spec.elements()));
        }
        return new LoadPlan(checkpoint, copies);
    }

    /** Bytes the copy reads from the files. */
    public long bytes() {
        return bytes;
    }

    public Checkpoint checkpoint() {
        return checkpoint;
    }

    /**
     * Copies every planned tensor into {@code store} (in parallel), mapping each file read-only
     * for the duration of the copy only: the mappings' arena is closed before this returns.
     */
    public Stats copyInto(ParameterStore store) throws IOException {
        long t0 = System.nanoTime();
        try (Arena mapArena = Arena.ofShared()) {
            Map<Path, MemorySegment> mapped = new LinkedHashMap<>();
            for (Copy c : copies) {
                if (!mapped.containsKey(c.src().file())) {
                    mapped.put(c.src().file(), map(c.src().file(), mapArena));
                }
            }
            copies.parallelStream().forEach(c -> {
                MemorySegment src = mapped.get(c.src().file()).asSlice(c.src().offset(), c.src().bytes());
                ElementConversion.convert(src, c.srcType(), store.get(c.param()), c.dstType(), c.offset(), c.elements());
            });
        }
        return new Stats(bytes, (System.nanoTime() - t0) / 1e9);
    }

    private static MemorySegment map(Path file, Arena arena) throws IOException {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
            return ch.map(FileChannel.MapMode.READ_ONLY, 0, ch.size(), arena);
        }
    }

    @Override
    public String toString() {
        return String.format(Locale.ROOT, "%d tensors, %d bytes from %s", copies.size(), bytes, checkpoint.dir());
    }
}
