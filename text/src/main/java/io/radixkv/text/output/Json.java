package io.radixkv.text.output;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.radixkv.text.PyJson;
import java.util.Map;

/** Python's {@code json.loads} (one value, nothing after it) and vLLM's argument serialization. */
final class Json {
    private static final ObjectMapper MAPPER = new ObjectMapper()
            .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS);

    private Json() {}

    /** The value of {@code text}: maps (in key order), lists, strings, numbers, booleans, null. */
    static Object loads(String text) throws JsonProcessingException {
        return MAPPER.readValue(text, Object.class);
    }

    /** A call from a parsed object: {@code name} (a string) and the value of {@code argsKey}. */
    static ToolCall call(Object parsed, String argsKey) throws JsonProcessingException {
        if (!(parsed instanceof Map<?, ?> m) || !(m.get("name") instanceof String name) || !m.containsKey(argsKey)) {
            throw new JsonProcessingException("a call is an object with a string 'name' and '" + argsKey + "'") {
            };
        }
        return new ToolCall(name, PyJson.dumps(m.get(argsKey)));
    }
}
