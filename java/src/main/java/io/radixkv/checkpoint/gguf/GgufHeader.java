package io.radixkv.checkpoint.gguf;

import io.radixkv.checkpoint.ByteRanges;
import io.radixkv.checkpoint.CheckpointException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Parses and checks everything of a GGUF file before its data section: magic, version, counts,
 * metadata, tensor infos. Every count and length is checked against the bytes left before
 * anything of that size is allocated, so a corrupt or hostile header fails with one
 * {@link CheckpointException} naming the file and what is wrong.
 *
 * <p>Layout (little-endian): {@code "GGUF"}, u32 version, u64 tensor count, u64 metadata count;
 * metadata entries {@code string key, u32 kind, value}; tensor infos {@code string name, u32
 * n_dims, u64 ne[n_dims], u32 ggml type, u64 offset}; padding to {@code general.alignment}
 * (default 32); the data section, where each tensor's offset is relative and aligned.
 * Strings are {@code u64 length, UTF-8 bytes}; arrays {@code u32 kind, u64 count, values}.
 */
record GgufHeader(int version, GgufMetadata metadata, Map<String, GgufTensor> tensors, int alignment,
                  long dataOffset) {
    static final int MAGIC = 0x46554747; // "GGUF" read little-endian
    static final int DEFAULT_ALIGNMENT = 32;
    static final int MAX_DIMS = 4;
    /** Arrays nested deeper than this are refused (no real file nests at all). */
    static final int MAX_NESTING = 8;

    private static final ValueLayout.OfInt U32 = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfLong U64 = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfShort U16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    /** Metadata value kinds, by id. */
    private static final String[] KINDS = {"uint8", "int8", "uint16", "int16", "uint32", "int32", "float32", "bool",
        "string", "array", "uint64", "int64", "float64"};
    private static final int STRING = 8;
    private static final int ARRAY = 9;

    /** A read position in the mapped file; every read checks the bytes left. */
    private static final class Cursor {
        final MemorySegment seg;
        final Path file;
        long pos;

        Cursor(MemorySegment seg, Path file) {
            this.seg = seg;
            this.file = file;
        }

        long left() {
            return seg.byteSize() - pos;
        }

        void need(long n, String what) throws CheckpointException {
            if (n < 0 || n > left()) {
                throw error(what + " at byte " + pos + " runs past the end of the file (" + seg.byteSize()
                        + " bytes; truncated?)");
            }
        }

        int u32(String what) throws CheckpointException {
            need(4, what);
            int v = seg.get(U32, pos);
            pos += 4;
            return v;
        }

        long u64(String what) throws CheckpointException {
            need(8, what);
            long v = seg.get(U64, pos);
            pos += 8;
            return v;
        }

        String string(String what) throws CheckpointException {
            long len = u64(what + " length");
            if (len < 0 || len > left()) {
                throw error(what + " at byte " + (pos - 8) + " claims " + Long.toUnsignedString(len)
                        + " bytes but " + left() + " are left (truncated or corrupt)");
            }
            byte[] b = seg.asSlice(pos, len).toArray(ValueLayout.JAVA_BYTE);
            pos += len;
            return new String(b, StandardCharsets.UTF_8);
        }

        CheckpointException error(String message) {
            return new CheckpointException(file + ": " + message);
        }
    }

    GgufHeader {
        tensors = java.util.Collections.unmodifiableMap(new LinkedHashMap<>(tensors));
    }

    /** Parses the header of {@code seg} (the whole file, mapped). */
    static GgufHeader parse(MemorySegment seg, Path file) throws CheckpointException {
        Cursor c = new Cursor(seg, file);
        if (seg.byteSize() < 24) {
            throw c.error("not a GGUF file (" + seg.byteSize() + " bytes, shorter than the 24-byte header)");
        }
        int magic = c.u32("magic");
        if (magic != MAGIC) {
            throw c.error("not a GGUF file (magic 0x" + Integer.toHexString(magic) + ", expected \"GGUF\")");
        }
        int version = c.u32("version");
        if (version == 1) {
            throw c.error("GGUF version 1 is not supported (versions 2 and 3 are)");
        }
        if (version != 2 && version != 3) {
            int swapped = Integer.reverseBytes(version);
            if (swapped >= 1 && swapped <= 3) {
                throw c.error("big-endian GGUF (version " + swapped + ") is not supported: only little-endian files");
            }
            throw c.error("unknown GGUF version " + Integer.toUnsignedString(version) + " (versions 2 and 3 are read)");
        }
        long tensorCount = c.u64("tensor count");
        long kvCount = c.u64("metadata count");
        // The smallest metadata entry is 13 bytes (empty key, kind, one byte); the smallest tensor info 24.
        if (kvCount < 0 || kvCount > c.left() / 13) {
            throw c.error("metadata count " + Long.toUnsignedString(kvCount) + " cannot fit in the "
                    + c.left() + " bytes left (truncated or corrupt)");
        }
        if (tensorCount < 0 || tensorCount > c.left() / 24) {
            throw c.error("tensor count " + Long.toUnsignedString(tensorCount) + " cannot fit in the "
                    + c.left() + " bytes left (truncated or corrupt)");
        }
        Map<String, Object> kv = new LinkedHashMap<>();
        for (long i = 0; i < kvCount; i++) {
            String key = c.string("metadata key " + i);
            int kind = c.u32("kind of metadata key " + key);
            Object v = value(c, kind, key, 0);
            if (kv.putIfAbsent(key, v) != null) {
                throw c.error("metadata key " + key + " appears twice");
            }
        }
        GgufMetadata metadata = new GgufMetadata(file, kv);
        int alignment = DEFAULT_ALIGNMENT;
        if (metadata.has("general.alignment")) {
            alignment = metadata.integer("general.alignment", 1);
            if (Integer.bitCount(alignment) != 1) {
                throw c.error("general.alignment " + alignment + " is not a power of two");
            }
        }
        List<long[]> dims = new ArrayList<>();
        List<String> names = new ArrayList<>();
        List<GgmlType> types = new ArrayList<>();
        List<Long> offsets = new ArrayList<>();
        for (long i = 0; i < tensorCount; i++) {
            String name = c.string("name of tensor " + i);
            int nDims = c.u32("dimension count of tensor " + name);
            if (nDims < 1 || nDims > MAX_DIMS) {
                throw c.error("tensor " + name + " has " + Integer.toUnsignedString(nDims) + " dimensions (1 to "
                        + MAX_DIMS + ")");
            }
            long[] ne = new long[nDims];
            for (int d = 0; d < nDims; d++) {
                ne[d] = c.u64("dimension " + d + " of tensor " + name);
                if (ne[d] < 0) {
                    throw c.error("tensor " + name + " has dimension " + d + " of " + Long.toUnsignedString(ne[d]));
                }
            }
            int typeId = c.u32("type of tensor " + name);
            GgmlType type = GgmlType.byId(typeId);
            if (type == null) {
                throw c.error("tensor " + name + " has ggml type " + Integer.toUnsignedString(typeId)
                        + ", which this reader does not know (" + java.util.Arrays.toString(GgmlType.values()) + ")");
            }
            long offset = c.u64("offset of tensor " + name);
            names.add(name);
            dims.add(ne);
            types.add(type);
            offsets.add(offset);
        }
        long dataOffset = alignUp(c.pos, alignment);
        if (tensorCount > 0 && dataOffset > seg.byteSize()) {
            throw c.error("the data section would start at byte " + dataOffset + ", past the end of the file ("
                    + seg.byteSize() + " bytes; truncated?)");
        }
        long dataBytes = Math.max(0, seg.byteSize() - dataOffset);
        Map<String, GgufTensor> tensors = new LinkedHashMap<>();
        for (int i = 0; i < names.size(); i++) {
            GgufTensor t = tensor(c, names.get(i), dims.get(i), types.get(i), offsets.get(i), alignment, dataOffset,
                    dataBytes);
            if (tensors.putIfAbsent(t.name(), t) != null) {
                throw c.error("tensor " + t.name() + " appears twice");
            }
        }
        ByteRanges.checkDisjoint(tensors.values(), GgufTensor::offset, GgufTensor::bytes,
                (b, a) -> c.error("tensor " + b.name() + " overlaps tensor " + a.name()));
        return new GgufHeader(version, metadata, tensors, alignment, dataOffset);
    }

    private static GgufTensor tensor(Cursor c, String name, long[] ne, GgmlType type, long offset, int alignment,
                                     long dataOffset, long dataBytes) throws CheckpointException {
        if (ne[0] % type.blockElements() != 0) {
            throw c.error("tensor " + name + " has rows of " + ne[0] + " values, not a multiple of the "
                    + type.blockElements() + "-value blocks of " + type.label());
        }
        long bytes;
        try {
            bytes = Math.multiplyExact(ne[0] / type.blockElements(), (long) type.blockBytes());
            long n = ne[0];
            for (int d = 1; d < ne.length; d++) {
                bytes = Math.multiplyExact(bytes, ne[d]);
                n = Math.multiplyExact(n, ne[d]);
            }
        } catch (ArithmeticException e) {
            throw c.error("tensor " + name + " has dimensions " + java.util.Arrays.toString(ne) + " too large");
        }
        if (offset < 0 || offset % alignment != 0) {
            throw c.error("tensor " + name + " has offset " + Long.toUnsignedString(offset)
                    + ", not a multiple of the alignment " + alignment);
        }
        if (offset > dataBytes || bytes > dataBytes - offset) {
            throw c.error("tensor " + name + " (" + bytes + " bytes at data offset " + offset
                    + ") runs past the end of the data section (" + dataBytes + " bytes; truncated or bad offset?)");
        }
        return new GgufTensor(name, ne, type, dataOffset + offset, bytes);
    }

    static long alignUp(long pos, int alignment) {
        return (pos + alignment - 1) / alignment * alignment;
    }

    /** The fewest bytes a value of {@code kind} takes (for checking array counts before reading them). */
    private static int minBytes(int kind) {
        return switch (kind) {
            case 0, 1, 7 -> 1;
            case 2, 3 -> 2;
            case 4, 5, 6 -> 4;
            case 10, 11, 12, STRING -> 8;
            case ARRAY -> 12;
            default -> throw new IllegalArgumentException("kind " + kind);
        };
    }

    private static Object value(Cursor c, int kind, String key, int depth) throws CheckpointException {
        if (kind < 0 || kind >= KINDS.length) {
            throw c.error("metadata key " + key + " has unknown value kind " + Integer.toUnsignedString(kind));
        }
        String what = "value of metadata key " + key;
        switch (kind) {
            case 0 -> {
                c.need(1, what);
                return (long) (c.seg.get(ValueLayout.JAVA_BYTE, c.pos++) & 0xFF);
            }
            case 1 -> {
                c.need(1, what);
                return (long) c.seg.get(ValueLayout.JAVA_BYTE, c.pos++);
            }
            case 2, 3 -> {
                c.need(2, what);
                short s = c.seg.get(U16, c.pos);
                c.pos += 2;
                return kind == 2 ? (long) (s & 0xFFFF) : (long) s;
            }
            case 4 -> {
                return c.u32(what) & 0xFFFFFFFFL;
            }
            case 5 -> {
                return (long) c.u32(what);
            }
            case 6 -> {
                return Float.intBitsToFloat(c.u32(what));
            }
            case 7 -> {
                c.need(1, what);
                byte b = c.seg.get(ValueLayout.JAVA_BYTE, c.pos++);
                if (b != 0 && b != 1) {
                    throw c.error("metadata key " + key + " is a bool of byte value " + (b & 0xFF) + " (0 or 1)");
                }
                return b == 1;
            }
            case STRING -> {
                return c.string(what);
            }
            case 10, 11 -> {
                return c.u64(what);
            }
            case 12 -> {
                return Double.longBitsToDouble(c.u64(what));
            }
            case ARRAY -> {
                if (depth >= MAX_NESTING) {
                    throw c.error("metadata key " + key + " nests arrays deeper than " + MAX_NESTING);
                }
                int elemKind = c.u32("element kind of " + what);
                if (elemKind < 0 || elemKind >= KINDS.length) {
                    throw c.error("metadata key " + key + " is an array of unknown kind "
                            + Integer.toUnsignedString(elemKind));
                }
                long count = c.u64("element count of " + what);
                if (count < 0 || count > c.left() / minBytes(elemKind) || count > Integer.MAX_VALUE - 8) {
                    throw c.error("metadata key " + key + " is an array of " + Long.toUnsignedString(count) + " "
                            + KINDS[elemKind] + " values, more than the " + c.left() + " bytes left can hold (truncated or corrupt)");
                }
                List<Object> out = new ArrayList<>((int) count);
                for (long i = 0; i < count; i++) {
                    out.add(value(c, elemKind, key, depth + 1));
                }
                return java.util.Collections.unmodifiableList(out);
            }
            default -> throw new IllegalStateException();
        }
    }
}
