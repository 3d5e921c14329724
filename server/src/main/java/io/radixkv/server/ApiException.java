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

    ApiException(int status, String type, String param, String message) {
        super(message);
        this.status = status;
        this.type = type;
        this.param = param;
    }

    /** 400: malformed or out-of-range request; {@code param} names the field (may be null). */
    static ApiException badRequest(String param, String message) {
        return new ApiException(400, "invalid_request_error", param, message);
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
