package io.radixkv.server;

import static io.radixkv.server.RequestParser.kind;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The tool-calling fields of a chat message, passed to the template as vLLM passes them:
 * an assistant's {@code tool_calls} as sent, with each {@code function.arguments} JSON string
 * parsed into an object (templates print it with {@code tojson} or iterate it; empty or absent
 * arguments become {@code {}}), a tool message's {@code tool_call_id}, a string {@code name},
 * and an assistant's {@code reasoning_content}.
 */
final class ChatToolMessages {
    private static final ObjectMapper JSON = new ObjectMapper()
            .enable(com.fasterxml.jackson.databind.DeserializationFeature.FAIL_ON_TRAILING_TOKENS);

    private ChatToolMessages() {
    }

    static void addToolFields(JsonNode m, String role, String param, Map<String, Object> out) {
        JsonNode name = m.get("name");
        if (name != null && name.isTextual()) {
            out.put("name", name.asText());
        }
        JsonNode calls = m.get("tool_calls");
        if (role.equals("assistant") && calls != null && !calls.isNull()) {
            out.put("tool_calls", toolCalls(calls, param + ".tool_calls"));
        }
        JsonNode id = m.get("tool_call_id");
        if (role.equals("tool") && id != null && !id.isNull()) {
            if (!id.isTextual()) {
                throw ApiException.badRequest(param + ".tool_call_id", "'" + param + ".tool_call_id' must be a string, got "
                        + kind(id));
            }
            out.put("tool_call_id", id.asText());
        }
        JsonNode reasoning = m.get("reasoning_content");
        if (role.equals("assistant") && reasoning != null && !reasoning.isNull()) {
            if (!reasoning.isTextual()) {
                throw ApiException.badRequest(param + ".reasoning_content", "'" + param
                        + ".reasoning_content' must be a string, got " + kind(reasoning));
            }
            out.put("reasoning_content", reasoning.asText());
        }
    }

    private static List<Object> toolCalls(JsonNode calls, String param) {
        if (!calls.isArray()) {
            throw ApiException.badRequest(param, "'" + param + "' must be an array, got " + kind(calls));
        }
        List<Object> out = new ArrayList<>();
        for (int i = 0; i < calls.size(); i++) {
            String p = param + "[" + i + "]";
            JsonNode c = calls.get(i);
            JsonNode f = c.isObject() ? c.get("function") : null;
            if (f == null || !f.isObject()) {
                throw ApiException.badRequest(p + ".function", "'" + p + ".function' must be an object with 'name' and "
                        + "'arguments'");
            }
            if (!f.path("name").isTextual()) {
                throw ApiException.badRequest(p + ".function.name", "'" + p + ".function.name' must be a string");
            }
            @SuppressWarnings("unchecked")
            Map<String, Object> call = (Map<String, Object>) ChatPrompt.plain(c);
            Map<String, Object> function = new LinkedHashMap<>(castMap(call.get("function")));
            function.put("arguments", arguments(f.get("arguments"), p + ".function.arguments"));
            call.put("function", function);
            out.add(call);
        }
        return out;
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> castMap(Object o) {
        return (Map<String, Object>) o;
    }

    /** vLLM's {@code _postprocess_messages}: a JSON string becomes its value; null or "" an empty object. */
    private static Object arguments(JsonNode a, String param) {
        if (a == null || a.isNull() || a.isTextual() && a.asText().isEmpty()) {
            return new LinkedHashMap<String, Object>();
        }
        if (a.isObject() || a.isArray()) {
            return ChatPrompt.plain(a);
        }
        if (!a.isTextual()) {
            throw ApiException.badRequest(param, "'" + param + "' must be a JSON string, got " + kind(a));
        }
        try {
            return ChatPrompt.plain(JSON.readTree(a.asText()));
        } catch (JsonProcessingException e) {
            throw ApiException.badRequest(param, "'" + param + "' is not valid JSON: " + e.getOriginalMessage());
        }
    }
}
