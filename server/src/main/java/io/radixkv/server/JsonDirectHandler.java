package io.radixkv.server;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.helidon.http.DirectHandler;
import io.helidon.http.HeaderNames;
import io.helidon.http.ServerResponseHeaders;
import io.helidon.http.Status;
import io.helidon.webserver.http.DirectHandlers;

/**
 * Answers what Helidon refuses before routing (a malformed request line or headers, bad chunked
 * framing, Transfer-Encoding with Content-Length, a body over the limit) in the same OpenAI error
 * shape as the API's own errors; the connection is closed after it. The message is Helidon's
 * where it marks it safe to show, never a stack trace.
 */
final class JsonDirectHandler implements DirectHandler {
    private final ObjectMapper json;
    private final long maxRequestBytes;

    JsonDirectHandler(ObjectMapper json, long maxRequestBytes) {
        this.json = json;
        this.maxRequestBytes = maxRequestBytes;
    }

    static DirectHandlers all(ObjectMapper json, long maxRequestBytes) {
        JsonDirectHandler h = new JsonDirectHandler(json, maxRequestBytes);
        DirectHandlers.Builder b = DirectHandlers.builder();
        for (EventType t : EventType.values()) {
            b.addHandler(t, h);
        }
        return b.build();
    }

    @Override
    public TransportResponse handle(TransportRequest request, EventType eventType, Status defaultStatus,
                                    ServerResponseHeaders responseHeaders, String message) {
        ApiException e = error(defaultStatus.code(), message);
        byte[] body;
        try {
            body = json.writeValueAsBytes(e.toJson(json));
        } catch (JsonProcessingException x) {
            throw new IllegalStateException(x);
        }
        responseHeaders.set(HeaderNames.CONTENT_TYPE, "application/json");
        return TransportResponse.builder()
                .status(Status.create(e.status()))
                .headers(responseHeaders)
                .keepAlive(false)
                .entity(body)
                .build();
    }

    private ApiException error(int status, String message) {
        String m = message == null || message.isBlank() ? null : message;
        return switch (status) {
            case 413 -> ApiException.tooLarge(maxRequestBytes);
            case 500 -> ApiException.internal("the server failed to handle the request");
            case 503 -> ApiException.unavailable(m == null ? "the server is overloaded" : m);
            default -> new ApiException(status, status >= 500 ? "internal_error" : "invalid_request_error", null,
                    m == null ? "malformed HTTP request" : m);
        };
    }
}
