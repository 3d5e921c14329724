package io.radixkv.checkpoint.gguf;

import static io.radixkv.checkpoint.gguf.GgufTestWriter.*;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.radixkv.checkpoint.CheckpointException;
import java.io.IOException;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The GGUF reader on files written by {@link GgufTestWriter}: every metadata kind read back,
 * tensor infos and aligned data, and each kind of malformed file refused with one
 * {@link CheckpointException} naming what is wrong (huge counts fail on the count, before
 * anything of that size is allocated).
 */
class GgufFileTest {
    @TempDir
    Path tmp;

    private static float[] seq(int n) {
        float[] v = new float[n];
        for (int i = 0; i < n; i++) {
            v[i] = i * 0.5f - 3;
        }
        return v;
    }

    private static GgufTestWriter valid() {
        return new GgufTestWriter().str("general.architecture", "llama")
                .kv("u8", UINT8, 250L).kv("i8", INT8, -5L).kv("u16", UINT16, 65000L).kv("i16", INT16, -300L)
                .kv("u32", UINT32, 4_000_000_000L).kv("i32", INT32, -7L).kv("f32", FLOAT32, 1e-5f)
                .kv("bool", BOOL, true).kv("u64", UINT64, 1L << 40).kv("i64", INT64, -(1L << 40))
                .kv("f64", FLOAT64, 0.25).kv("str", STRING, "héllo")
                .kv("arr", ARRAY, new Arr(STRING, List.of("a", "bc", "")))
                .kv("nested", ARRAY, new Arr(ARRAY, List.of(new Arr(INT32, List.of(1L, 2L)), new Arr(INT32, List.of()))))
                .tensor("a", F32, f32(seq(6)), 3, 2)
                .tensor("b", F16, f16(seq(5)), 5)
                .tensor("q", Q8_0, new byte[2 * 34], 32, 2);
    }

    private Path file(byte[] b) throws IOException {
        return Files.write(tmp.resolve("m.gguf"), b);
    }

    private String refused(byte[] b) throws IOException {
        Path p = file(b);
        CheckpointException e = assertThrows(CheckpointException.class, () -> GgufFile.open(p).close());
        assertTrue(e.getMessage().startsWith(p.toString()), e.getMessage());
        assertEquals(1, e.getMessage().lines().count(), e.getMessage());
        return e.getMessage();
    }

    @Test
    void readsEveryMetadataKindAndTheTensors() throws IOException {
        try (GgufFile f = GgufFile.open(file(valid().bytes()))) {
            GgufMetadata m = f.metadata();
            assertEquals(3, f.version());
            assertEquals(250L, m.get("u8"));
            assertEquals(-5L, m.get("i8"));
            assertEquals(65000L, m.get("u16"));
            assertEquals(-300L, m.get("i16"));
            assertEquals(4_000_000_000L, m.get("u32"));
            assertEquals(-7L, m.get("i32"));
            assertEquals(1e-5f, m.get("f32"));
            assertEquals(true, m.bool("bool"));
            assertEquals(1L << 40, m.get("u64"));
            assertEquals(-(1L << 40), m.get("i64"));
            assertEquals(0.25, m.number("f64"));
            assertEquals("héllo", m.string("str"));
            assertEquals(List.of("a", "bc", ""), m.array("arr"));
            assertEquals(List.of(List.of(1L, 2L), List.of()), m.array("nested"));
            assertEquals(32, f.alignment());
            assertEquals(0, f.dataOffset() % 32);
            GgufTensor a = f.tensors().get("a");
            assertArrayEquals(new long[] {2, 3}, a.shape());
            assertEquals(GgmlType.F32, a.type());
            var data = f.data(a);
            for (int i = 0; i < 6; i++) {
                assertEquals(seq(6)[i], data.getAtIndex(ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN), i));
            }
            GgufTensor b = f.tensors().get("b");
            assertEquals(0, (b.offset() - f.dataOffset()) % 32);
            assertEquals(10, b.bytes());
            assertEquals(68, f.tensors().get("q").bytes());
            assertEquals(List.of("a", "b", "q"), List.copyOf(f.tensors().keySet()));
        }
    }

    @Test
    void versionTwoAndAnotherAlignmentAreRead() throws IOException {
        try (GgufFile f = GgufFile.open(file(valid().version(2).alignment(64).bytes()))) {
            assertEquals(2, f.version());
            assertEquals(64, f.alignment());
            assertEquals(0, f.dataOffset() % 64);
            assertEquals(0, (f.tensors().get("b").offset() - f.dataOffset()) % 64);
        }
    }

    @Test
    void badMagicVersionsAndEndianness() throws IOException {
        byte[] b = valid().bytes();
        byte[] magic = b.clone();
        magic[0] = 'X';
        assertTrue(refused(magic).contains("not a GGUF file"));
        assertTrue(refused(valid().version(1).bytes()).contains("version 1 is not supported"));
        assertTrue(refused(valid().version(7).bytes()).contains("unknown GGUF version 7"));
        assertTrue(refused(valid().version(Integer.reverseBytes(3)).bytes()).contains("big-endian"));
        assertTrue(refused(Arrays.copyOf(b, 10)).contains("not a GGUF file (10 bytes"));
    }

    @Test
    void everyTruncationIsRefused() throws IOException {
        byte[] b = valid().bytes();
        long end;
        try (GgufFile f = GgufFile.open(file(b))) {
            GgufTensor last = f.tensors().get("q");
            end = last.offset() + last.bytes(); // the padding after the last tensor may go
        }
        // Every prefix of the header and data: one clear error each, never another exception.
        for (int n = 0; n < end; n += 7) {
            String m = refused(Arrays.copyOf(b, n));
            assertTrue(m.contains("truncated") || m.contains("not a GGUF file"), n + ": " + m);
        }
    }

    private static byte[] withU64At(byte[] b, int at, long v) {
        byte[] c = b.clone();
        ByteBuffer.wrap(c).order(ByteOrder.LITTLE_ENDIAN).putLong(at, v);
        return c;
    }

    @Test
    void hugeCountsFailOnTheCount() throws IOException {
        byte[] b = valid().bytes();
        assertTrue(refused(withU64At(b, 8, 1L << 60)).contains("tensor count 1152921504606846976 cannot fit"));
        assertTrue(refused(withU64At(b, 8, -1L)).contains("tensor count 18446744073709551615 cannot fit"));
        assertTrue(refused(withU64At(b, 16, 1L << 61)).contains("metadata count"));
        byte[] arr = new GgufTestWriter().kv("big", ARRAY, new Arr(UINT64, List.of(1L, 2L))).bytes();
        int count = 24 + 8 + 3 + 4 + 4; // header, key, kind, element kind
        assertTrue(refused(withU64At(arr, count, 1L << 58)).contains("is an array of 288230376151711744 uint64"));
        byte[] str = new GgufTestWriter().str("s", "abc").bytes();
        assertTrue(refused(withU64At(str, 24 + 8 + 1 + 4, 1L << 50)).contains("claims 1125899906842624 bytes"));
        assertTrue(refused(withU64At(str, 24, 1L << 50)).contains("claims 1125899906842624 bytes"));
    }

    @Test
    void badTensorInfosAreRefusedNamingTheTensor() throws IOException {
        assertTrue(refused(new GgufTestWriter().tensor("t", 16, new byte[64], 32).bytes())
                .contains("tensor t has ggml type 16"));
        assertTrue(refused(new GgufTestWriter().tensor("t", 99, new byte[64], 32).bytes())
                .contains("tensor t has ggml type 99"));
        assertTrue(refused(new GgufTestWriter().tensorAt("t", F32, new byte[64], 4, 16).bytes())
                .contains("tensor t has offset 4, not a multiple of the alignment 32"));
        assertTrue(refused(new GgufTestWriter().tensorAt("t", F32, new byte[64], 64, 16).bytes())
                .contains("tensor t (64 bytes at data offset 64) runs past the end of the data section"));
        assertTrue(refused(new GgufTestWriter().tensorAt("t", F32, new byte[64], -32, 16).bytes())
                .contains("tensor t has offset 18446744073709551584"));
        assertTrue(refused(new GgufTestWriter().tensor("t", F32, new byte[64], 1L << 40, 1L << 40).bytes())
                .contains("too large"));
        assertTrue(refused(new GgufTestWriter().tensor("t", F32, new byte[64], 1, 1, 1, 1, 1).bytes())
                .contains("tensor t has 5 dimensions"));
        assertTrue(refused(new GgufTestWriter().tensor("t", Q8_0, new byte[34], 16).bytes())
                .contains("not a multiple of the 32-value blocks of Q8_0"));
        assertTrue(refused(new GgufTestWriter().tensor("t", F32, new byte[64], 16).tensor("t", F32, new byte[64], 16)
                .bytes()).contains("tensor t appears twice"));
        assertTrue(refused(new GgufTestWriter().tensor("a", F32, new byte[64], 16).tensorAt("b", F32, new byte[64], 32, 16)
                .bytes()).contains("overlaps tensor a"));
    }

    @Test
    void badMetadataIsRefusedNamingTheKey() throws IOException {
        assertTrue(refused(new GgufTestWriter().kv("k", 13, 0L).bytes()).contains("metadata key k has unknown value kind 13"));
        assertTrue(refused(new GgufTestWriter().kv("k", BOOL, 2L).bytes()).contains("bool of byte value 2"));
        assertTrue(refused(new GgufTestWriter().u32("k", 1).u32("k", 2).bytes()).contains("metadata key k appears twice"));
        assertTrue(refused(new GgufTestWriter().alignment(48).bytes()).contains("general.alignment 48 is not a power of two"));
        assertTrue(refused(new GgufTestWriter().str("general.alignment", "x").bytes())
                .contains("general.alignment must be an integer"));
        Object deep = new Arr(INT32, List.of(1L));
        for (int i = 0; i < 9; i++) {
            deep = new Arr(ARRAY, List.of(deep));
        }
        assertTrue(refused(new GgufTestWriter().kv("k", ARRAY, deep).bytes()).contains("nests arrays deeper than 8"));
    }

    @Test
    void dataIsOnlyReachableWhileOpen() throws IOException {
        GgufFile f = GgufFile.open(file(valid().bytes()));
        var seg = f.data(f.tensors().get("a"));
        f.close();
        assertThrows(IllegalStateException.class, () -> seg.get(ValueLayout.JAVA_BYTE, 0));
    }
}
