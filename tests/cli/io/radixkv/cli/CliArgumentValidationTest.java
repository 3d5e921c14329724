package io.radixkv.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.radixkv.model.ModelPresets;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Bad arguments exit 2 naming the option and value, a bench whose requests
 * all fail exits non-zero with the reasons, runaway schedules and sizes are refused up front.
 */
class CliArgumentValidationTest {
    @TempDir
    Path dir;

    @Test
    void pageSizeTheEngineRefusesIsAUsageError() {
        CliRun.of("generate", "--prompt-tokens", "1,2,3", "--model", "tiny", "--page-size", "1025")
                .assertUsageError("--page-size 1025");
        CliRun.of("bench", "--workload", "prefix_caching", "--model", "tiny", "--page-size", "1025")
                .assertUsageError("--page-size 1025");
    }

    @Test
    void poolTooSmallForTheEngineIsAUsageError() {
        CliRun.of("bench", "--workload", "prefix_caching", "--model", "tiny", "--requests", "2", "--pages", "1")
                .assertUsageError("--pages 1");
    }

    @Test
    void benchWhoseRequestsAllFailExitsNonZeroWithTheReason() {
        // 4 pages of 16 tokens cannot hold a 1056+-token prompt: the engine rejects both requests.
        CliRun r = CliRun.of("bench", "--workload", "prefix_caching", "--model", "tiny", "--requests", "2",
                "--rate", "inf", "--pages", "4");
        assertEquals(Main.EXIT_FAILURE, r.code(), () -> "exit code; stderr: " + r.err());
        assertTrue(r.err().contains("2 of 2 requests failed"), r.err());
        assertTrue(r.err().contains("REJECTED"), () -> "the engine's reason is shown: " + r.err());
    }

    @Test
    void scheduleLongerThanARunMayTakeIsRefused() {
        assertTimeoutPreemptively(Duration.ofSeconds(60), () -> {
            CliRun.of("bench", "--workload", "prefix_caching", "--model", "tiny", "--requests", "4", "--rate", "0.001")
                    .assertUsageError("--rate: 0.001");
            CliRun.of("bench", "--workload", "prefix_caching", "--model", "tiny", "--requests", "4",
                    "--time-scale", "1e9").assertUsageError("--time-scale: 1.0E9");
            CliRun.of("bench", "--workload", "multi_turn", "--model", "tiny", "--requests", "8", "--rate", "inf",
                    "--time-scale", "1e5").assertUsageError("--time-scale");
        });
    }

    @Test
    void workloadTooLargeForTheHeapFailsFast() {
        assertTimeoutPreemptively(Duration.ofSeconds(30), () -> {
            CliRun.of("simulate", "--workload", "prefix_caching", "--requests", "100000000")
                    .assertUsageError("--requests: 100000000");
            CliRun.of("bench", "--workload", "prefix_caching", "--model", "tiny", "--requests", "100000000")
                    .assertUsageError("--requests: 100000000");
        });
    }

    @Test
    void hugePageSizeDoesNotOverflow() throws Exception {
        Path trace = dir.resolve("t.jsonl");
        Files.writeString(trace, """
                {"tokens":[1,2,3], "output":[9,9]}
                {"tokens":[4,5,6]}
                {"tokens":[1,2,3,4]}
                """);
        JsonNode out = CliSupport.JSON.readTree(CliRun.of("simulate", "--trace", trace.toString(), "--page-size",
                "2147483647").assertOk().out());
        // One page per request holds the whole trace; nothing is reusable (no whole page matches).
        assertEquals(3, out.get("pages").asInt(), out::toString);
        assertEquals(0, out.get("hit_tokens").asInt());
        assertEquals(0, out.get("rejected").asInt());
        assertEquals(0, out.get("evicted_pages").asInt());
        // Bounded pool: 1 page fits one request at a time; the cache gives its page back each time.
        out = CliSupport.JSON.readTree(CliRun.of("simulate", "--trace", trace.toString(), "--page-size",
                "2147483647", "--pages", "1").assertOk().out());
        assertEquals(0, out.get("rejected").asInt(), out::toString);
    }

    @Test
    void sweepListWithAnEmptyElementIsRefused() throws Exception {
        Path trace = dir.resolve("t.jsonl");
        Files.writeString(trace, "{\"tokens\":[1,2,3]}\n");
        CliRun.of("simulate", "--trace", trace.toString(), "--sweep-pages", "1,2,").assertUsageError("--sweep-pages");
        CliRun.of("simulate", "--trace", trace.toString(), "--sweep-pages", ",1").assertUsageError("--sweep-pages");
    }

    @Test
    void modelErrorListsThePresetsOfTheModelPackage() {
        CliRun r = CliRun.of("generate", "--prompt-tokens", "1,2", "--model", "huge").assertUsageError("--model");
        for (String p : ModelPresets.names()) {
            assertTrue(r.err().contains(p), () -> "preset " + p + " missing from: " + r.err());
        }
    }

    /** --model takes an existing *.gguf file; a file that is not GGUF fails with the reader's one line. */
    @Test
    void ggufModelMustBeAnExistingGgufFile() throws IOException {
        CliRun.of("generate", "--prompt-tokens", "1,2", "--model", dir.resolve("absent.gguf").toString())
                .assertUsageError("a .gguf file");
        Path bad = Files.write(dir.resolve("bad.gguf"), new byte[] {'G', 'G', 'U', 'F', 9, 9});
        CliRun.of("generate", "--prompt-tokens", "1,2", "--model", bad.toString()).assertFailure("not a GGUF file");
    }
}
