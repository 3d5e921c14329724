package io.radixkv.kernels.cuda;

import io.radixkv.kernels.DType;
import io.radixkv.kernels.KernelBackend;
import io.radixkv.kernels.NativeException;
import io.radixkv.kernels.cpu.CpuBackend;
import io.radixkv.kernels.cpu.CpuDenseKernels;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Random;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The CUDA backend's dense kernels on a device against the CPU backend's on the same inputs.
 * Skipped without a usable device, unless {@code -Dradixkv.requireCuda=true} (scripts/gpu-check),
 * which turns the missing device into a failure.
 */
class CudaDenseKernelsDeviceTest {
    private KernelBackend cuda;
    private final CpuDenseKernels cpu = new CpuDenseKernels();
    private final Arena arena = Arena.ofConfined();
    private final Random rnd = new Random(13);

    @BeforeEach
    void device() {
        cuda = CudaDevice.backendOrSkip();
    }

    @AfterEach
    void close() {
        if (cuda != null) {
            cuda.close();
        }
        arena.close();
    }

    private MemorySegment host(float[] v) {
        return arena.allocateFrom(ValueLayout.JAVA_FLOAT, v);
    }

    private MemorySegment dev(MemorySegment h) {
        MemorySegment d = cuda.memory().allocate(h.byteSize());
        cuda.memory().copyFromHost(h, d, h.byteSize());
        return d;
    }

    private float[] back(MemorySegment d, int n) {
        MemorySegment h = arena.allocate(4L * n);
        cuda.memory().copyToHost(d, h, 4L * n);
        return h.toArray(ValueLayout.JAVA_FLOAT);
    }

    private float[] randn(int n, float scale) {
        float[] v = new float[n];
        for (int i = 0; i < n; i++) {
            v[i] = (float) rnd.nextGaussian() * scale;
        }
        return v;
    }

    private static void close(String what, float[] want, float[] got, float rel, float abs) {
        for (int i = 0; i < want.length; i++) {
            if (!(Math.abs(got[i] - want[i]) <= abs + rel * Math.abs(want[i]))) {
                fail(what + "[" + i + "]: GPU " + got[i] + " vs CPU " + want[i]);
            }
        }
    }

    @Test
    void linearF32AndBf16() {
        int m = 9, n = 130, k = 70;
        float[] x = randn(m * k, 1f);
        float[] w = randn(n * k, 0.1f);
        MemorySegment hx = host(x), hw = host(w), hy = arena.allocate(4L * m * n);
        cpu.linear(hx, hw, DType.F32, hy, m, n, k, false);
        MemorySegment dy = cuda.memory().allocate(4L * m * n);
        cuda.dense().linear(dev(hx), dev(hw), DType.F32, dy, m, n, k, false);
        close("linear f32", hy.toArray(ValueLayout.JAVA_FLOAT), back(dy, m * n), 1e-4f, 1e-4f);
        MemorySegment wb = arena.allocate(2L * n * k);
        try (CpuBackend c = new CpuBackend()) {
            c.kv().convert(hw, DType.F32, wb, DType.BF16, (long) n * k, 1f);
        }
        cpu.linear(hx, wb, DType.BF16, hy, m, n, k, false);
        cuda.dense().linear(dev(hx), dev(wb), DType.BF16, dy, m, n, k, false);
        // cuBLAS rounds x to bf16 (RNE) and the CPU GEMV may not: the results differ by at most
        // the rounding of x, |x - bf16(x)| <= 2^-8 |x|, summed over k: 2^-8 sum |x_k||w_k|
        float[] want = hy.toArray(ValueLayout.JAVA_FLOAT), got = back(dy, m * n);
        float[] wUsed = new float[n * k];
        for (int j = 0; j < n * k; j++) {
            wUsed[j] = Float.intBitsToFloat((wb.getAtIndex(ValueLayout.JAVA_SHORT, j) & 0xffff) << 16);
        }
        for (int i = 0; i < m; i++) {
            for (int j = 0; j < n; j++) {
                double bound = 0;
                for (int kk = 0; kk < k; kk++) {
                    bound += Math.abs(x[i * k + kk]) * Math.abs(wUsed[j * k + kk]);
                }
                bound = bound / 256 + 1e-6 + 1e-5 * Math.abs(want[i * n + j]);
                double diff = Math.abs(got[i * n + j] - want[i * n + j]);
                if (!(diff <= bound)) {
                    fail("linear bf16 [" + i + ", " + j + "]: GPU " + got[i * n + j] + " vs CPU " + want[i * n + j]
                            + ", |diff| " + diff + " > bound " + bound);
                }
            }
        }
        assertThrows(UnsupportedOperationException.class,
                () -> cuda.dense().linear(dev(hx), dev(wb), DType.F16, dy, m, n, k, false));
    }

    @Test
    void normsRopeAndElementwise() {
        int rows = 4, dim = 96;
        float[] x = randn(rows * dim, 2f), w = randn(dim, 0.2f);
        for (float offset : new float[] {0f, 1f}) {
            MemorySegment hy = arena.allocate(4L * rows * dim);
            cpu.rmsnorm(host(x), host(w), hy, rows, dim, 1e-6f, offset);
            MemorySegment dx = dev(host(x));
            cuda.dense().rmsnorm(dx, dev(host(w)), dx, rows, dim, 1e-6f, offset);
            close("rmsnorm", hy.toArray(ValueLayout.JAVA_FLOAT), back(dx, rows * dim), 1e-5f, 1e-6f);
        }
        int n = 3, hq = 4, hk = 2, hd = 32;
        float[] q = randn(n * hq * hd, 1f), kk = randn(n * hk * hd, 1f);
        MemorySegment pos = arena.allocateFrom(ValueLayout.JAVA_INT, 0, 9, 5000);
        MemorySegment hq0 = host(q), hk0 = host(kk);
        MemorySegment dq = dev(hq0), dk = dev(hk0);
        cpu.rope(hq0, hk0, pos, n, hq, hk, hd, 10000f);
        cuda.dense().rope(dq, dk, dev(pos), n, hq, hk, hd, 10000f);
        close("rope q", hq0.toArray(ValueLayout.JAVA_FLOAT), back(dq, q.length), 1e-5f, 1e-5f);
        close("rope k", hk0.toArray(ValueLayout.JAVA_FLOAT), back(dk, kk.length), 1e-5f, 1e-5f);
        float[] gu = randn(2 * 2 * 50, 2f);
        MemorySegment ho = arena.allocate(4L * 100);
        MemorySegment dgu = dev(host(gu)), dout = cuda.memory().allocate(4L * 100);
        cpu.siluMul(host(gu), ho, 2, 50);
        cuda.dense().siluMul(dgu, dout, 2, 50);
        close("siluMul", ho.toArray(ValueLayout.JAVA_FLOAT), back(dout, 100), 1e-5f, 1e-6f);
        cpu.geluTanhMul(host(gu), ho, 2, 50);
        cuda.dense().geluTanhMul(dgu, dout, 2, 50);
        cpu.addBias(ho, host(w), 1, 96);
        cuda.dense().addBias(dout, dev(host(w)), 1, 96);
        cpu.softCap(ho, 100, 2f);
        cuda.dense().softCap(dout, 100, 2f);
        cpu.scale(ho, 100, 3f);
        cuda.dense().scale(dout, 100, 3f);
        cpu.addInplace(ho, host(x), 100);
        cuda.dense().addInplace(dout, dev(host(x)), 100);
        close("gelu+bias+cap+scale+add", ho.toArray(ValueLayout.JAVA_FLOAT), back(dout, 100), 1e-5f, 1e-6f);
    }

    @Test
    void embeddingChecksIdsOnTheDeviceAndArgmaxMatches() {
        int vocab = 40, dim = 8;
        float[] table = randn(vocab * dim, 1f);
        MemorySegment dt = dev(host(table));
        MemorySegment ids = arena.allocateFrom(ValueLayout.JAVA_INT, 3, 39, 0);
        MemorySegment ho = arena.allocate(4L * 3 * dim), dout = cuda.memory().allocate(4L * 3 * dim);
        cpu.embedding(ids, 3, host(table), DType.F32, vocab, dim, ho);
        cuda.dense().embedding(dev(ids), 3, dt, DType.F32, vocab, dim, dout);
        assertArrayEquals(ho.toArray(ValueLayout.JAVA_FLOAT), back(dout, 3 * dim));
        cuda.checkDeviceErrors();  // nothing recorded
        // a bad id is not an error at the call (nothing waits): its row is zeroed and the id is
        // recorded on the device, then reported once by checkDeviceErrors, which resets the record
        MemorySegment bad = dev(arena.allocateFrom(ValueLayout.JAVA_INT, 1, 2, 40, 5));
        MemorySegment badOut = dev(host(randn(4 * dim, 1f)));
        cuda.dense().embedding(bad, 4, dt, DType.F32, vocab, dim, badOut);
        float[] rowsBack = back(badOut, 4 * dim);
        for (int d = 0; d < dim; d++) {
            assertEquals(0f, rowsBack[2 * dim + d], "row of the bad id at " + d);
            assertEquals(table[dim + d], rowsBack[d], "row of id 1 at " + d);
        }
        NativeException e = assertThrows(NativeException.class, cuda::checkDeviceErrors);
        assertTrue(e.getMessage().contains("rkv_cuda_embedding") && e.getMessage().contains("token id 40 (ids[2])")
                && e.getMessage().contains("[0, 40)"), e.getMessage());
        cuda.checkDeviceErrors();  // reset by the previous call

        int rows = 3, v = 1000;
        float[] logits = randn(rows * v, 3f);
        logits[v + 10] = 50f;
        logits[v + 900] = 50f;
        MemorySegment hout = arena.allocate(4L * rows), dam = cuda.memory().allocate(4L * rows);
        cpu.argmax(host(logits), rows, v, hout);
        cuda.dense().argmax(dev(host(logits)), rows, v, dam);
        MemorySegment got = arena.allocate(4L * rows);
        cuda.memory().copyToHost(dam, got, 4L * rows);
        assertArrayEquals(hout.toArray(ValueLayout.JAVA_INT), got.toArray(ValueLayout.JAVA_INT));
        assertEquals(10, got.getAtIndex(ValueLayout.JAVA_INT, 1));
    }
}
