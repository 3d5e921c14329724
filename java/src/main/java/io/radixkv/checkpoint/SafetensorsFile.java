package io.radixkv.checkpoint;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The header of one safetensors file (8-byte little-endian header length, a JSON object of
 * {@code name: {dtype, shape, data_offsets}}, then the data), read and checked without touching
 * the data: every entry's byte range lies inside the file, overlaps no other entry and (for the
 * dtypes of known size) holds exactly its shape. Only the header is read (onto the heap).
 *
 * @param file the file
 * @param size its size in bytes
 * @param tensors its tensors by name, in header order
 */
public record SafetensorsFile(Path file, long size, Map<String, TensorEntry> tensors) implements CheckpointFile {
    /** The safetensors library's own limit on the header. */
    public static final long MAX_HEADER_BYTES = 100L << 20;

    private static final ObjectMapper JSON = new ObjectMapper().enable(JsonParser.Feature.STRICT_DUPLICATE_DETECTION);

    /**
     * Element sizes of the whole-byte dtypes the safetensors format defines. Entries of other
     * dtypes (sub-byte or newer formats) are still bounds- and overlap-checked; a model that
     * needs one is refused when the load is planned.
     */
    private static final Map<String, Integer> ELEMENT_BYTES = Map.ofEntries(Map.entry("BOOL", 1), Map.entry("U8", 1),
            Map.entry("I8", 1), Map.entry("F8_E4M3", 1), Map.entry("F8_E5M2", 1), Map.entry("F8_E8M0", 1),
            Map.entry("I16", 2), Map.entry("U16", 2), Map.entry("F16", 2), Map.entry("BF16", 2), Map.entry("I32", 4),
            Map.entry("U32", 4), Map.entry("F32", 4), Map.entry("F64", 8), Map.entry("I64", 8), Map.entry("U64", 8),
            Map.entry("C64", 8));

    public SafetensorsFile {
        tensors = Collections.unmodifiableMap(new LinkedHashMap<>(tensors));
    }

    /** Reads and checks the header of {@code file}. */
    public static SafetensorsFile read(Path file) throws IOException {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
            long size = ch.size();
            if (size < 8) {
                throw new CheckpointException(file + ": not a safetensors file (" + size + " bytes)");
            }
            ByteBuffer lenBuf = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN);
            readFully(ch, lenBuf, 0, file);
            long headerLen = lenBuf.getLong(0);
            if (headerLen <= 0 || headerLen > MAX_HEADER_BYTES) {
                throw new CheckpointException(file + ": bad safetensors header length " + headerLen
                        + " (at most " + MAX_HEADER_BYTES + ")");
            }
            if (headerLen > size - 8) {
                throw new CheckpointException(file + ": bad safetensors header length " + headerLen + " but the file has "
                        + size + " bytes (truncated?)");
            }
            ByteBuffer hb = ByteBuffer.allocate((int) headerLen);
            readFully(ch, hb, 8, file);
            JsonNode header;
            try {
                header = JSON.readTree(new String(hb.array(), StandardCharsets.UTF_8));
            } catch (IOException e) {
                throw new CheckpointException(file + ": cannot parse the safetensors header: "
                        + e.getMessage().lines().findFirst().orElse(""), e);
            }
            if (header == null || !header.isObject()) {
                throw new CheckpointException(file + ": the safetensors header is not a JSON object");
            }
            return new SafetensorsFile(file, size, entries(file, header, 8 + headerLen, size));
        }
    }

    private static Map<String, TensorEntry> entries(Path file, JsonNode header, long dataStart, long size)
            throws CheckpointException {
        long dataBytes = size - dataStart;
        Map<String, TensorEntry> out = new LinkedHashMap<>();
        for (Map.Entry<String, JsonNode> e : header.properties()) {
            String name = e.getKey();
            if (name.equals("__metadata__")) {
                continue;
            }
            String where = file + ": tensor " + name;
            JsonNode d = e.getValue();
            JsonNode dtypeNode = d.path("dtype");
            JsonNode shapeNode = d.path("shape");
            JsonNode offs = d.path("data_offsets");
            if (!dtypeNode.isTextual() || !shapeNode.isArray() || !offs.isArray() || offs.size() != 2) {
                throw new CheckpointException(where + " lacks a dtype, shape or data_offsets: " + d);
            }
            String dtype = dtypeNode.asText();
            Integer elem = ELEMENT_BYTES.get(dtype);
            long[] shape = new long[shapeNode.size()];
            long count = 1;
            for (int i = 0; i < shape.length; i++) {
                shape[i] = nonNegativeLong(shapeNode.get(i), where + " has a bad shape " + shapeNode);
                count = multiply(count, shape[i], where + " has a shape too large: " + shapeNode);
            }
            long begin = nonNegativeLong(offs.get(0), where + " has bad data_offsets " + offs);
            long end = nonNegativeLong(offs.get(1), where + " has bad data_offsets " + offs);
            if (end < begin) {
                throw new CheckpointException(where + " has data_offsets " + offs + " that end before they begin");
            }
            if (end > dataBytes) {
                throw new CheckpointException(where + " has data_offsets " + offs + " past the end of the data ("
                        + dataBytes + " bytes; the file is truncated or the header is wrong)");
            }
            long bytes = elem == null ? end - begin : multiply(count, elem, where + " has a shape too large: " + shapeNode);
            if (end - begin != bytes) {
                throw new CheckpointException(where + " has data_offsets " + offs + " (" + (end - begin)
                        + " bytes) but shape " + shapeNode + " of " + dtype + " needs " + bytes + " bytes");
            }
            out.put(name, new TensorEntry(name, file, dtype, shape, dataStart + begin, bytes));
        }
        ByteRanges.checkDisjoint(out.values(), TensorEntry::offset, TensorEntry::bytes, (b, a) -> new CheckpointException(
                file + ": tensor " + b.name() + " overlaps tensor " + a.name() + " (data bytes " + b.offset() + " and "
                        + a.offset() + "+" + a.bytes() + " of the file)"));
        return out;
    }

    private static long nonNegativeLong(JsonNode n, String message) throws CheckpointException {
        if (n == null || !n.isIntegralNumber() || !n.canConvertToLong() || n.longValue() < 0) {
            throw new CheckpointException(message);
        }
        return n.longValue();
    }

    private static long multiply(long a, long b, String message) throws CheckpointException {
        try {
            return Math.multiplyExact(a, b);
        } catch (ArithmeticException e) {
            throw new CheckpointException(message);
        }
    }

    private static void readFully(FileChannel ch, ByteBuffer buf, long pos, Path file) throws IOException {
        while (buf.hasRemaining()) {
            int r = ch.read(buf, pos + buf.position());
            if (r < 0) {
                throw new CheckpointException(file + ": unexpected end of file");
            }
        }
    }
}
