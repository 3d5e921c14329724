package io.radixkv.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.radixkv.kernels.cpu.NativeLibrary;
import io.radixkv.platform.LastLevelCache;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class InfoKernelsCommandTest {

    @Test
    void infoShowsVersionLibraryAndBackend() {
        CliRun r = CliRun.of("info").assertOk();
        assertTrue(r.out().startsWith("radixkv "), r.out());
        assertTrue(r.out().contains("native library: "), r.out());
        assertTrue(r.out().contains("libradixkv.so"), r.out());
        assertTrue(r.out().contains("native build: "), r.out());
        assertTrue(r.out().contains("CUDA: "), r.out());
        assertTrue(r.out().lines().anyMatch(l -> l.startsWith("backend: ")), r.out());
    }

    @Test
    void infoExplicitBackend() {
        CliRun r = CliRun.of("info", "--backend", "java").assertOk();
        assertTrue(r.out().contains("backend: java (requested java; chosen explicitly)"), r.out());
    }

    @Test
    void infoBadBackend() {
        CliRun.of("info", "--backend", "tpu").assertUsageError("--backend");
    }

    @Test
    void kernelsBadArguments() {
        CliRun.of("kernels", "--size-mib", "0").assertUsageError("--size-mib");
        CliRun.of("kernels", "--size-mib", "lots").assertUsageError("--size-mib");
        CliRun.of("kernels", "--backend", "cuda").assertUsageError("--backend");
        CliRun.of("kernels", "--json", "/nonexistent-dir/x.json").assertUsageError("--json");
    }

    /** A small working set keeps the test quick; the JSON shape is the contract. */
    @Test
    void kernelsWritesJson(@TempDir Path dir) throws Exception {
        Path json = dir.resolve("k.json");
        CliRun r = CliRun.of("kernels", "--size-mib", "8", "--json", json.toString()).assertOk();
        assertTrue(r.out().contains("read"), r.out());
        JsonNode n = CliSupport.JSON.readTree(Files.readString(json));
        assertTrue(n.get("read_gbps").asDouble() > 0, n.toString());
        assertTrue(n.get("memcpy_gbps").asDouble() > 0, n.toString());
        assertTrue(n.get("kernels").isArray(), n.toString());
        for (JsonNode k : n.get("kernels")) {
            assertTrue(k.get("name").isTextual(), k.toString());
            assertTrue(k.get("gbps").asDouble() > 0, k.toString());
            double base = k.get("against").asText().equals("read") ? n.get("read_gbps").asDouble()
                    : n.get("memcpy_gbps").asDouble();
            assertEquals(k.get("gbps").asDouble() / base, k.get("ratio").asDouble(), 1e-9, k.toString());
        }
        // Every kernel is either measured or listed as skipped with the reason.
        assertEquals(7, n.get("kernels").size() + n.get("skipped").size(), n.toString());
        // the decode linears: 8 MiB holds 1365 rows of 3072 bf16, rounded down to 1344 (64 | n for packing)
        assertEquals(1344, n.get("linear_rows").asLong(), n.toString());
        assertEquals(3072, n.get("linear_cols").asLong(), n.toString());
        assertTrue(List.of("packed", "row-major").contains(n.get("linear_layout").asText()), n.toString());
        assertTrue(r.out().contains("decode_linear_bf16_m8"), r.out());
        // every figure comes with the CPU and the library build (its ISA, oneDNN, prefetch and AMX choices)
        assertEquals(NativeLibrary.cpuModel(), n.get("cpu_model").asText(), n.toString());
        assertTrue(n.get("native_build").asText().contains("amx="), n.toString());
        assertTrue(r.out().contains("cpu: " + NativeLibrary.cpuModel() + "; native: "), r.out());
        // 8 MiB is under twice any last-level cache this runs on: said on stderr and in the JSON
        assertEquals(LastLevelCache.bytes(), n.get("last_level_cache_bytes").asLong(), n.toString());
        assertEquals(LastLevelCache.regime(8L << 20), n.get("regime").asText(), n.toString());
        assertTrue(r.err().contains("8 MiB is under twice the last-level cache"), r.err());
    }

    @Test
    void kernelsDefaultStreamsPastTheLastLevelCache() {
        long bytes = KernelsCommand.defaultBytes();
        assertTrue(bytes >= (long) KernelsCommand.MIN_DEFAULT_MIB << 20, "" + bytes);
        assertEquals("memory", LastLevelCache.regime(bytes), bytes + " bytes against " + LastLevelCache.describe());
    }
}
