package io.radixkv.cli.http;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * How a streamed completion becomes TTFT, inter-token times, token and cached-token counts, on
 * chunks in vLLM's format ({@link VllmChunks}).
 */
class CompletionStreamTest {
    private static CompletionStream.Result feed(List<String> events) {
        CompletionStream s = new CompletionStream(100);
        long t = 100;
        for (String e : events) {
            t += 10;
            if (s.accept(e, t)) {
                break;
            }
        }
        return s.result(t + 1000);
    }

    @Test
    void vllmStream() {
        CompletionStream.Result r = feed(List.of(VllmChunks.token(" The", null), VllmChunks.token(" capital", null), VllmChunks.token("", null),
                VllmChunks.token(" is", "length"), VllmChunks.usage(1100, 4, 1088), "[DONE]"));
        assertTrue(r.ok(), r.error());
        assertArrayEquals(new long[] {110, 120, 130, 140}, r.eventNanos(), "an empty-text chunk is still a token");
        assertEquals(4, r.completionTokens());
        assertEquals(1100, r.promptTokens());
        assertEquals(1088, r.cachedTokens());
        assertEquals("length", r.finishReason());
        assertEquals(160, r.endNanos(), "[DONE] ends the request");
    }

    @Test
    void finishOnlyChunkIsNotAToken() {
        CompletionStream.Result r = feed(List.of(VllmChunks.token("a", null), VllmChunks.token("b", null), VllmChunks.token("", "stop"),
                VllmChunks.usage(3, 2, null), "[DONE]"));
        assertArrayEquals(new long[] {110, 120}, r.eventNanos());
        assertEquals("stop", r.finishReason());
        assertEquals(-1, r.cachedTokens(), "not reported");
    }

    @Test
    void withoutUsageTheCountIsUnknown() {
        CompletionStream.Result r = feed(List.of(VllmChunks.token("a", null), VllmChunks.token("b", "length"), "[DONE]"));
        assertTrue(r.ok());
        assertEquals(-1, r.completionTokens());
        assertEquals(2, r.eventNanos().length);
    }

    @Test
    void failures() {
        CompletionStream.Result noDone = feed(List.of(VllmChunks.token("a", null)));
        assertFalse(noDone.ok());
        assertTrue(noDone.error().contains("[DONE]"), noDone.error());
        CompletionStream.Result err = feed(List.of(VllmChunks.token("a", null),
                "{\"error\":{\"message\":\"engine fault\",\"type\":\"InternalServerError\",\"code\":500}}"));
        assertTrue(err.error().contains("engine fault"), err.error());
        CompletionStream.Result vllmErr = feed(List.of(
                "{\"object\":\"error\",\"message\":\"boom\",\"type\":\"BadRequestError\",\"param\":null,\"code\":400}"));
        assertTrue(vllmErr.error().contains("boom"), vllmErr.error());
        CompletionStream.Result malformed = feed(List.of(VllmChunks.token("a", null), "{\"choices\":[", "[DONE]"));
        assertTrue(malformed.error().startsWith("malformed stream chunk"), malformed.error());
        CompletionStream.Result empty = feed(List.of(VllmChunks.usage(3, 0, 0), "[DONE]"));
        assertTrue(empty.error().contains("no token"), empty.error());
        assertNull(feed(List.of(VllmChunks.token("x", "length"), "[DONE]")).error());
    }
}
