package io.radixkv.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code generate --logits FILE.npy}: the last prompt position's logits, readable by NumPy. */
class GenerateLogitsTest {
    private static final int TINY_VOCAB = 32000;

    /** The first generated token of each "prompt i: ..." line. */
    private static int[] firstTokens(CliRun r, int prompts) {
        List<String> lines = r.out().lines().toList();
        return IntStream.range(0, prompts)
                .map(i -> Integer.parseInt(lines.get(i).substring(lines.get(i).indexOf(':') + 2).split(" ")[0]))
                .toArray();
    }

    /** The float32 data of a version 1.0 .npy file after checking its magic and 64-byte aligned header. */
    private static float[] readData(Path npy) throws IOException {
        byte[] b = Files.readAllBytes(npy);
        assertArrayEquals(Npy.MAGIC, Arrays.copyOf(b, 8));
        int headerLen = ByteBuffer.wrap(b, 8, 2).order(ByteOrder.LITTLE_ENDIAN).getShort() & 0xffff;
        assertEquals(0, (10 + headerLen) % 64, "data starts 64-byte aligned");
        assertEquals('\n', b[10 + headerLen - 1]);
        float[] f = new float[(b.length - 10 - headerLen) / 4];
        ByteBuffer.wrap(b, 10 + headerLen, 4 * f.length).order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer().get(f);
        return f;
    }

    private static int argmax(float[] v, int from, int n) {
        int best = from;
        for (int i = from; i < from + n; i++) {
            if (v[i] > v[best]) {
                best = i;
            }
        }
        return best - from;
    }

    @Test
    void logitsArgmaxIsTheGreedyFirstToken(@TempDir Path dir) throws Exception {
        Path npy = dir.resolve("logits.npy");
        String p0 = IntStream.rangeClosed(1, 37).mapToObj(Integer::toString).collect(Collectors.joining(","));
        CliRun r = CliRun.of("generate", "--model", "tiny", "--prompt-tokens", p0, "--prompt-tokens", "5,900,77",
                "--max-tokens", "3", "--backend", "cpu", "--logits", npy.toString()).assertOk();
        float[] data = readData(npy);
        assertEquals(2 * TINY_VOCAB, data.length);
        int[] first = firstTokens(r, 2);
        assertEquals(first[0], argmax(data, 0, TINY_VOCAB), "prompt 0: argmax of its logits is its first token");
        assertEquals(first[1], argmax(data, TINY_VOCAB, TINY_VOCAB), "prompt 1");
        // Different prompts, different logits (not one row written twice).
        assertTrue(!Arrays.equals(Arrays.copyOf(data, TINY_VOCAB), Arrays.copyOfRange(data, TINY_VOCAB, data.length)));

        String numpy = numpyRead(npy);
        assertEquals("float32 (2, " + TINY_VOCAB + ") " + first[0] + " " + first[1] + " True", numpy);
    }

    @Test
    void onePromptIsOneDimensional(@TempDir Path dir) throws Exception {
        Path npy = dir.resolve("one.npy");
        CliRun r = CliRun.of("generate", "--model", "tiny", "--prompt-tokens", "3,1,4,1,5,9,2,6", "--max-tokens", "2",
                "--backend", "cpu", "--logits", npy.toString()).assertOk();
        byte[] b = Files.readAllBytes(npy);
        String header = new String(b, 10, (b[8] & 0xff) | (b[9] & 0xff) << 8, StandardCharsets.US_ASCII);
        assertTrue(header.startsWith("{'descr': '<f4', 'fortran_order': False, 'shape': (32000,), }"), header);
        assertEquals(firstTokens(r, 1)[0], argmax(readData(npy), 0, TINY_VOCAB));
        assertEquals("float32 (" + TINY_VOCAB + ",) " + firstTokens(r, 1)[0] + " True", numpyRead(npy));
    }

    @Test
    void unwritableTargetIsAUsageError(@TempDir Path dir) {
        CliRun.of("generate", "--model", "tiny", "--prompt-tokens", "1,2", "--logits",
                dir.resolve("missing/dir/x.npy").toString()).assertUsageError("--logits");
    }

    /**
     * dtype, shape, argmax along the last axis and whether all values are finite, as NumPy reads
     * the file; the test is skipped (not failed) where python3-numpy is not installed.
     */
    private static String numpyRead(Path npy) throws Exception {
        String script = "import sys, numpy as np\n"
                + "a = np.load(sys.argv[1])\n"
                + "print(a.dtype, a.shape, ' '.join(str(int(i)) for i in np.atleast_1d(a.argmax(axis=-1))), "
                + "bool(np.isfinite(a).all()))\n";
        Process check;
        try {
            check = new ProcessBuilder("python3", "-c", "import numpy").redirectErrorStream(true).start();
        } catch (IOException e) {
            Assumptions.abort("python3 not found: install python3-numpy to check --logits files with NumPy");
            return null;
        }
        check.getInputStream().readAllBytes();
        Assumptions.assumeTrue(check.waitFor(60, TimeUnit.SECONDS) && check.exitValue() == 0,
                "NumPy not importable by python3: install python3-numpy to check --logits files with NumPy");
        Process p = new ProcessBuilder("python3", "-c", script, npy.toString()).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
        assertTrue(p.waitFor(60, TimeUnit.SECONDS));
        assertEquals(0, p.exitValue(), out);
        return out;
    }
}
