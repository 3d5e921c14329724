package io.radixkv.bench;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Map;

/** Writes a safetensors file of generated tensors: the bench's random checkpoints and adapters. */
final class SafetensorsFiles {
    private static final ObjectMapper JSON = new ObjectMapper();

    /** The value of each element of a tensor, in order. */
    interface Values {
        float next(String tensor);
    }

    private SafetensorsFiles() {}

    /**
     * Writes {@code shapes}' tensors, in order, to {@code file} as F32 or BF16 (F32 rounded toward
     * zero), each element drawn from {@code values}.
     */
    static void write(Path file, Map<String, long[]> shapes, boolean bf16, Values values) throws IOException {
        int size = bf16 ? 2 : 4;
        ObjectNode header = JSON.createObjectNode();
        long offset = 0;
        for (Map.Entry<String, long[]> e : shapes.entrySet()) {
            long bytes = size * count(e.getValue());
            ObjectNode t = header.putObject(e.getKey());
            t.put("dtype", bf16 ? "BF16" : "F32");
            var dims = t.putArray("shape");
            for (long d : e.getValue()) {
                dims.add(d);
            }
            t.putArray("data_offsets").add(offset).add(offset + bytes);
            offset += bytes;
        }
        byte[] json = JSON.writeValueAsBytes(header);
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.TRUNCATE_EXISTING,
                StandardOpenOption.WRITE)) {
            ch.write(ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(0, json.length));
            ch.write(ByteBuffer.wrap(json));
            ByteBuffer b = ByteBuffer.allocate(1 << 20).order(ByteOrder.LITTLE_ENDIAN);
            for (Map.Entry<String, long[]> e : shapes.entrySet()) {
                for (long n = count(e.getValue()); n > 0; n--) {
                    float v = values.next(e.getKey());
                    if (bf16) {
                        b.putShort((short) (Float.floatToRawIntBits(v) >>> 16));
                    } else {
                        b.putFloat(v);
                    }
                    if (!b.hasRemaining()) {
                        ch.write(b.flip());
                        b.clear();
                    }
                }
            }
            ch.write(b.flip());
        }
    }

    private static long count(long[] shape) {
        long n = 1;
        for (long d : shape) {
            n *= d;
        }
        return n;
    }
}
