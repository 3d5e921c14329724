package io.radixkv.checkpoint.gguf;

import io.radixkv.checkpoint.CheckpointException;
import io.radixkv.checkpoint.CheckpointFile;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Map;

/**
 * An open GGUF file: its header, checked in full by {@link #open} ({@link GgufHeader}), and the
 * whole file memory-mapped read-only. The mapping belongs to a shared {@link Arena} this object
 * owns: {@link #data} slices stay valid until {@link #close()}, after which touching them throws.
 * Thread-safe for reading; {@link #close()} must not race with readers.
 */
public final class GgufFile implements CheckpointFile, AutoCloseable {
    private final Path file;
    private final long size;
    private final Arena arena;
    private final MemorySegment mapping;
    private final GgufHeader header;

    private GgufFile(Path file, long size, Arena arena, MemorySegment mapping, GgufHeader header) {
        this.file = file;
        this.size = size;
        this.arena = arena;
        this.mapping = mapping;
        this.header = header;
    }

    /**
     * Maps {@code file} and checks its header.
     *
     * @throws CheckpointException naming the file and the first thing wrong with it
     */
    public static GgufFile open(Path file) throws IOException {
        Arena arena = Arena.ofShared();
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
            long size = ch.size();
            MemorySegment mapping = size == 0 ? MemorySegment.ofArray(new byte[0])
                    : ch.map(FileChannel.MapMode.READ_ONLY, 0, size, arena);
            return new GgufFile(file, size, arena, mapping, GgufHeader.parse(mapping, file));
        } catch (IOException | RuntimeException | Error e) {
            arena.close();
            throw e;
        }
    }

    @Override
    public Path file() {
        return file;
    }

    @Override
    public long size() {
        return size;
    }

    /** The format version (2 or 3). */
    public int version() {
        return header.version();
    }

    public GgufMetadata metadata() {
        return header.metadata();
    }

    /** The tensors by name, in file order. */
    public Map<String, GgufTensor> tensors() {
        return header.tensors();
    }

    /** The data section's alignment ({@code general.alignment}, default 32). */
    public int alignment() {
        return header.alignment();
    }

    /** First byte of the data section. */
    public long dataOffset() {
        return header.dataOffset();
    }

    /** The bytes of {@code t} (a tensor of this file), valid until {@link #close()}. */
    public MemorySegment data(GgufTensor t) throws CheckpointException {
        if (!t.equals(tensors().get(t.name()))) {
            throw new CheckpointException(file + ": tensor " + t.name() + " is not a tensor of this file");
        }
        return mapping.asSlice(t.offset(), t.bytes());
    }

    /** Unmaps the file. */
    @Override
    public void close() {
        arena.close();
    }
}
