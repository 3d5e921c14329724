package io.radixkv.checkpoint.gguf;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Writes GGUF files for tests, from the format description (gguf.md) rather than from the reader:
 * {@code "GGUF"}, u32 version, u64 tensor count, u64 metadata count, the metadata
 * ({@code string key, u32 kind, value}), the tensor infos ({@code string name, u32 n_dims, u64
 * ne[], u32 type, u64 offset}), zero padding to the alignment, then each tensor's bytes padded to
 * the alignment. Strings are u64 length + UTF-8, arrays u32 kind + u64 count + values; all
 * little-endian. Tensor data is given as raw bytes (the caller encodes F32/F16/BF16/blocks).
 */
public final class GgufTestWriter {
    public static final int UINT8 = 0;
    public static final int INT8 = 1;
    public static final int UINT16 = 2;
    public static final int INT16 = 3;
    public static final int UINT32 = 4;
    public static final int INT32 = 5;
    public static final int FLOAT32 = 6;
    public static final int BOOL = 7;
    public static final int STRING = 8;
    public static final int ARRAY = 9;
    public static final int UINT64 = 10;
    public static final int INT64 = 11;
    public static final int FLOAT64 = 12;

    /** ggml type ids, from ggml.h. */
    public static final int F32 = 0;
    public static final int F16 = 1;
    public static final int Q4_0 = 2;
    public static final int Q5_0 = 6;
    public static final int Q8_0 = 8;
    public static final int Q4_K = 12;
    public static final int Q6_K = 14;
    public static final int BF16 = 30;

    /** An array value: element kind and elements (nested arrays are {@code Arr} values). */
    public record Arr(int kind, List<?> values) {}

    private record Kv(String key, int kind, Object value) {}

    private record T(String name, long[] ne, int type, byte[] data, Long offset) {}

    private int version = 3;
    private int alignment = 32;
    private final List<Kv> kvs = new ArrayList<>();
    private final List<T> tensors = new ArrayList<>();

    public GgufTestWriter version(int v) {
        version = v;
        return this;
    }

    /** The alignment the writer pads to (also written as general.alignment when not 32). */
    public GgufTestWriter alignment(int a) {
        alignment = a;
        if (a != 32) {
            kv("general.alignment", UINT32, (long) a);
        }
        return this;
    }

    /** A metadata entry of {@code kind}; integers as Long, floats as Float/Double, arrays as {@link Arr}. */
    public GgufTestWriter kv(String key, int kind, Object value) {
        kvs.add(new Kv(key, kind, value));
        return this;
    }

    public GgufTestWriter str(String key, String v) {
        return kv(key, STRING, v);
    }

    public GgufTestWriter u32(String key, long v) {
        return kv(key, UINT32, v);
    }

    public GgufTestWriter f32(String key, float v) {
        return kv(key, FLOAT32, v);
    }

    /** A tensor with {@code ne} (fastest dimension first) whose data follows the previous one, aligned. */
    public GgufTestWriter tensor(String name, int type, byte[] data, long... ne) {
        tensors.add(new T(name, ne.clone(), type, data, null));
        return this;
    }

    /** A tensor info with an explicit (possibly wrong) offset; its data is still written in sequence. */
    public GgufTestWriter tensorAt(String name, int type, byte[] data, long offset, long... ne) {
        tensors.add(new T(name, ne.clone(), type, data, offset));
        return this;
    }

    public byte[] bytes() {
        Out o = new Out();
        o.raw("GGUF".getBytes(StandardCharsets.US_ASCII));
        o.u32(version);
        o.u64(tensors.size());
        o.u64(kvs.size());
        for (Kv kv : kvs) {
            o.str(kv.key());
            o.u32(kv.kind());
            o.value(kv.kind(), kv.value());
        }
        long next = 0;
        for (T t : tensors) {
            o.str(t.name());
            o.u32(t.ne().length);
            for (long d : t.ne()) {
                o.u64(d);
            }
            o.u32(t.type());
            o.u64(t.offset() != null ? t.offset() : next);
            next += pad(t.data().length);
        }
        o.padTo(alignment);
        for (T t : tensors) {
            o.raw(t.data());
            o.padTo(alignment);
        }
        return o.buf.toByteArray();
    }

    private long pad(long n) {
        return (n + alignment - 1) / alignment * alignment;
    }

    public Path write(Path file) throws IOException {
        Files.write(file, bytes());
        return file;
    }

    /** Little-endian f32 bytes. */
    public static byte[] f32(float[] v) {
        ByteBuffer b = ByteBuffer.allocate(4 * v.length).order(ByteOrder.LITTLE_ENDIAN);
        for (float x : v) {
            b.putFloat(x);
        }
        return b.array();
    }

    /** Little-endian f16 bytes (round to nearest even). */
    public static byte[] f16(float[] v) {
        ByteBuffer b = ByteBuffer.allocate(2 * v.length).order(ByteOrder.LITTLE_ENDIAN);
        for (float x : v) {
            b.putShort(Float.floatToFloat16(x));
        }
        return b.array();
    }

    /** Little-endian bf16 bytes (the high half of each f32; the test values are bf16-exact). */
    public static byte[] bf16Exact(float[] v) {
        ByteBuffer b = ByteBuffer.allocate(2 * v.length).order(ByteOrder.LITTLE_ENDIAN);
        for (float x : v) {
            int bits = Float.floatToRawIntBits(x);
            if ((bits & 0xFFFF) != 0) {
                throw new IllegalArgumentException(x + " is not a bf16 value");
            }
            b.putShort((short) (bits >>> 16));
        }
        return b.array();
    }

    private final class Out {
        final ByteArrayOutputStream buf = new ByteArrayOutputStream();

        void raw(byte[] b) {
            buf.writeBytes(b);
        }

        void le(long v, int bytes) {
            for (int i = 0; i < bytes; i++) {
                buf.write((int) (v >>> (8 * i)) & 0xFF);
            }
        }

        void u32(long v) {
            le(v, 4);
        }

        void u64(long v) {
            le(v, 8);
        }

        void str(String s) {
            byte[] b = s.getBytes(StandardCharsets.UTF_8);
            u64(b.length);
            raw(b);
        }

        void padTo(int a) {
            while (buf.size() % a != 0) {
                buf.write(0);
            }
        }

        void value(int kind, Object v) {
            switch (kind) {
                case UINT8, INT8, BOOL -> le(v instanceof Boolean bo ? (bo ? 1 : 0) : ((Number) v).longValue(), 1);
                case UINT16, INT16 -> le(((Number) v).longValue(), 2);
                case UINT32, INT32 -> le(((Number) v).longValue(), 4);
                case UINT64, INT64 -> le(((Number) v).longValue(), 8);
                case FLOAT32 -> le(Float.floatToRawIntBits(((Number) v).floatValue()), 4);
                case FLOAT64 -> le(Double.doubleToRawLongBits(((Number) v).doubleValue()), 8);
                case STRING -> str((String) v);
                case ARRAY -> {
                    Arr a = (Arr) v;
                    u32(a.kind());
                    u64(a.values().size());
                    for (Object e : a.values()) {
                        value(a.kind(), e);
                    }
                }
                default -> le(((Number) v).longValue(), 8); // an unknown kind, for the reader's tests
            }
        }
    }
}
