package io.radixkv.server;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

/**
 * A request that ends in an OpenAI-shaped error response:
 * {@code {"error": {"message", "type", "param", "code"}}} with the HTTP status.
 */
final class ApiException extends RuntimeException {
    private final int status;
    private final String type;
    private final String param;
    private final boolean closeConnection;

    ApiException(int status, String type, String param, String message) {
        this(status, type, param, message, false);
    }

    private ApiException(int status, String type, String param, String message, boolean closeConnection) {
        super(message);
        this.status = status;
        this.type = type;
        this.param = param;
        this.closeConnection = closeConnection;
    }

    /** 400: malformed or out-of-range request; {@code param} names the field (may be null). */
    static ApiException badRequest(String param, String message) {
        return new ApiException(400, "invalid_request_error", param, message);
    }

    /** 400 for a body whose framing is broken: the rest of the connection's bytes cannot be trusted. */
    static ApiException malformedBody(String message) {
        return new ApiException(400, "invalid_request_error", null, message, true);
    }

    /** 413: a body over the server's limit; the connection is closed rather than the rest read. */
    static ApiException tooLarge(long maxRequestBytes) {
        return new ApiException(413, "invalid_request_error", null, "the request body is larger than this server's "
                + "limit of " + maxRequestBytes + " bytes (--max-request-bytes)", true);
    }

    static ApiException notFound(String param, String message) {
        return new ApiException(404, "not_found_error", param, message);
    }

    static ApiException overloaded(String message) {
        return new ApiException(429, "rate_limit_exceeded", null, message);
    }

    static ApiException unavailable(String message) {
        return new ApiException(503, "service_unavailable", null, message);
    }

    static ApiException internal(String message) {
        return new ApiException(500, "internal_error", null, message);
    }

    /** Whether the response closes the connection (a body that was not, or could not be, read to its end). */
    boolean closeConnection() {
        return closeConnection;
    }

    /** Seconds a client should wait before retrying (429, 503), or 0 for errors a retry does not fix. */
    int retryAfterSeconds() {
        return status == 429 || status == 503 ? 1 : 0;
    }

    int status() {
        return status;
    }

    String type() {
        return type;
    }

    String param() {
        return param;
    }

    ObjectNode toJson(ObjectMapper json) {
        ObjectNode root = json.createObjectNode();
        ObjectNode err = root.putObject("error");
        err.put("message", getMessage());
        err.put("type", type);
        err.put("param", param);
        err.put("code", status);
        return root;
    }
}
