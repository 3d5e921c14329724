package io.radixkv.cli.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.PipedInputStream;
import java.io.PipedOutputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** SSE framing, with the bytes arriving in chunks split at every awkward place. */
class SseReaderTest {
    /** An input stream that hands out its bytes in the given chunk sizes (as a network does). */
    private static final class Chunked extends InputStream {
        private final byte[] bytes;
        private final int[] sizes;
        private int pos;
        private int chunk;

        Chunked(byte[] bytes, int[] sizes) {
            this.bytes = bytes;
            this.sizes = sizes;
        }

        @Override
        public int read() {
            byte[] one = new byte[1];
            return read(one, 0, 1) < 0 ? -1 : one[0] & 0xff;
        }

        @Override
        public int read(byte[] b, int off, int len) {
            if (pos == bytes.length) {
                return -1;
            }
            int n = Math.min(Math.min(len, sizes[chunk++ % sizes.length]), bytes.length - pos);
            System.arraycopy(bytes, pos, b, off, n);
            pos += n;
            return n;
        }

        @Override
        public int available() {
            return 0; // as if every chunk were the last one received so far
        }
    }

    private static List<String> events(byte[] stream, int... sizes) throws IOException {
        List<String> out = new ArrayList<>();
        try (SseReader r = new SseReader(new InputStreamReader(new Chunked(stream, sizes), StandardCharsets.UTF_8))) {
            String e;
            while ((e = r.next()) != null) {
                out.add(e);
            }
        }
        return out;
    }

    // CRLF, CR and LF line ends; a comment; fields other than data; data without the space;
    // two data lines in one event; multi-byte UTF-8 (2, 3 and 4 bytes); an event with no data;
    // an unterminated last event (dropped, per the standard).
    private static final String STREAM = "\uFEFF: keep-alive\r\n\r\n"
            + "data: {\"text\":\"caf\u00e9\"}\r\n\r\n"
            + "event: message\rid: 7\rdata:{\"text\":\"\u20ac \ud83d\ude00\"}\r\r"
            + "data: line one\ndata: line two\n\n"
            + "retry: 100\n\n"
            + "data: [DONE]\n\n"
            + "data: cut off";

    private static final List<String> EXPECTED = List.of("{\"text\":\"caf\u00e9\"}",
            "{\"text\":\"\u20ac \ud83d\ude00\"}", "line one\nline two", "[DONE]");

    @Test
    void sameEventsWhateverTheChunkBoundaries() throws IOException {
        byte[] bytes = STREAM.getBytes(StandardCharsets.UTF_8);
        assertEquals(EXPECTED, events(bytes, bytes.length));
        for (int size = 1; size <= 16; size++) {
            assertEquals(EXPECTED, events(bytes, size), "chunks of " + size + " bytes");
        }
        SplittableRandom rnd = new SplittableRandom(1);
        for (int trial = 0; trial < 200; trial++) {
            int[] sizes = rnd.ints(64, 1, 12).toArray();
            assertEquals(EXPECTED, events(bytes, sizes), "random chunking, trial " + trial);
        }
    }

    @Test
    void everySplitPointOfAChunkBoundary() throws IOException {
        byte[] bytes = STREAM.getBytes(StandardCharsets.UTF_8);
        for (int cut = 1; cut < bytes.length; cut++) {
            assertEquals(EXPECTED, events(bytes, cut, bytes.length), "split at byte " + cut);
        }
    }

    @Test
    void emptyStream() throws IOException {
        assertEquals(List.of(), events(new byte[0], 1));
    }

    /** An event is handed out when its blank line arrives, before anything later was sent (TTFT depends on it). */
    @Test
    void eventIsDispatchedWithoutWaitingForMoreBytes() throws Exception {
        PipedOutputStream server = new PipedOutputStream();
        PipedInputStream client = new PipedInputStream(server, 1 << 16);
        try (SseReader r = new SseReader(new InputStreamReader(client, StandardCharsets.UTF_8))) {
            assertTimeoutPreemptively(Duration.ofSeconds(10), () -> {
                server.write("data: first\r\n".getBytes(StandardCharsets.UTF_8));
                server.write("\r\n".getBytes(StandardCharsets.UTF_8));
                server.flush();
                assertEquals("first", r.next());
                server.write("data: second\n\n".getBytes(StandardCharsets.UTF_8));
                server.flush();
                assertEquals("second", r.next());
                server.close();
                assertNull(r.next());
            });
        }
    }
}
