package io.radixkv.cli.report;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class BenchReportTest {
    private static final long MS = 1_000_000;

    /** Two requests: tokens at +10,+12,+15 ms and +20,+21 ms after sending; 2 cached of 10 prompt tokens. */
    private static RunMetrics run(String pc, long scale) {
        List<RequestRecord> rs = List.of(
                new RequestRecord(0, 4, 0, 0, new long[] {10 * MS * scale, 12 * MS * scale, 15 * MS * scale}, 16 * MS * scale, false),
                new RequestRecord(1, 6, 2, 5 * MS, new long[] {5 * MS + 20 * MS * scale, 5 * MS + 21 * MS * scale},
                        5 * MS + 21 * MS * scale, false),
                new RequestRecord(2, 3, 0, 0, new long[0], 1 * MS, true));
        return RunMetrics.of(pc, rs, 7, 100, 0);
    }

    @Test
    void metricsByHand() {
        RunMetrics m = run("on", 1);
        assertEquals(3, m.requests());
        assertEquals(1, m.failed());
        assertEquals(10, m.promptTokens());
        assertEquals(2, m.cachedTokens());
        assertEquals(0.2, m.hitRate(), 1e-12);
        assertEquals(5, m.outputTokens());
        assertEquals(2, m.ttft().count());
        assertEquals(20.0, m.ttft().max(), 0.05);
        assertEquals(3, m.itl().count()); // gaps 2, 3, 1 ms
        assertEquals(2.0, m.itl().p50(), 0.01);
        assertEquals(3.0, m.itl().p99(), 0.01);
        assertEquals(0.026, m.durationSeconds(), 1e-9); // first send 0, last finish 26 ms
        assertEquals(5 / 0.026, m.outputTokPerS(), 1e-6);
        assertTrue(Double.isNaN(m.ttftByRequestMs()[2]));
    }

    @Test
    void tableAndJsonSideBySide(@TempDir Path dir) throws Exception {
        BenchReport report = new BenchReport("prefix_caching", "test", List.of(run("off", 4), run("on", 1)), 3.5);
        String table = report.table();
        assertTrue(table.contains("cache off") && table.contains("cache on") && table.contains("on/off"), table);
        assertTrue(table.contains("TTFT p50 (ms)"), table);
        assertTrue(table.contains("3.50x ideal"), table);
        JsonNode j = report.toJson(new ObjectMapper());
        assertEquals("prefix_caching", j.get("workload").asText());
        assertEquals(2, j.get("runs").size());
        JsonNode off = j.get("runs").get(0);
        assertEquals("off", off.get("prefix_cache").asText());
        for (String f : List.of("ttft_ms", "itl_ms", "e2e_ms")) {
            for (String p : List.of("p50", "p90", "p99")) {
                assertTrue(off.get(f).get(p).isNumber(), f + "." + p);
            }
        }
        for (String f : List.of("output_tok_s", "hit_rate", "requests", "failed")) {
            assertTrue(off.get(f).isNumber(), f);
        }
        assertEquals(0.25, j.get("ratio_on_off").get("ttft_p50").asDouble(), 0.01);
        Path png = dir.resolve("ttft.png");
        Charts.ttftByRequest(report, png);
        assertTrue(Files.size(png) > 100);
    }

    @Test
    void recordsRejectInconsistentTimes() {
        assertThrows(IllegalArgumentException.class, () -> new RequestRecord(0, 4, 5, 0, new long[] {1}, 1, false));
        assertThrows(IllegalArgumentException.class, () -> new RequestRecord(0, 4, 0, 10, new long[] {5}, 10, false));
        assertThrows(IllegalArgumentException.class, () -> new RequestRecord(0, 4, 0, 0, new long[] {5, 3}, 10, false));
        assertThrows(IllegalArgumentException.class, () -> new BenchReport("w", "d", List.of(), 1));
    }

    /** An HTTP run: cached tokens unknown for one request, so the hit rate is n/a; failures grouped by reason. */
    @Test
    void httpRunWithUnknownsAndFailures() {
        List<RequestRecord> rs = List.of(
                new RequestRecord(0, 4, 2, 0, new long[] {10 * MS, 20 * MS}, 5, 30 * MS, null),
                new RequestRecord(1, 4, -1, 0, new long[] {10 * MS}, 1, 30 * MS, null),
                RequestRecord.failed(2, 4, 0, MS, "HTTP 400: {\"message\":\n \"too long\"}"),
                RequestRecord.failed(3, 4, 0, MS, "HTTP 400: {\"message\": \"too long\"}"),
                RequestRecord.failed(4, 4, 0, MS, "HTTP 503: busy"));
        RunMetrics m = RunMetrics.of("server", "http://h:1/", rs, -1, -1, -1);
        assertEquals(-1, m.hitRate());
        assertEquals(-1, m.cachedTokens());
        assertEquals(-1, m.computedPromptTokens());
        assertEquals(6, m.outputTokens(), "the server's completion token counts, not the chunk counts");
        assertEquals(3, m.failed());
        assertEquals(List.of("HTTP 400: {\"message\": \"too long\"}", "HTTP 503: busy"), List.copyOf(m.errors().keySet()));
        assertEquals(2, m.errors().get("HTTP 400: {\"message\": \"too long\"}"));
        BenchReport report = new BenchReport("w", "d", List.of(m), Double.NaN);
        String table = report.table();
        assertTrue(table.lines().anyMatch(l -> l.startsWith("prefix hit rate") && l.endsWith("n/a")), table);
        assertTrue(table.lines().anyMatch(l -> l.startsWith("pages used") && l.endsWith("n/a")), table);
        assertTrue(table.contains("failed (server): 2 x HTTP 400"), table);
        JsonNode run = report.toJson(new ObjectMapper()).get("runs").get(0);
        assertTrue(run.get("hit_rate").isNull() && run.get("cached_tokens").isNull() && run.get("pages_used").isNull());
        assertEquals("http://h:1/", run.get("target").asText());
        assertEquals(3, run.get("errors").get(0).get("count").asInt() + run.get("errors").get(1).get("count").asInt());
        assertThrows(IllegalArgumentException.class, () -> new RequestRecord(0, 4, -2, 0, new long[0], 0, 0, null));
    }
}
