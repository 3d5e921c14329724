package io.radixkv.checkpoint;

import io.radixkv.kernels.DType;
import io.radixkv.quant.BlockFormat;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Which checkpoint tensor goes where, fully checked before anything large is allocated: every
 * required tensor is present with the shape its {@link TensorSpec} needs and a dtype that
 * converts (F32, BF16, F16, or one of the {@link BlockFormat}s, dequantized or kept as stored in a
 * quantized block; dense tensors quantized into a quantized block), and every
 * destination lies inside its block. {@link #copyInto}
 * then memory-maps each file once and copies each tensor once, converting where the dtypes
 * differ.
 */
public final class LoadPlan {
    private static final long CHUNK_ELEMENTS = 4L << 20;

    /**
     * One tensor (or a chunk of one) to copy: elements of {@code srcType}, or, when
     * {@code blocks} is set, blocks of that quantized format; into elements of {@code dstType}
     * (dequantized on the way), or, when {@code dstBlocks} is set, into quantized rows of that
     * format from byte {@code dstByteOffset} (copied as they are when the formats match,
     * quantized as ggml's reference quantizer does from f32/bf16/f16).
     */
    private record Copy(Path file, long srcOffset, DType srcType, BlockFormat blocks, String param, DType dstType,
                        long dstOffset, long elements, BlockFormat dstBlocks, long dstByteOffset) {
        long srcBytes() {
            return bytesOf(elements);
        }

        long bytesOf(long n) {
            return blocks != null ? blocks.rowBytes(n) : n * srcType.bytes();
        }

        /** Elements [start, start + n); for blocks, start is a whole number of blocks. */
        Copy part(long start, long n) {
            return new Copy(file, srcOffset + bytesOf(start), srcType, blocks, param, dstType, dstOffset + start, n,
                    dstBlocks, dstBlocks == null ? 0 : dstByteOffset + dstBlocks.rowBytes(start));
        }
    }

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
        this.bytes = copies.stream().mapToLong(Copy::srcBytes).sum();
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
        checkDisjoint(tensors);
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
                default -> null;
            };
            BlockFormat quantized = srcType == null ? blockFormat(t) : null;
            BlockFormat dstBlocks = null;
            long dstByteOffset = 0;
            if (block.quantized()) {
                long k = block.shape()[1];
                long row = spec.offset() / k;
                long rows = spec.elements() / k;
                dstBlocks = block.formatOfRow(row);
                if (spec.offset() % k != 0 || spec.elements() % k != 0 || dstBlocks != block.formatOfRow(row + rows - 1)) {
                    throw new IllegalArgumentException(spec + " does not fill whole rows of one format of " + block);
                }
                if (quantized != null && quantized != dstBlocks) {
                    throw new CheckpointException(t.file() + ": tensor " + t.name() + " is " + quantized + " but is to be "
                            + "held as " + dstBlocks + ": quantized tensors are kept as stored");
                }
                dstByteOffset = block.rowByteOffset(row);
            }
            copies.add(new Copy(t.file(), t.offset(), srcType, quantized, spec.param(), block.dtype(), spec.offset(),
                    spec.elements(), dstBlocks, dstByteOffset));
        }
        return new LoadPlan(checkpoint, copies);
    }

    /**
     * The block format of a quantized tensor (a GGUF {@link BlockFormat}), checked to hold whole
     * rows of blocks in exactly its bytes.
     */
    private static BlockFormat blockFormat(TensorEntry t) throws CheckpointException {
        BlockFormat f = Arrays.stream(BlockFormat.values()).filter(b -> b.name().equals(t.dtype())).findFirst()
                .orElseThrow(() -> new CheckpointException(t.file() + ": tensor " + t.name() + " has dtype '" + t.dtype()
                        + "', not one of F32, BF16, F16, " + Arrays.stream(BlockFormat.values()).map(Enum::name)
                        .collect(java.util.stream.Collectors.joining(", "))));
        long[] shape = t.shape();
        long rowLength = shape.length == 0 ? 1 : shape[shape.length - 1];
        long elements = Arrays.stream(shape).reduce(1, Math::multiplyExact);
        if (rowLength % f.blockElements() != 0 || f.rowBytes(elements) != t.bytes()) {
            throw new CheckpointException(t.file() + ": tensor " + t.name() + " of " + f + " has rows of " + rowLength
                    + " values in " + t.bytes() + " bytes, not whole " + f.blockElements() + "-value blocks");
        }
        return f;
    }

    /** Two specs filling the same elements of a block is a bug in the model's spec list. */
    private static void checkDisjoint(List<TensorSpec> tensors) {
        List<TensorSpec> sorted = new ArrayList<>(tensors);
        sorted.sort(Comparator.comparing(TensorSpec::param).thenComparingLong(TensorSpec::offset));
        for (int i = 1; i < sorted.size(); i++) {
            TensorSpec a = sorted.get(i - 1);
            TensorSpec b = sorted.get(i);
            if (a.param().equals(b.param()) && b.offset() < a.offset() + a.elements()) {
                throw new IllegalArgumentException(b + " overlaps " + a);
            }
        }
    }

    /** Bytes the copy reads from the files. */
    public long bytes() {
        return bytes;
    }

    public Checkpoint checkpoint() {
        return checkpoint;
    }

    /**
     * Copies every planned tensor into {@code store} (in parallel) and zero-fills what no tensor
     * covers, mapping each file read-only for the duration of the copy only: the mappings' arena
     * is closed before this returns. The store may come from
     * {@link ParameterStore#allocateUninitialized}.
     */
    public Stats copyInto(ParameterStore store) throws IOException {
        for (Copy c : copies) {
            ParamSpec block = store.spec(c.param());
            if (block.dtype() != c.dstType() || c.dstOffset() + c.elements() > block.elements()) {
                throw new IllegalArgumentException("the store's block " + block + " is not the planned one");
            }
        }
        long t0 = System.nanoTime();
        zeroUncovered(store);
        try (Arena mapArena = Arena.ofShared()) {
            Map<Path, MemorySegment> mapped = new LinkedHashMap<>();
            for (CheckpointFile f : checkpoint.files()) {
                mapped.put(f.file(), map(f, mapArena));
            }
            // Chunks, so that one large tensor (the embedding table) is copied by several threads.
            List<Copy> chunks = new ArrayList<>();
            for (Copy c : copies) {
                for (long start = 0; start < c.elements(); start += CHUNK_ELEMENTS) {
                    chunks.add(c.part(start, Math.min(CHUNK_ELEMENTS, c.elements() - start)));
                }
            }
            chunks.parallelStream().forEach(c -> {
                MemorySegment src = mapped.get(c.file()).asSlice(c.srcOffset(), c.srcBytes());
                if (c.dstBlocks() != null && c.blocks() != null) {
                    MemorySegment.copy(src, 0, store.get(c.param()), c.dstByteOffset(), src.byteSize());
                } else if (c.dstBlocks() != null) {
                    ElementConversion.quantize(src, c.srcType(), c.dstBlocks(), store.get(c.param()), c.dstByteOffset(),
                            c.elements());
                } else if (c.blocks() != null) {
                    ElementConversion.dequantize(src, c.blocks(), store.get(c.param()), c.dstType(), c.dstOffset(),
                            c.elements());
                } else {
                    ElementConversion.convert(src, c.srcType(), store.get(c.param()), c.dstType(), c.dstOffset(),
                            c.elements());
                }
            });
        }
        return new Stats(bytes, (System.nanoTime() - t0) / 1e9);
    }

    /**
     * Zero-fills every block that the copies do not cover entirely (absent optional tensors), so
     * a store allocated without zero-filling holds no garbage. Specs are disjoint, so coverage is
     * a sum.
     */
    private void zeroUncovered(ParameterStore store) {
        Map<String, Long> covered = new HashMap<>();
        for (Copy c : copies) {
            covered.merge(c.param(), c.elements(), Long::sum);
        }
        for (ParamSpec p : store.specs()) {
            if (p.tiedTo() == null && covered.getOrDefault(p.name(), 0L) != p.elements()) {
                store.get(p.name()).fill((byte) 0);
            }
        }
    }

    /** Maps the whole file read-only, refusing a file whose size changed since its header was checked. */
    private static MemorySegment map(CheckpointFile f, Arena arena) throws IOException {
        try (FileChannel ch = FileChannel.open(f.file(), StandardOpenOption.READ)) {
            long size = ch.size();
            if (size != f.size()) {
                throw new CheckpointException(f.file() + ": the file changed size (" + f.size() + " -> " + size
                        + " bytes) since its header was read");
            }
            return ch.map(FileChannel.MapMode.READ_ONLY, 0, size, arena);
        }
    }

    @Override
    public String toString() {
        return String.format(Locale.ROOT, "%d tensors, %d bytes from %s", copies.size(), bytes, checkpoint.dir());
    }
}
