package io.radixkv.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.HttpURLConnection;
import java.net.URI;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code radixkv serve} as a separate JVM (as the launcher runs it): it answers, and SIGTERM
 * makes it shut down and exit.
 */
class ServeCommandTest {

    @Test
    void warmupTakesOnOrOff() {
        CliRun.of("serve", "--model", "tiny", "--warmup", "sometimes").assertUsageError("invalid value for --warmup: 'sometimes'");
    }

    @Test
    void metricsPrefixMustBeAPrometheusName() {
        CliRun.of("serve", "--model", "tiny", "--metrics-prefix", "vllm:x")
                .assertUsageError("metricsPrefix must be a Prometheus name ([a-zA-Z_][a-zA-Z0-9_]*), got vllm:x");
    }

    @Test
    void maxNMustBePositive() {
        CliRun.of("serve", "--model", "tiny", "--max-n", "0").assertUsageError("invalid value for --max-n: 0 (must be > 0)");
    }

    @Test
    void toolAndReasoningParsersMustBeKnown() {
        CliRun.of("serve", "--model", "tiny", "--tool-call-parser", "mistral")
                .assertUsageError("unknown tool call parser 'mistral' (hermes, llama3_json, pythonic)");
        CliRun.of("serve", "--model", "tiny", "--reasoning-parser", "deepseek_r1")
                .assertUsageError("unknown reasoning parser 'deepseek_r1' (qwen3)");
    }

    @Test
    void tokenizerDirectoryMustHoldTokenizerJson() {
        CliRun.of("serve", "--model", "tiny", "--tokenizer", "/nonexistent-tokenizer-dir")
                .assertUsageError("invalid value for --tokenizer: '/nonexistent-tokenizer-dir' (no tokenizer.json in it)");
    }

    /**
     * A .gguf whose vocabulary radixkv cannot rebuild fails before the engine starts, with the
     * file, the reason and the way out (--tokenizer DIR) on one line.
     */
    @Test
    void aGgufTokenizerThatCannotBeRebuiltIsRefused(@TempDir Path dir) throws IOException {
        Path file = Files.write(dir.resolve("bert.gguf"), ggufWithOneString("tokenizer.ggml.model", "bert"));
        CliRun r = CliRun.of("serve", "--model", file.toString(), "--backend", "cpu", "--port", "0", "--warmup", "off")
                .assertFailure(file + ": tokenizer.ggml.model is 'bert'");
        assertTrue(r.err().contains("--tokenizer DIR"), r.err());
    }

    /** A GGUF v3 header with no tensors and one string key (gguf.md's layout). */
    private static byte[] ggufWithOneString(String key, String value) {
        byte[] k = key.getBytes(StandardCharsets.UTF_8);
        byte[] v = value.getBytes(StandardCharsets.UTF_8);
        ByteBuffer b = ByteBuffer.allocate(4 + 4 + 8 + 8 + 8 + k.length + 4 + 8 + v.length).order(ByteOrder.LITTLE_ENDIAN);
        b.put("GGUF".getBytes(StandardCharsets.US_ASCII)).putInt(3).putLong(0).putLong(1);
        b.putLong(k.length).put(k).putInt(8).putLong(v.length).put(v);
        return b.array();
    }

    @Test
    void loraModulesAreNamedDirectoriesCheckedBeforeServing() {
        CliRun.of("serve", "--model", "tiny", "--lora-modules", "sql")
                .assertUsageError("invalid value for --lora-modules: 'sql' (expected NAME=DIR)");
        CliRun.of("serve", "--model", "tiny", "--lora-modules", "tiny=/x")
                .assertUsageError("invalid value for --lora-modules: 'tiny=/x' (the name tiny is already taken)");
        CliRun.of("serve", "--model", "tiny", "--max-loras", "0").assertUsageError("--max-loras");
        CliRun.of("serve", "--model", "tiny", "--warmup", "off", "--kv-cache-mb", "8", "--lora-modules",
                "sql=/nonexistent-adapter-dir").assertUsageError(
                "invalid value for --lora-modules: 'sql=/nonexistent-adapter-dir' (adapter sql: /nonexistent-adapter-dir is not a directory)");
    }

    @Test
    void connectionLimitsAreValidated() {
        CliRun.of("serve", "--model", "tiny", "--timeout-keep-alive", "0")
                .assertUsageError("invalid value for --timeout-keep-alive: 0.0 (must be > 0 and finite)");
        CliRun.of("serve", "--model", "tiny", "--read-timeout", "-1")
                .assertUsageError("invalid value for --read-timeout: -1.0 (must be > 0 and finite)");
        CliRun.of("serve", "--model", "tiny", "--write-timeout", "NaN")
                .assertUsageError("invalid value for --write-timeout: NaN (must be > 0 and finite)");
        CliRun.of("serve", "--model", "tiny", "--write-timeout", "0.0000001")
                .assertUsageError("invalid value for --write-timeout: 1.0E-7 (must be at least 0.001)");
        CliRun.of("serve", "--model", "tiny", "--max-request-bytes", "0")
                .assertUsageError("invalid value for --max-request-bytes: 0 (must be > 0)");
    }

    @Test
    void serveAnswersAndExitsOnSigterm() throws Exception {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        List<String> cmd = new ArrayList<>(List.of(java, "--enable-native-access=io.radixkv,ai.djl.tokenizers",
                "-Dradixkv.native.dir=" + System.getProperty("radixkv.native.dir", ""),
                "--module-path", System.getProperty("jdk.module.path"),
                "-cp", System.getProperty("java.class.path"),
                "-m", "io.radixkv.cli/io.radixkv.cli.Main",
                "serve", "--model", "tiny", "--backend", "cpu", "--port", "0", "--pages", "64",
                "--max-seq-len", "512", "--shutdown-grace", "120", "--timeout-keep-alive", "0.5",
                "--max-request-bytes", "4096", "--metrics-prefix", "vllm"));
        Process p = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.DISCARD).start();
        try {
            BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
            URI base = null;
            Pattern listening = Pattern.compile("listening on (http://\\S+)");
            StringBuilder before = new StringBuilder();
            for (String line; base == null && (line = out.readLine()) != null; ) {
                before.append(line).append('\n');
                Matcher m = listening.matcher(line);
                if (m.find()) {
                    base = URI.create(m.group(1));
                }
            }
            assertTrue(base != null, "serve printed its address");
            // the warm-up runs before the port opens (--warmup on by default)
            assertTrue(before.toString().contains("radixkv serve: warm-up: 2 requests, 64 prompt tokens, 16 generated in "),
                    before.toString());

            HttpURLConnection health = (HttpURLConnection) base.resolve("/health").toURL().openConnection();
            assertEquals(200, health.getResponseCode());
            // --metrics-prefix vllm: every series scrapes under vLLM's names
            HttpURLConnection metrics = (HttpURLConnection) base.resolve("/metrics").toURL().openConnection();
            String scrape = new String(metrics.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            assertTrue(scrape.contains("vllm:kv_cache_usage_perc{") && !scrape.contains("radixkv:"), scrape);

            HttpURLConnection c = (HttpURLConnection) base.resolve("/v1/completions").toURL().openConnection();
            c.setRequestMethod("POST");
            c.setDoOutput(true);
            c.setRequestProperty("Content-Type", "application/json");
            try (OutputStream os = c.getOutputStream()) {
                os.write("{\"model\":\"tiny\",\"prompt\":[1,2,3],\"max_tokens\":4}".getBytes(StandardCharsets.UTF_8));
            }
            assertEquals(200, c.getResponseCode());
            JsonNode j = CliSupport.JSON.readTree(c.getInputStream());
            // --max-request-bytes reaches the server: a larger Content-Length is refused before its body is sent
            try (java.net.Socket raw = new java.net.Socket(base.getHost(), base.getPort())) {
                raw.setSoTimeout(20_000);
                raw.getOutputStream().write(("POST /v1/completions HTTP/1.1\r\nHost: localhost\r\n"
                        + "Content-Type: application/json\r\nContent-Length: 5000\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
                String status = new BufferedReader(new InputStreamReader(raw.getInputStream(), StandardCharsets.US_ASCII))
                        .readLine();
                assertTrue(status.startsWith("HTTP/1.1 413 "), status);
            }
            assertEquals(4, j.get("usage").get("completion_tokens").asInt());

            // a stream running when SIGTERM comes finishes within the grace period
            HttpURLConnection s = (HttpURLConnection) base.resolve("/v1/completions").toURL().openConnection();
            s.setRequestMethod("POST");
            s.setDoOutput(true);
            s.setRequestProperty("Content-Type", "application/json");
            try (OutputStream os = s.getOutputStream()) {
                os.write("{\"prompt\":[1,2,3],\"max_tokens\":40,\"stream\":true}".getBytes(StandardCharsets.UTF_8));
            }
            assertEquals(200, s.getResponseCode());
            BufferedReader events = new BufferedReader(new InputStreamReader(s.getInputStream(), StandardCharsets.UTF_8));
            assertTrue(events.readLine().startsWith("data: {"));
            p.destroy(); // SIGTERM
            StringBuilder rest = new StringBuilder();
            for (String line; (line = events.readLine()) != null; ) {
                rest.append(line).append('\n');
            }
            assertTrue(rest.toString().contains("\"finish_reason\":\"length\"") && rest.toString().endsWith("data: [DONE]\n\n"),
                    "the running stream completed: " + rest.substring(Math.max(0, rest.length() - 300)));
            assertTrue(p.waitFor(60, TimeUnit.SECONDS), "serve exits after SIGTERM");
            assertEquals(143, p.exitValue(), "terminated by SIGTERM after the shutdown hook ran");
        } finally {
            p.destroyForcibly();
        }
    }
}
