package io.radixkv.checkpoint;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.radixkv.kernels.Bf16;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/** Builds safetensors files byte by byte, well-formed or deliberately broken, for loader tests. */
final class SafetensorsBytes {
    private static final ObjectMapper JSON = new ObjectMapper();

    private final ObjectNode header = JSON.createObjectNode();
    private final ByteArrayOutputStream data = new ByteArrayOutputStream();

    SafetensorsBytes() {
        header.putObject("__metadata__").put("format", "pt");
    }

    /** A tensor whose bytes follow the previous one's. */
    SafetensorsBytes tensor(String name, String dtype, long[] shape, byte[] bytes) {
        long begin = data.size();
        data.writeBytes(bytes);
        return entry(name, dtype, shape, begin, data.size());
    }

    /** A header entry with the given offsets and no data of its own. */
    SafetensorsBytes entry(String name, String dtype, long[] shape, long begin, long end) {
        ObjectNode e = header.putObject(name);
        e.put("dtype", dtype);
        var s = e.putArray("shape");
        for (long d : shape) {
            s.add(d);
        }
        e.putArray("data_offsets").add(begin).add(end);
        return this;
    }

    /** Raw bytes appended to the data section. */
    SafetensorsBytes data(byte[] bytes) {
        data.writeBytes(bytes);
        return this;
    }

    String headerJson() {
        return header.toString();
    }

    byte[] build() {
        return withHeader(headerJson(), data.toByteArray());
    }

    Path write(Path file) throws IOException {
        Files.createDirectories(file.getParent());
        Files.write(file, build());
        return file;
    }

    /** A file of the given header text and data. */
    static byte[] withHeader(String json, byte[] data) {
        byte[] h = json.getBytes(StandardCharsets.UTF_8);
        return ByteBuffer.allocate(8 + h.length + data.length).order(ByteOrder.LITTLE_ENDIAN).putLong(h.length).put(h)
                .put(data).array();
    }

    static byte[] f32(float... v) {
        ByteBuffer b = ByteBuffer.allocate(4 * v.length).order(ByteOrder.LITTLE_ENDIAN);
        for (float x : v) {
            b.putFloat(x);
        }
        return b.array();
    }

    /** bf16 encoding through the Java reference kernels' rounding (independent of the loader's). */
    static byte[] bf16(float... v) {
        ByteBuffer b = ByteBuffer.allocate(2 * v.length).order(ByteOrder.LITTLE_ENDIAN);
        for (float x : v) {
            b.putShort(Bf16.fromFloat(x));
        }
        return b.array();
    }

    static byte[] f16(float... v) {
        ByteBuffer b = ByteBuffer.allocate(2 * v.length).order(ByteOrder.LITTLE_ENDIAN);
        for (float x : v) {
            b.putShort(Float.floatToFloat16(x));
        }
        return b.array();
    }

    static float[] ramp(int n, float scale) {
        float[] v = new float[n];
        for (int i = 0; i < n; i++) {
            v[i] = (i - n / 2f) * scale;
        }
        return v;
    }
}
