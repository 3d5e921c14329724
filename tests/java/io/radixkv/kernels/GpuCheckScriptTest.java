package io.radixkv.kernels;

import io.radixkv.kernels.select.Backends;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * scripts/gpu-check on a machine without a GPU: exactly one line "no CUDA device: <reason>"
 * and a non-zero exit, before building anything. Run twice: with this machine's PATH (where
 * there is no nvidia-smi, or one that finds no GPU) and with a fake nvidia-smi that fails
 * like the real one does when the driver is not loaded.
 */
class GpuCheckScriptTest {
    private static final Path SCRIPT = Path.of(System.getProperty("user.dir")).getParent().resolve("scripts/gpu-check");

    private static Path script() {
        Path p = SCRIPT;
        if (!Files.exists(p)) {
            p = Path.of("scripts/gpu-check").toAbsolutePath();  // run from the repository root
        }
        assertTrue(Files.isExecutable(p), "scripts/gpu-check not found or not executable at " + p);
        return p;
    }

    private record Result(int code, List<String> lines) {}

    private static Result run(String path) throws IOException, InterruptedException {
        ProcessBuilder pb = new ProcessBuilder("bash", script().toString()).redirectErrorStream(true);
        pb.environment().put("PATH", path);
        Process p = pb.start();
        assertTrue(p.waitFor(60, TimeUnit.SECONDS), "gpu-check did not exit within 60 s");
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        return new Result(p.exitValue(), out.lines().toList());
    }

    @Test
    void withoutAGpuItPrintsOneLineAndFails() throws Exception {
        String why = Backends.cudaUnavailableReason();
        assumeTrue(!why.isEmpty(), "a CUDA device is present: scripts/gpu-check would run for real");
        Result r = run(System.getenv("PATH"));
        assertTrue(r.code() != 0, "exit code 0 without a GPU");
        assertEquals(1, r.lines().size(), () -> "want exactly one line, got " + r.lines());
        assertTrue(r.lines().get(0).startsWith("no CUDA device: "), r.lines().get(0));
    }

    @Test
    void aFailingNvidiaSmiIsNamedInTheLine(@TempDir Path dir) throws Exception {
        Path smi = dir.resolve("nvidia-smi");
        Files.writeString(smi, "#!/bin/sh\necho 'NVIDIA-SMI has failed because it could not communicate with the "
                + "NVIDIA driver.'\nexit 9\n");
        assertTrue(smi.toFile().setExecutable(true));
        Result r = run(dir + ":/usr/bin:/bin");
        assertEquals(3, r.code(), () -> "exit code; output " + r.lines());
        assertEquals(List.of("no CUDA device: nvidia-smi failed: NVIDIA-SMI has failed because it could not "
                + "communicate with the NVIDIA driver."), r.lines());
    }

    @Test
    void aDriverWithoutGpusIsNamedInTheLine(@TempDir Path dir) throws Exception {
        Path smi = dir.resolve("nvidia-smi");
        Files.writeString(smi, "#!/bin/sh\necho 'No devices were found'\nexit 0\n");
        assertTrue(smi.toFile().setExecutable(true));
        Result r = run(dir + ":/usr/bin:/bin");
        assertEquals(3, r.code());
        assertEquals(List.of("no CUDA device: nvidia-smi lists no GPU (No devices were found)"), r.lines());
    }
}
