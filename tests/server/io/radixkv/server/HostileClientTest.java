package io.radixkv.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.helidon.common.socket.SocketOptions;
import io.radixkv.engine.EngineConfig;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.Test;

/**
 * Clients that stall, hang up, or send broken HTTP, on a plain socket: none of them holds an
 * admission slot or a KV page past its timeout, and each gets a JSON answer or a closed
 * connection, never a hang. The server runs with 300 ms timeouts and small socket buffers, so
 * that a client that stops reading blocks the server's writes after a few kilobytes.
 */
class HostileClientTest {
    private static final Duration TIMEOUT = Duration.ofMillis(300);
    private static final HttpLimits SHORT = new HttpLimits(TIMEOUT, TIMEOUT, TIMEOUT, 64 << 10);
    /** Comfortably past a 300 ms timeout and the watchdog's tick; a server without the timeout never gets there. */
    private static final Duration CLOSED_WITHIN = Duration.ofSeconds(5);

    private static ServerTestSupport server(int maxRunning, int maxWaiting) {
        EngineConfig ec = EngineConfig.builder().model("tiny").backend("cpu").pageSize(16).numPages(256)
                .maxRunning(maxRunning).maxBatchTokens(256).maxSeqLen(1024).build();
        return new ServerTestSupport(ec, null, ServerConfig.local("tiny").withMaxWaiting(maxWaiting).withLimits(SHORT),
                b -> b.connectionOptions(SocketOptions.builder().socketSendBufferSize(4096).build()));
    }

    private static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    // The broken requests below end where the server stops reading: bytes it never reads would make
    // its close a reset, which can discard the answer before the client reads it.

    private static JsonNode assertJsonError(RawHttp.Response r, int status) throws Exception {
        assertEquals(status, r.status(), r.text());
        assertTrue(String.valueOf(r.header("content-type")).startsWith("application/json"), r.headers().toString());
        JsonNode e = ServerTestSupport.JSON.readTree(r.body()).get("error");
        assertTrue(e != null && e.get("message").isTextual(), r.text());
        assertEquals(status, e.get("code").asInt());
        assertFalse(r.text().contains("\tat ") || r.text().contains("Exception"), "no stack trace: " + r.text());
        return e;
    }

    private static void await(BooleanSupplier condition, String what) throws InterruptedException {
        long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
        while (!condition.getAsBoolean()) {
            assertTrue(System.nanoTime() < deadline, "timed out waiting until " + what);
            Thread.sleep(10);
        }
    }

    @Test
    void clientThatStopsReadingIsCutOffAndItsSlotFreed() throws Exception {
        try (ServerTestSupport t = server(1, 0)) {
            long before = ServerTestSupport.accessLines(l -> true).size();
            try (RawHttp stalled = RawHttp.connect(t.server.baseUri(), 4096)) {
                stalled.post("/v1/completions", "HTTP/1.1", "", utf8("{\"prompt\":[1,2,3,4],\"max_tokens\":1000,"
                        + "\"temperature\":0,\"stream\":true}"));
                // it never reads: its stream fills the socket buffers and the write timeout closes it,
                // which frees the only slot: a new request is admitted again
                long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
                int status;
                do {
                    status = t.post("/v1/completions", "{\"prompt\":[5,6],\"max_tokens\":2}").statusCode();
                } while (status == 429 && System.nanoTime() < deadline);
                assertEquals(200, status, "the stalled client's slot was freed");
                assertTrue(stalled.closedWithin(CLOSED_WITHIN), "the server closed the stalled connection");
            }
            List<String> cut = ServerTestSupport.accessLines(l -> l.contains("reason=write_timeout"));
            assertTrue(cut.size() == 1 && cut.get(0).contains(" status=499 "), cut.toString());
            assertTrue(ServerTestSupport.accessLines(l -> true).size() > before);
            t.assertPagesConserved();
        }
    }

    @Test
    void nonStreamingRequestIsCancelledWhenItsClientHangsUp() throws Exception {
        try (ServerTestSupport t = server(2, 2)) {
            // 5 ms a token through the engine's test seam: 900 tokens would take 4.5 s
            t.server.injectTokenFault(tok -> {
                LockSupport.parkNanos(5_000_000L);
                return false;
            });
            long decodedBefore = t.engine.snapshot().decodeTokens();
            try (RawHttp c = RawHttp.connect(t.server.baseUri())) {
                c.post("/v1/completions", "HTTP/1.1", "", utf8("{\"prompt\":[9,8,7],\"max_tokens\":900,"
                        + "\"temperature\":0}"));
                await(() -> t.engine.snapshot().decodeTokens() > decodedBefore, "the request is decoding");
            } // hangs up before the answer
            t.assertPagesConserved();
            long decoded = t.engine.snapshot().decodeTokens() - decodedBefore;
            // the first token comes from prefill: a request run to its end decodes 899
            assertTrue(decoded < 800, "cancelled when the client left, not at completion: " + decoded + " decoded");
            List<String> lines = ServerTestSupport.accessLines(l -> l.contains("reason=client_closed"));
            assertTrue(!lines.isEmpty() && lines.get(0).contains(" status=499 "), lines.toString());
        }
    }

    @Test
    void oversizedBodyIs413BeforeItIsRead() throws Exception {
        try (ServerTestSupport t = server(2, 2)) {
            try (RawHttp c = RawHttp.connect(t.server.baseUri())) {
                // the headers alone: the server answers without waiting for 100 KB it will not read
                c.send("POST /v1/completions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                        + "Content-Length: 100000\r\n\r\n");
                JsonNode e = assertJsonError(c.read(), 413);
                assertTrue(e.get("message").asText().contains("65536"), e.toString());
                assertTrue(c.closedWithin(CLOSED_WITHIN));
            }
            try (RawHttp c = RawHttp.connect(t.server.baseUri())) {
                String chunk = "[" + "1,".repeat(20000) + "1]";
                c.send("POST /v1/completions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                        + "Transfer-Encoding: chunked\r\n\r\n");
                c.send(Integer.toHexString(chunk.length()) + "\r\n" + chunk + "\r\n");
                // the size line that passes the limit is enough: the server answers before its bytes come
                c.send(Integer.toHexString(chunk.length()) + "\r\n");
                assertJsonError(c.read(), 413);
                assertTrue(c.closedWithin(CLOSED_WITHIN));
            }
            t.assertPagesConserved();
        }
    }

    @Test
    void malformedChunkedBodiesGetJson400AndAClosedConnection() throws Exception {
        try (ServerTestSupport t = server(2, 2)) {
            for (String size : List.of("zz", "-1", "ffffffffffffffff")) {
                try (RawHttp c = RawHttp.connect(t.server.baseUri())) {
                    c.send("POST /v1/completions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                            + "Transfer-Encoding: chunked\r\n\r\n" + size + "\r\n");
                    assertJsonError(c.read(), 400);
                    assertTrue(c.closedWithin(CLOSED_WITHIN), "closed after chunk size " + size);
                }
            }
            try (RawHttp c = RawHttp.connect(t.server.baseUri())) {
                c.send("POST /v1/completions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                        + "Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n");
                assertJsonError(c.read(), 400);
                assertTrue(c.closedWithin(CLOSED_WITHIN), "closed after Transfer-Encoding with Content-Length");
            }
            t.assertPagesConserved();
        }
    }

    @Test
    void stalledRequestsAndIdleConnectionsAreClosed() throws Exception {
        try (ServerTestSupport t = server(2, 2)) {
            String head = "POST /v1/completions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n";
            List<String> stalls = List.of(
                    "POST /v1/completions HTT",                                   // half a request line
                    head,                                                         // half the headers
                    head + "Content-Length: 100\r\n\r\n{\"prompt\":",             // a short body
                    head + "Transfer-Encoding: chunked\r\n\r\n5\r\n{\"pro\r\n",    // an unfinished chunked body
                    "");                                                          // nothing at all
            for (String stall : stalls) {
                try (RawHttp c = RawHttp.connect(t.server.baseUri())) {
                    c.send(stall);
                    long t0 = System.nanoTime();
                    assertTrue(c.closedWithin(CLOSED_WITHIN), "closed: " + stall);
                    assertTrue(System.nanoTime() - t0 >= TIMEOUT.toNanos() / 2, "closed by the timeout: " + stall);
                }
            }
            // an idle keep-alive connection after a response
            try (RawHttp c = RawHttp.connect(t.server.baseUri())) {
                c.post("/v1/completions", "HTTP/1.1", "", utf8("{\"prompt\":[1,2],\"max_tokens\":1}"));
                assertEquals(200, c.read().status());
                assertTrue(c.closedWithin(CLOSED_WITHIN), "idle past the keep-alive timeout");
            }
            await(() -> t.server.openConnections() == 0, "no connection is left open");
            t.assertPagesConserved();
        }
    }

    @Test
    void http10IsServedOnceAndClosed() throws Exception {
        try (ServerTestSupport t = server(2, 2)) {
            try (RawHttp c = RawHttp.connect(t.server.baseUri())) {
                c.post("/v1/completions", "HTTP/1.0", "", utf8("{\"prompt\":[1,2,3],\"max_tokens\":2}"));
                RawHttp.Response r = c.read();
                assertEquals(200, r.status(), r.text());
                assertEquals(2, ServerTestSupport.JSON.readTree(r.body()).get("usage").get("completion_tokens").asInt());
                assertTrue(c.closedWithin(CLOSED_WITHIN), "no keep-alive for HTTP/1.0");
            }
            try (RawHttp c = RawHttp.connect(t.server.baseUri())) {
                c.send("GET /health HTTP/1.0\r\nHost: localhost\r\n\r\n");
                assertEquals(200, c.read().status());
            }
            t.assertPagesConserved();
        }
    }

    @Test
    void connectionCloseIsHonoured() throws Exception {
        try (ServerTestSupport t = server(2, 2)) {
            try (RawHttp c = RawHttp.connect(t.server.baseUri())) {
                byte[] body = utf8("{\"prompt\":[1,2,3],\"max_tokens\":1}");
                c.post("/v1/completions", "HTTP/1.1", "Connection: close\r\n", body);
                RawHttp.Response r = c.read();
                assertEquals(200, r.status(), r.text());
                assertEquals("close", r.header("connection"));
                assertTrue(c.closedWithin(CLOSED_WITHIN), "closed after the response");
            }
            t.assertPagesConserved();
        }
    }

    @Test
    void binaryRequestLineGetsJson400WithoutStackTrace() throws Exception {
        try (ServerTestSupport t = server(2, 2)) {
            // the start of a TLS ClientHello on the plain port
            byte[] hello = {0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, (byte) 0xfc, 0x03, 0x03, (byte) 0x9a, 0x0d,
                (byte) 0xff, 0x20, 0x0a, 0x0d, 0x0a};
            try (RawHttp c = RawHttp.connect(t.server.baseUri())) {
                c.send(hello);
                RawHttp.Response r = c.read();
                assertTrue(r.status() == 400, r.status() + " " + r.text());
                assertJsonError(r, 400);
                assertTrue(c.closedWithin(CLOSED_WITHIN));
            }
            t.assertPagesConserved();
        }
    }
}
