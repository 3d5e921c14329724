package io.radixkv.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code simulate} end to end: hand-worked numbers through the CLI, JSON, sweep, plot, errors. */
class SimulateCommandTest {
    @TempDir
    Path dir;
    Path trace;

    @BeforeEach
    void writeTrace() throws Exception {
        // Trace C of CacheSimulatorTest (page size 1): LRU with 7 pages reuses 5 of 15 prompt
        // tokens and evicts 3 pages; FIFO reuses 2 and evicts 6.
        trace = dir.resolve("trace.jsonl");
        Files.writeString(trace, """
                {"tokens":[1,2,3]}
                {"tokens":[4,5,6], "output":[]}

                {"tokens":[1,2,3], "namespace":null}
                {"tokens":[7,8]}
                {"tokens":[1,2,3,4]}
                """);
    }

    private JsonNode parse(String s) throws Exception {
        return CliSupport.JSON.readTree(s);
    }

    @Test
    void lruByHand() throws Exception {
        Path json = dir.resolve("r.json");
        CliRun r = CliRun.of("simulate", "--trace", trace.toString(), "--page-size", "1", "--pages", "7",
                "--json", json.toString()).assertOk();
        JsonNode out = parse(r.out());
        assertEquals(5, out.get("requests").asInt());
        assertEquals(15, out.get("prompt_tokens").asInt());
        assertEquals(5, out.get("hit_tokens").asInt());
        assertEquals(5.0 / 15, out.get("hit_rate").asDouble(), 1e-12);
        assertEquals(3, out.get("evicted_pages").asInt());
        assertEquals(0, out.get("rejected").asInt());
        assertEquals(out, parse(Files.readString(json)));
    }

    @Test
    void fifoByHand() throws Exception {
        CliRun r = CliRun.of("simulate", "--trace", trace.toString(), "--page-size", "1", "--pages", "7",
                "--policy", "FIFO").assertOk();
        JsonNode out = parse(r.out());
        assertEquals(2, out.get("hit_tokens").asInt());
        assertEquals(6, out.get("evicted_pages").asInt());
    }

    @Test
    void defaultPoolHoldsTheWholeTrace() throws Exception {
        // Unbounded: r3 reuses 2 (full match), r5 reuses 3.
        JsonNode out = parse(CliRun.of("simulate", "--trace", trace.toString(), "--page-size", "1").assertOk().out());
        assertEquals(5, out.get("hit_tokens").asInt());
        assertEquals(0, out.get("evicted_pages").asInt());
    }

    @Test
    void sweepPrintsATableAndPlots() throws Exception {
        Path png = dir.resolve("sweep.png");
        Path json = dir.resolve("sweep.json");
        CliRun r = CliRun.of("simulate", "--trace", trace.toString(), "--page-size", "1", "--sweep-pages", "3,7,100",
                "--plot", png.toString(), "--json", json.toString()).assertOk();
        assertTrue(r.out().contains("hit_rate"), r.out());
        byte[] bytes = Files.readAllBytes(png);
        assertTrue(bytes.length > 100 && bytes[1] == 'P' && bytes[2] == 'N' && bytes[3] == 'G', "not a PNG");
        JsonNode sweep = parse(Files.readString(json)).get("sweep");
        assertEquals(3, sweep.size());
        assertEquals(7, sweep.get(1).get("pages").asInt());
        assertEquals(5, sweep.get(1).get("hit_tokens").asInt());
        assertEquals(5, sweep.get(2).get("hit_tokens").asInt());
        // 3 pages: r5 needs 4 pages, more than the pool: rejected.
        assertEquals(1, sweep.get(0).get("rejected").asInt());
    }

    @Test
    void workloadAsTrace() throws Exception {
        // prefix_caching: 48 prompts sharing 1024 tokens (64 pages of 16): 47 requests reuse them.
        JsonNode pc = parse(CliRun.of("simulate", "--workload", "prefix_caching").assertOk().out());
        assertEquals(48, pc.get("requests").asInt());
        assertEquals(47L * 1024, pc.get("hit_tokens").asLong());
        // multi_turn with page size 1: --cache-output also reuses the previous turn's reply.
        JsonNode prompts = parse(CliRun.of("simulate", "--workload", "multi_turn", "--page-size", "1").assertOk().out());
        JsonNode outputs = parse(CliRun.of("simulate", "--workload", "multi_turn", "--page-size", "1", "--cache-output")
                .assertOk().out());
        // 24 follow-up turns each reuse a 32-token reply more with --cache-output.
        assertEquals(prompts.get("hit_tokens").asLong() + 24 * 32, outputs.get("hit_tokens").asLong());
    }

    @Test
    void badArguments() {
        String t = trace.toString();
        CliRun.of("simulate").assertUsageError("--trace");
        CliRun.of("simulate", "--trace", t, "--workload", "multi_turn").assertUsageError("--workload");
        CliRun.of("simulate", "--workload", "nope").assertUsageError("--workload");
        CliRun.of("simulate", "--workload", "multi_turn", "--requests", "0").assertUsageError("--requests");
        CliRun.of("simulate", "--trace", t, "--requests", "3").assertUsageError("--requests");
        CliRun.of("simulate", "--trace", dir.resolve("missing.jsonl").toString()).assertUsageError("--trace");
        CliRun.of("simulate", "--trace", t, "--page-size", "0").assertUsageError("--page-size");
        CliRun.of("simulate", "--trace", t, "--page-size", "x").assertUsageError("--page-size");
        CliRun.of("simulate", "--trace", t, "--pages", "-3").assertUsageError("--pages");
        CliRun.of("simulate", "--trace", t, "--policy", "random").assertUsageError("--policy");
        CliRun.of("simulate", "--trace", t, "--sweep-pages", "4,x").assertUsageError("--sweep-pages");
        CliRun.of("simulate", "--trace", t, "--sweep-pages", "4,0").assertUsageError("--sweep-pages");
        CliRun.of("simulate", "--trace", t, "--plot", dir.resolve("p.png").toString()).assertUsageError("--plot");
        CliRun.of("simulate", "--trace", t, "--pages", "4", "--sweep-pages", "4").assertUsageError("--sweep-pages");
    }

    @Test
    void badTraceIsAOneLineFailure() throws Exception {
        Path bad = dir.resolve("bad.jsonl");
        Files.writeString(bad, "{\"tokens\":[1,2]}\n{\"tokens\":[1,\"x\"]}\n");
        CliRun.of("simulate", "--trace", bad.toString()).assertFailure("line 2");
        Files.writeString(bad, "{\"tokens\":[1,2]\n");
        CliRun.of("simulate", "--trace", bad.toString()).assertFailure("line 1");
        Files.writeString(bad, "{\"tokens\":[1], \"priority\":1.5}\n");
        CliRun.of("simulate", "--trace", bad.toString()).assertFailure("priority");
        Files.writeString(bad, "\n\n");
        CliRun.of("simulate", "--trace", bad.toString()).assertFailure("no requests");
    }

    @Test
    void debugPrintsTheStackTrace() throws Exception {
        Path bad = dir.resolve("bad.jsonl");
        Files.writeString(bad, "[]\n");
        CliRun r = CliRun.of("simulate", "--debug", "--trace", bad.toString());
        assertEquals(Main.EXIT_FAILURE, r.code());
        assertTrue(r.err().contains("\tat "), r.err());
    }
}
