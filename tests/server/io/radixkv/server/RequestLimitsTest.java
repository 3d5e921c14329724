package io.radixkv.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.ByteArrayOutputStream;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * What a request body may hold: strict UTF-8 (never replaced), one JSON value and nothing after
 * it, a bounded cache salt, bounded stop strings, no more prompts than the server can admit.
 * Each limit is a 400 naming the field and the limit.
 */
class RequestLimitsTest {
    private static ServerTestSupport t;

    @BeforeAll
    static void start() {
        t = ServerTestSupport.tinyPreset(256, 2, 1); // 3 prompts in the engine at most
    }

    @AfterAll
    static void stop() {
        t.close();
    }

    @AfterEach
    void idle() throws InterruptedException {
        t.assertPagesConserved();
    }

    private static HttpResponse<String> postBytes(byte[] body) throws Exception {
        HttpRequest r = HttpRequest.newBuilder(t.uri("/v1/completions")).timeout(Duration.ofSeconds(60))
                .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofByteArray(body)).build();
        return t.http.send(r, HttpResponse.BodyHandlers.ofString());
    }

    /** {@code prefix}, the raw bytes, then {@code suffix}: a body whose string holds exactly those bytes. */
    private static byte[] withBytes(String prefix, byte[] raw, String suffix) {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        b.writeBytes(prefix.getBytes(StandardCharsets.UTF_8));
        b.writeBytes(raw);
        b.writeBytes(suffix.getBytes(StandardCharsets.UTF_8));
        return b.toByteArray();
    }

    private static JsonNode error(HttpResponse<String> r, int status, String param) throws Exception {
        assertEquals(status, r.statusCode(), r.body());
        JsonNode e = ServerTestSupport.json(r).get("error");
        assertEquals(param, e.get("param").isNull() ? null : e.get("param").asText(), r.body());
        return e;
    }

    private static int cached(HttpResponse<String> r) throws Exception {
        assertEquals(200, r.statusCode(), r.body());
        return ServerTestSupport.json(r).get("usage").get("prompt_tokens_details").get("cached_tokens").asInt();
    }

    @Test
    void invalidUtf8IsRefusedNeverReplaced() throws Exception {
        String p = "{\"prompt\":[" + "3,".repeat(40) + "3],\"max_tokens\":1,\"temperature\":0,\"cache_salt\":\"";
        // two different salts that a lenient decoder turns into the same "\uFFFD\uFFFD"
        for (byte[] salt : new byte[][] {{(byte) 0xff, (byte) 0xfe}, {(byte) 0xfe, (byte) 0xff}}) {
            JsonNode e = error(postBytes(withBytes(p, salt, "\"}")), 400, null);
            assertTrue(e.get("message").asText().contains("not valid UTF-8"), e.toString());
        }
        // an encoded surrogate and an overlong '/' are not UTF-8 either
        error(postBytes(withBytes(p, new byte[] {(byte) 0xed, (byte) 0xa0, (byte) 0x80}, "\"}")), 400, null);
        error(postBytes(withBytes(p, new byte[] {(byte) 0xc0, (byte) 0xaf}, "\"}")), 400, null);
        // an unpaired surrogate escape has no UTF-8 form: refused, naming the field
        JsonNode e = error(t.post("/v1/completions", p + "\\udcff\"}"), 400, "cache_salt");
        assertTrue(e.get("message").asText().contains("unpaired surrogate"), e.toString());
        // a text prompt with a bad byte is refused the same way, before the model is consulted
        error(postBytes(withBytes("{\"prompt\":\"caf", new byte[] {(byte) 0xe9}, "\"}")), 400, null);
        // valid non-ASCII salts that differ only in bytes are different tenants
        assertEquals(0, cached(postBytes(withBytes(p, "\u00ff\u00fe".getBytes(StandardCharsets.UTF_8), "\"}"))));
        assertEquals(0, cached(postBytes(withBytes(p, "\u00fe\u00ff".getBytes(StandardCharsets.UTF_8), "\"}"))));
        assertTrue(cached(postBytes(withBytes(p, "\u00fe\u00ff".getBytes(StandardCharsets.UTF_8), "\"}"))) > 0,
                "the same salt still shares its cache");
    }

    @Test
    void cacheSaltIsBounded() throws Exception {
        String body = "{\"prompt\":[1,2],\"max_tokens\":1,\"cache_salt\":\"";
        int max = RequestParser.MAX_CACHE_SALT_BYTES;
        assertEquals(0, cached(t.post("/v1/completions", body + "s".repeat(max) + "\"}")));
        JsonNode e = error(t.post("/v1/completions", body + "s".repeat(max + 1) + "\"}"), 400, "cache_salt");
        assertTrue(e.get("message").asText().contains(Integer.toString(max)), e.toString());
        // counted in bytes: 129 two-byte characters are 258 bytes
        error(t.post("/v1/completions", body + "\u00e9".repeat(max / 2 + 1) + "\"}"), 400, "cache_salt");
    }

    @Test
    void stopStringsAreBounded() throws Exception {
        String many = "[" + "\"x\",".repeat(RequestParser.MAX_STOPS) + "\"x\"]";
        JsonNode e = error(t.post("/v1/completions", "{\"prompt\":[1],\"stop\":" + many + "}"), 400, "stop");
        assertTrue(e.get("message").asText().contains("at most " + RequestParser.MAX_STOPS), e.toString());
        String longStop = "\"" + "x".repeat(RequestParser.MAX_STOP_LENGTH + 1) + "\"";
        e = error(t.post("/v1/completions", "{\"prompt\":[1],\"stop\":" + longStop + "}"), 400, "stop");
        assertTrue(e.get("message").asText().contains(RequestParser.MAX_STOP_LENGTH + " characters"), e.toString());
    }

    @Test
    void moreThanTheServerCanEverAdmitIs400NotRetryLater() throws Exception {
        HttpResponse<String> r = t.post("/v1/completions", "{\"prompt\":[[1],[2],[3],[4]],\"max_tokens\":1}");
        JsonNode e = error(r, 400, "prompt");
        assertTrue(e.get("message").asText().contains("at most 3 at once"), e.toString());
        assertTrue(r.headers().firstValue("retry-after").isEmpty(), "a retry cannot help");
        // at the limit it runs
        assertEquals(200, t.post("/v1/completions", "{\"prompt\":[[1],[2],[3]],\"max_tokens\":1}").statusCode());
    }

    @Test
    void dataAfterTheJsonValueIsRefused() throws Exception {
        error(t.post("/v1/completions", "{\"prompt\":[1],\"max_tokens\":1} trailing"), 400, null);
        error(t.post("/v1/completions", "{\"prompt\":[1],\"max_tokens\":1}{\"prompt\":[2]}"), 400, null);
        error(t.post("/v1/completions", ""), 400, null);
        // whitespace after it is not data
        assertEquals(200, t.post("/v1/completions", "{\"prompt\":[1],\"max_tokens\":1} \r\n").statusCode());
    }
}
