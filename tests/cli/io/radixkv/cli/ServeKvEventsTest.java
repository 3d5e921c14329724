package io.radixkv.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.HttpURLConnection;
import java.net.ServerSocket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * {@code radixkv serve --kv-events}: the events of a completion decode in the independent Python
 * subscriber (tests/kvtier/kv_events_subscriber.py), which recomputes every block hash.
 */
class ServeKvEventsTest {

    private static int freePort() throws Exception {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    @Test
    void replayWithoutEventsIsAUsageError() {
        CliRun.of("serve", "--model", "tiny", "--kv-events-replay", "tcp://*:5558")
                .assertUsageError("--kv-events-replay needs --kv-events");
    }

    @Test
    void eventsFromServeDecodeInAnIndependentSubscriber() throws Exception {
        int pub = freePort();
        int replay = freePort();
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        List<String> cmd = new ArrayList<>(List.of(java, "--enable-native-access=io.radixkv,ai.djl.tokenizers",
                "--add-opens", "io.radixkv.text/io.radixkv.text=jinjava",
                "-Dradixkv.native.dir=" + System.getProperty("radixkv.native.dir", ""),
                "--module-path", System.getProperty("jdk.module.path"),
                "-cp", System.getProperty("java.class.path"),
                "--add-modules", "ALL-MODULE-PATH",
                "-m", "io.radixkv.cli/io.radixkv.cli.Main",
                "serve", "--model", "tiny", "--backend", "cpu", "--port", "0", "--pages", "64",
                "--max-seq-len", "512", "--kv-events", "tcp://*:" + pub, "--kv-events-replay", "tcp://*:" + replay,
                "--kv-hash-seed", "42"));
        Process p = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.DISCARD).start();
        Process py = null;
        try {
            BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
            URI base = null;
            Pattern listening = Pattern.compile("listening on (http://\\S+)");
            for (String line; base == null && (line = out.readLine()) != null; ) {
                Matcher m = listening.matcher(line);
                if (m.find()) {
                    base = URI.create(m.group(1));
                }
            }
            assertTrue(base != null, "serve printed its address");
            Path script = Path.of(System.getProperty("radixkv.root", "..")).resolve("tests/kvtier/kv_events_subscriber.py");
            py = new ProcessBuilder("/usr/bin/python3", script.toString(), "--pub", "tcp://127.0.0.1:" + pub,
                    "--replay", "tcp://127.0.0.1:" + replay, "--seed", "42", "--idle", "3")
                    .redirectError(ProcessBuilder.Redirect.INHERIT).start();
            BufferedReader sub = new BufferedReader(new InputStreamReader(py.getInputStream(), StandardCharsets.UTF_8));
            assertEquals("ready", sub.readLine());

            StringBuilder prompt = new StringBuilder("[");
            for (int i = 0; i < 40; i++) {
                prompt.append(i == 0 ? "" : ",").append(5 + i);
            }
            HttpURLConnection c = (HttpURLConnection) base.resolve("/v1/completions").toURL().openConnection();
            c.setRequestMethod("POST");
            c.setDoOutput(true);
            c.setRequestProperty("Content-Type", "application/json");
            try (OutputStream os = c.getOutputStream()) {
                os.write(("{\"model\":\"tiny\",\"prompt\":" + prompt + "],\"max_tokens\":4}").getBytes(StandardCharsets.UTF_8));
            }
            assertEquals(200, c.getResponseCode());
            JsonNode summary = CliSupport.JSON.readTree(sub.readLine());
            assertEquals("[]", summary.get("errors").toString(), summary.toString());
            assertEquals("[]", summary.get("mismatches").toString(), summary.toString());
            assertEquals("AllBlocksCleared", summary.get("first_event").asText());
            assertEquals(2, summary.get("stored").asInt(), "43 KV positions with pages of 16: two full pages");
            assertEquals(2, summary.get("verified").asInt());
            assertEquals(2, summary.get("live").size());
            // the publisher's counters are on /metrics beside the engine's
            HttpURLConnection m = (HttpURLConnection) base.resolve("/metrics").toURL().openConnection();
            assertEquals(200, m.getResponseCode());
            String metrics = new String(m.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            Matcher published = Pattern.compile("radixkv:kv_event_batches_published_total\\{[^}]*\\} (\\S+)")
                    .matcher(metrics);
            assertTrue(published.find(), metrics);
            assertTrue(Double.parseDouble(published.group(1)) >= 1, published.group());
            assertTrue(metrics.contains("radixkv:kv_events_dropped_total{model_name=\"tiny\"} 0.0"), metrics);
            assertTrue(metrics.contains("radixkv:kv_tier_pages_written_total{model_name=\"tiny\"} 0.0"), metrics);
        } finally {
            if (py != null) {
                py.destroyForcibly();
            }
            p.destroyForcibly();
        }
    }
}
