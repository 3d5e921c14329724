package io.radixkv.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.radixkv.engine.Engine;
import io.radixkv.engine.EngineConfig;
import io.radixkv.server.OpenAiServer;
import io.radixkv.server.ServerConfig;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code bench --url} end to end against radixkv's own server (tiny preset, prefix cache on)
 * started in process on an ephemeral port: counts, TTFT within E2E, cached tokens reported by
 * the server, and the same report shape as the in-process bench of the same workload.
 */
class BenchUrlServerTest {
    @TempDir
    Path dir;

    private static final String[] WORKLOAD = {"--workload", "prefix_caching", "--requests", "4", "--rate", "4",
        "--max-tokens", "4"};

    @Test
    void benchAgainstTheRadixkvServer() throws Exception {
        EngineConfig ec = EngineConfig.builder().model("tiny").backend("cpu").pageSize(16).numPages(1024)
                .maxRunning(8).maxBatchTokens(512).prefixCache(true).build();
        Path httpJson = dir.resolve("http.json");
        CliRun r;
        try (Engine engine = Engine.start(ec);
             OpenAiServer server = OpenAiServer.start(engine, null, ServerConfig.local("tiny"))) {
            List<String> args = new ArrayList<>(List.of("bench", "--url", server.baseUri().toString()));
            args.addAll(List.of(WORKLOAD));
            args.addAll(List.of("--json", httpJson.toString()));
            r = CliRun.of(args.toArray(String[]::new)).assertOk();
        }
        assertTrue(r.out().contains("server"), r.out());
        JsonNode run = CliSupport.JSON.readTree(Files.readString(httpJson)).get("runs").get(0);
        assertEquals(4, run.get("requests").asInt(), run::toString);
        assertEquals(0, run.get("failed").asInt(), run::toString);
        assertEquals(16, run.get("output_tokens").asInt(), "4 requests x --max-tokens 4 (usage.completion_tokens)");
        double ttft50 = run.get("ttft_ms").get("p50").asDouble();
        double ttftMax = run.get("ttft_ms").get("max").asDouble();
        assertTrue(ttft50 > 0 && ttft50 <= run.get("e2e_ms").get("p50").asDouble(), run::toString);
        assertTrue(ttftMax <= run.get("e2e_ms").get("max").asDouble(), run::toString);
        // Requests 2-4 share the first one's 1024-token system prompt (64 whole pages).
        assertTrue(run.get("cached_tokens").asLong() >= 1024, () -> "cached tokens reported: " + run);
        assertTrue(run.get("hit_rate").asDouble() > 0, run::toString);
        assertTrue(run.get("pages_used").isNull(), "the server's pages are not visible to a client");

        // The same workload in process: same table rows and the same JSON fields.
        Path localJson = dir.resolve("local.json");
        List<String> args = new ArrayList<>(List.of("bench", "--model", "tiny", "--backend", "cpu"));
        args.addAll(List.of(WORKLOAD));
        args.addAll(List.of("--json", localJson.toString()));
        CliRun local = CliRun.of(args.toArray(String[]::new)).assertOk();
        assertEquals(firstColumn(local.out()), firstColumn(r.out()));
        JsonNode localRun = CliSupport.JSON.readTree(Files.readString(localJson)).get("runs").get(0);
        List<String> localFields = new ArrayList<>();
        localRun.fieldNames().forEachRemaining(localFields::add);
        List<String> httpFields = new ArrayList<>();
        run.fieldNames().forEachRemaining(httpFields::add);
        assertEquals(localFields, httpFields);
        assertEquals(localRun.get("prompt_tokens"), run.get("prompt_tokens"), "the same token-id prompts");
    }

    /** The metric names of a bench table (its first column, header and description lines left out). */
    private static List<String> firstColumn(String table) {
        return table.lines().skip(2).filter(l -> !l.startsWith("failed")).map(l -> l.split("\\s{2,}")[0]).toList();
    }
}
