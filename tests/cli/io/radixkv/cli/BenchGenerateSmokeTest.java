package io.radixkv.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Short end-to-end runs of bench and generate on the tiny model. */
class BenchGenerateSmokeTest {

    @Test
    void benchPrefixCachingBoth(@TempDir Path dir) throws Exception {
        Path json = dir.resolve("bench.json");
        Path png = dir.resolve("bench.png");
        CliRun r = CliRun.of("bench", "--workload", "prefix_caching", "--prefix-cache", "both", "--model", "tiny",
                "--requests", "6", "--max-tokens", "3", "--rate", "50", "--backend", "cpu",
                "--json", json.toString(), "--plot", png.toString()).assertOk();
        assertTrue(r.out().contains("cache off") && r.out().contains("cache on"), r.out());
        assertTrue(r.out().contains("TTFT p50"), r.out());
        JsonNode j = CliSupport.JSON.readTree(Files.readString(json));
        assertEquals("prefix_caching", j.get("workload").asText());
        assertEquals(2, j.get("runs").size());
        JsonNode off = j.get("runs").get(0);
        JsonNode on = j.get("runs").get(1);
        assertEquals("off", off.get("prefix_cache").asText());
        assertEquals("on", on.get("prefix_cache").asText());
        for (JsonNode run : j.get("runs")) {
            assertEquals(6, run.get("requests").asInt());
            assertEquals(0, run.get("failed").asInt());
            assertEquals(18, run.get("output_tokens").asInt(), "6 requests x 3 tokens");
            assertTrue(run.get("ttft_ms").get("p50").asDouble() > 0);
            assertTrue(run.get("output_tok_s").asDouble() > 0);
        }
        assertEquals(0.0, off.get("hit_rate").asDouble());
        // Every request shares a 1024-token system prompt: requests 2..6 reuse it (64 pages of 16).
        assertTrue(on.get("cached_tokens").asLong() >= 5 * 1024, on.toString());
        assertTrue(Files.size(png) > 100);
    }

    @Test
    void generateReusesEarlierPromptsAndMatchesCacheOff() {
        String p1 = IntStream.rangeClosed(1, 40).mapToObj(Integer::toString).collect(Collectors.joining(","));
        String p2 = p1 + ",41,42,43";
        CliRun on = CliRun.of("generate", "--model", "tiny", "--prompt-tokens", p1, "--prompt-tokens", p2,
                "--max-tokens", "5", "--backend", "cpu").assertOk();
        CliRun off = CliRun.of("generate", "--model", "tiny", "--prompt-tokens", p1, "--prompt-tokens", p2,
                "--max-tokens", "5", "--prefix-cache", "off", "--backend", "cpu").assertOk();
        List<String> onLines = on.out().lines().toList();
        assertTrue(onLines.get(0).matches("prompt 0: \\d+( \\d+){4}"), on.out());
        assertTrue(onLines.get(1).matches("prompt 1: \\d+( \\d+){4}"), on.out());
        // Greedy decoding: identical tokens with and without the prefix cache.
        assertEquals(onLines.subList(0, 2), off.out().lines().toList().subList(0, 2));
        // Stats: prompt 1 reuses prompt 0's two full pages (32 tokens); with the cache off nothing.
        String[] stats1 = onLines.get(4).trim().split("\\s+");
        assertEquals(List.of("1", "43", "32", "11"), List.of(stats1).subList(0, 4), on.out());
        String[] offStats1 = off.out().lines().toList().get(4).trim().split("\\s+");
        assertEquals("0", offStats1[2], off.out());
    }

    /** bf16 weights give the same greedy tokens packed for the CPU kernels (where it has the layout) or not. */
    @Test
    void generateWithAndWithoutPackedWeights() {
        String p = IntStream.rangeClosed(1, 30).mapToObj(Integer::toString).collect(Collectors.joining(","));
        List<String> outs = new java.util.ArrayList<>();
        for (String pack : List.of("on", "off")) {
            CliRun r = CliRun.of("generate", "--model", "tiny", "--prompt-tokens", p, "--max-tokens", "6",
                    "--weights-dtype", "bf16", "--pack-weights", pack, "--backend", "cpu").assertOk();
            outs.add(r.out().lines().findFirst().orElseThrow());
        }
        assertTrue(outs.get(0).matches("prompt 0: \\d+( \\d+){5}"), outs.get(0));
        assertEquals(outs.get(1), outs.get(0));
    }

    @Test
    void engineSettingConflictsAreUsageErrors() {
        CliRun.of("bench", "--workload", "prefix_caching", "--model", "tiny", "--max-running", "64",
                "--max-batch-tokens", "8").assertUsageError("maxBatchTokens");
        CliRun.of("bench", "--workload", "prefix_caching", "--model", "tiny", "--page-size", "4096")
                .assertUsageError("pageSize");
    }

    @Test
    void generateTokenOutsideVocabularyIsAUsageError() {
        CliRun.of("generate", "--model", "tiny", "--prompt-tokens", "1,2,32000", "--backend", "cpu")
                .assertUsageError("vocabulary");
    }
}
