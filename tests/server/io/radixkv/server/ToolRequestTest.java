package io.radixkv.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * {@code tools}, {@code tool_choice} and {@code parallel_tool_calls} validated as vLLM's
 * {@code ChatCompletionRequest} validates them (400 naming the field), tools dumped for the
 * template as vLLM dumps them, and the constraint schema of {@code required} / a named function
 * as vLLM's {@code get_json_schema_from_tool} builds it.
 */
class ToolRequestTest {
    private static final String WEATHER = "{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", "
            + "\"parameters\": {\"type\": \"object\", \"properties\": {\"loc\": {\"$ref\": \"#/$defs/Loc\"}}, "
            + "\"$defs\": {\"Loc\": {\"type\": \"string\"}}}}}";
    private static final String TIME = "{\"type\": \"function\", \"function\": {\"name\": \"get_time\", "
            + "\"description\": \"now\", \"strict\": true}}";

    private static JsonNode body(String json) throws Exception {
        return ServerTestSupport.JSON.readTree(json);
    }

    private static ToolRequest parse(String json) throws Exception {
        return ToolRequest.parse(body(json));
    }

    private static String param(String json) {
        return assertThrows(ApiException.class, () -> parse(json)).param();
    }

    @Test
    void choicesAndDefaults() throws Exception {
        assertEquals(ToolRequest.NONE, parse("{}"));
        assertEquals(ToolRequest.Choice.AUTO, parse("{\"tools\": [" + WEATHER + "]}").choice());
        assertEquals(ToolRequest.Choice.NONE, parse("{\"tools\": []}").choice());
        assertEquals(ToolRequest.Choice.NONE, parse("{\"tools\": [], \"tool_choice\": \"required\"}").choice());
        assertEquals(ToolRequest.Choice.NONE, parse("{\"tool_choice\": \"none\"}").choice());
        ToolRequest named = parse("{\"tools\": [" + WEATHER + ", " + TIME + "], \"parallel_tool_calls\": false, "
                + "\"tool_choice\": {\"type\": \"function\", \"function\": {\"name\": \"get_time\"}}}");
        assertEquals(ToolRequest.Choice.NAMED, named.choice());
        assertEquals("get_time", named.function());
        assertEquals(false, named.parallel());
    }

    @Test
    void badToolFieldsAre400sNamingTheField() {
        assertEquals("tool_choice", param("{\"tool_choice\": \"auto\"}"));
        assertEquals("tool_choice", param("{\"tools\": [" + WEATHER + "], \"tool_choice\": \"sometimes\"}"));
        assertEquals("tool_choice.function.name", param("{\"tools\": [" + WEATHER + "], \"tool_choice\": "
                + "{\"type\": \"function\", \"function\": {\"name\": \"get_time\"}}}"));
        assertEquals("tool_choice.function", param("{\"tools\": [" + WEATHER + "], \"tool_choice\": {\"type\": \"function\"}}"));
        assertEquals("tools", param("{\"tools\": {}}"));
        assertEquals("tools[0]", param("{\"tools\": [1]}"));
        assertEquals("tools[0].type", param("{\"tools\": [{\"type\": \"retrieval\", \"function\": {\"name\": \"f\"}}]}"));
        assertEquals("tools[1].function.name", param("{\"tools\": [" + WEATHER + ", {\"type\": \"function\", "
                + "\"function\": {\"description\": \"x\"}}]}"));
        assertEquals("tools[0].function.parameters", param("{\"tools\": [{\"type\": \"function\", \"function\": "
                + "{\"name\": \"f\", \"parameters\": \"object\"}}]}"));
        assertEquals("parallel_tool_calls", param("{\"tools\": [" + WEATHER + "], \"parallel_tool_calls\": \"no\"}"));
    }

    @Test
    void toolsAreDumpedAsVllmDumpsThem() throws Exception {
        List<Map<String, Object>> tools = parse("{\"tools\": [" + TIME + "]}").tools();
        Map<String, Object> function = new LinkedHashMap<>();
        function.put("name", "get_time");
        function.put("description", "now");
        function.put("parameters", null);
        function.put("strict", true);
        assertEquals(List.of(Map.of("type", "function", "function", function)), tools);
        assertEquals(List.of("name", "description", "parameters", "strict"),
                List.copyOf(((Map<?, ?>) tools.get(0).get("function")).keySet()));
        assertNull(parse("{\"tools\": [" + TIME + "], \"tool_choice\": \"none\"}").rendered(true));
        assertEquals(tools, parse("{\"tools\": [" + TIME + "], \"tool_choice\": \"none\"}").rendered(false));
    }

    @Test
    void constraintSchemasAreVllms() throws Exception {
        ToolRequest required = parse("{\"tools\": [" + WEATHER + ", " + TIME + "], \"tool_choice\": \"required\"}");
        JsonNode want = body("""
                {"type": "array", "minItems": 1, "items": {"type": "object", "anyOf": [
                  {"properties": {"name": {"type": "string", "enum": ["get_weather"]},
                                  "parameters": {"type": "object", "properties": {"loc": {"$ref": "#/$defs/Loc"}}}},
                   "required": ["name", "parameters"]},
                  {"properties": {"name": {"type": "string", "enum": ["get_time"]},
                                  "parameters": {"type": "object", "properties": {}}},
                   "required": ["name", "parameters"]}]},
                 "$defs": {"Loc": {"type": "string"}}}""");
        assertEquals(want, required.schema());
        ToolRequest named = parse("{\"tools\": [" + WEATHER + "], \"tool_choice\": "
                + "{\"type\": \"function\", \"function\": {\"name\": \"get_weather\"}}}");
        assertEquals(body(WEATHER).get("function").get("parameters"), named.schema());
        assertNull(parse("{\"tools\": [" + TIME + "], \"tool_choice\": "
                + "{\"type\": \"function\", \"function\": {\"name\": \"get_time\"}}}").schema());
        assertNull(parse("{\"tools\": [" + WEATHER + "]}").schema());
        assertEquals("tools[1].function.parameters", assertThrows(ApiException.class, () -> parse("{\"tools\": ["
                + WEATHER + ", " + WEATHER.replace("\"string\"}}", "\"integer\"}}") + "], \"tool_choice\": \"required\"}")
                .schema()).param());
    }
}
