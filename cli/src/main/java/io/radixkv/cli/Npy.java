package io.radixkv.cli;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.stream.Collectors;

/**
 * Writes NumPy {@code .npy} files (format version 1.0: magic, little-endian header length,
 * a Python-literal header dict padded so the data starts 64-byte aligned, then the raw data).
 * The format is a page of spec; the Maven Central reader/writer (org.jetbrains.bio:npy) would
 * bring the Kotlin runtime into the CLI for these few lines.
 */
final class Npy {
    static final byte[] MAGIC = {(byte) 0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0};

    private Npy() {}

    /** Writes {@code data} as a C-order little-endian float32 array of {@code shape}. */
    static void writeF32(Path file, long[] shape, float[] data) throws IOException {
        long n = Arrays.stream(shape).reduce(1, Math::multiplyExact);
        if (n != data.length) {
            throw new IllegalArgumentException("shape " + Arrays.toString(shape) + " holds " + n
                    + " elements, data has " + data.length);
        }
        String dims = Arrays.stream(shape).mapToObj(Long::toString).collect(Collectors.joining(", "));
        String dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + dims + (shape.length == 1 ? "," : "")
                + "), }";
        int unpadded = MAGIC.length + 2 + dict.length() + 1;
        String header = dict + " ".repeat((64 - unpadded % 64) % 64) + "\n";
        ByteBuffer buf = ByteBuffer.allocate(MAGIC.length + 2 + header.length() + 4 * data.length)
                .order(ByteOrder.LITTLE_ENDIAN);
        buf.put(MAGIC).putShort((short) header.length()).put(header.getBytes(StandardCharsets.US_ASCII));
        buf.asFloatBuffer().put(data);
        try (OutputStream out = Files.newOutputStream(file)) {
            out.write(buf.array());
        }
    }
}
