package io.radixkv.server;

import static io.radixkv.server.RequestParser.kind;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A chat request's {@code tools}, {@code tool_choice} and {@code parallel_tool_calls}, validated
 * as vLLM validates them (400 naming the field).
 *
 * @param tools the tool definitions as the chat template gets them (vLLM's {@code model_dump}:
 *     {type, function: {name, description, parameters, ...}}, absent description and parameters
 *     as null); empty when the request has none
 * @param choice {@code none}, {@code auto}, {@code required} or {@code named}
 * @param function the function of a named choice, else null
 * @param parallel {@code parallel_tool_calls}: false keeps only the first call
 * @param definitions the request's {@code tools} as sent (for the constraint schema)
 */
record ToolRequest(List<Map<String, Object>> tools, Choice choice, String function, boolean parallel,
                   List<JsonNode> definitions) {
    /** vLLM's {@code tool_choice} values. */
    enum Choice { NONE, AUTO, REQUIRED, NAMED }

    static final ToolRequest NONE = new ToolRequest(List.of(), Choice.NONE, null, true, List.of());

    /** The body's tool fields; a request without {@code tools} is {@link #NONE}. */
    static ToolRequest parse(JsonNode body) {
        JsonNode t = body.get("tools");
        boolean parallel = RequestParser.bool(body, "parallel_tool_calls", true);
        JsonNode c = body.get("tool_choice");
        boolean hasChoice = c != null && !c.isNull();
        if (t == null || t.isNull()) {
            if (hasChoice && !(c.isTextual() && c.asText().equals("none"))) {
                throw ApiException.badRequest("tool_choice", "When using `tool_choice`, `tools` must be set.");
            }
            return NONE;
        }
        if (!t.isArray()) {
            throw ApiException.badRequest("tools", "'tools' must be an array, got " + kind(t));
        }
        List<Map<String, Object>> tools = new ArrayList<>();
        List<JsonNode> definitions = new ArrayList<>();
        List<String> names = new ArrayList<>();
        for (int i = 0; i < t.size(); i++) {
            tools.add(tool(t.get(i), "tools[" + i + "]"));
            definitions.add(t.get(i));
            names.add(t.get(i).get("function").get("name").asText());
        }
        if (!hasChoice) {
            return new ToolRequest(tools, tools.isEmpty() ? Choice.NONE : Choice.AUTO, null, parallel, definitions);
        }
        if (c.isTextual()) {
            Choice choice = switch (c.asText()) {
                case "none" -> Choice.NONE;
                case "auto" -> Choice.AUTO;
                case "required" -> tools.isEmpty() ? Choice.NONE : Choice.REQUIRED; // OpenAI: nothing to require
                default -> throw ApiException.badRequest("tool_choice", "Invalid value for `tool_choice`: "
                        + c.asText() + "! Only named tools, \"none\", \"auto\" or \"required\" are supported.");
            };
            return new ToolRequest(tools, choice, null, parallel, definitions);
        }
        String usage = " Correct usage: `{\"type\": \"function\", \"function\": {\"name\": \"my_function\"}}`";
        if (!c.isObject()) {
            throw ApiException.badRequest("tool_choice", "'tool_choice' must be \"none\", \"auto\", \"required\" or "
                    + "an object naming a function, got " + kind(c));
        }
        JsonNode f = c.get("function");
        if (f == null || !f.isObject()) {
            throw ApiException.badRequest("tool_choice.function", "Invalid value for `function` in `tool_choice`!"
                    + usage);
        }
        JsonNode name = f.get("name");
        if (name == null || !name.isTextual() || name.asText().isEmpty()) {
            throw ApiException.badRequest("tool_choice.function.name", "Expected a non-empty string `name` in "
                    + "`function` in `tool_choice`!" + usage);
        }
        if (!names.contains(name.asText())) {
            throw ApiException.badRequest("tool_choice.function.name", "The tool specified in `tool_choice` ('"
                    + name.asText() + "') does not match any of the specified `tools`");
        }
        return new ToolRequest(tools, Choice.NAMED, name.asText(), parallel, definitions);
    }

    /** One tool definition as vLLM dumps it for the template: declared fields first, then any others. */
    private static Map<String, Object> tool(JsonNode t, String param) {
        if (t == null || !t.isObject()) {
            throw ApiException.badRequest(param, "'" + param + "' must be an object {\"type\": \"function\", "
                    + "\"function\": {...}}");
        }
        JsonNode type = t.get("type");
        if (type != null && !(type.isTextual() && type.asText().equals("function"))) {
            throw ApiException.badRequest(param + ".type", "'" + param + ".type' must be \"function\", got " + type);
        }
        JsonNode f = t.get("function");
        if (f == null || !f.isObject()) {
            throw ApiException.badRequest(param + ".function", "'" + param + ".function' must be an object with "
                    + "'name', 'description' and 'parameters'");
        }
        JsonNode name = f.get("name");
        if (name == null || !name.isTextual() || name.asText().isEmpty()) {
            throw ApiException.badRequest(param + ".function.name", "'" + param
                    + ".function.name' must be a non-empty string");
        }
        JsonNode description = f.get("description");
        if (description != null && !description.isNull() && !description.isTextual()) {
            throw ApiException.badRequest(param + ".function.description", "'" + param
                    + ".function.description' must be a string, got " + kind(description));
        }
        JsonNode parameters = f.get("parameters");
        if (parameters != null && !parameters.isNull() && !parameters.isObject()) {
            throw ApiException.badRequest(param + ".function.parameters", "'" + param
                    + ".function.parameters' must be a JSON Schema object, got " + kind(parameters));
        }
        Map<String, Object> function = new LinkedHashMap<>();
        function.put("name", name.asText());
        function.put("description", description == null || description.isNull() ? null : description.asText());
        function.put("parameters", parameters == null || parameters.isNull() ? null : ChatPrompt.plain(parameters));
        extras(f, function);
        Map<String, Object> tool = new LinkedHashMap<>();
        tool.put("type", "function");
        tool.put("function", function);
        extras(t, tool);
        return tool;
    }

    private static void extras(JsonNode from, Map<String, Object> to) {
        for (Iterator<Map.Entry<String, JsonNode>> it = from.fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            to.putIfAbsent(e.getKey(), ChatPrompt.plain(e.getValue()));
        }
    }

    /** The tools the template renders: none for {@code tool_choice: none} when the server excludes them. */
    List<Map<String, Object>> rendered(boolean excludeWhenNone) {
        return tools.isEmpty() || choice == Choice.NONE && excludeWhenNone ? null : tools;
    }

    /**
     * The JSON schema vLLM constrains a {@code required} or named choice to
     * ({@code get_json_schema_from_tool}): the named function's parameters, or an array of at least
     * one {@code {"name": <one of the tools>, "parameters": <its schema>}} with the tools' {@code $defs}
     * gathered at the top. Null for the other choices and for a named function without parameters.
     */
    JsonNode schema() {
        JsonNodeFactory f = JsonNodeFactory.instance;
        if (choice == Choice.NAMED) {
            for (JsonNode d : definitions) {
                if (d.get("function").get("name").asText().equals(function)) {
                    JsonNode p = d.get("function").get("parameters");
                    return p == null || p.isNull() ? null : p;
                }
            }
            return null;
        }
        if (choice != Choice.REQUIRED) {
            return null;
        }
        ObjectNode schema = f.objectNode().put("type", "array").put("minItems", 1);
        if (!parallel) {
            schema.put("maxItems", 1); // parallel_tool_calls false: exactly one call
        }
        ArrayNode anyOf = schema.putObject("items").put("type", "object").putArray("anyOf");
        ObjectNode defs = f.objectNode();
        for (int i = 0; i < definitions.size(); i++) {
            JsonNode fn = definitions.get(i).get("function");
            JsonNode params = fn.get("parameters");
            ObjectNode p = params == null || params.isNull() || params.isEmpty()
                    ? f.objectNode().put("type", "object").set("properties", f.objectNode())
                    : ((ObjectNode) params).deepCopy();
            JsonNode localDefs = p.remove("$defs");
            if (localDefs != null && localDefs.isObject()) {
                for (Iterator<Map.Entry<String, JsonNode>> it = localDefs.fields(); it.hasNext(); ) {
                    Map.Entry<String, JsonNode> e = it.next();
                    JsonNode seen = defs.get(e.getKey());
                    if (seen != null && !seen.equals(e.getValue())) {
                        throw ApiException.badRequest("tools[" + i + "].function.parameters", "Tool definition '"
                                + e.getKey() + "' has multiple schemas, which is not supported.");
                    }
                    defs.set(e.getKey(), e.getValue());
                }
            }
            ObjectNode one = anyOf.addObject();
            ObjectNode props = one.putObject("properties");
            props.putObject("name").put("type", "string").putArray("enum").add(fn.get("name").asText());
            props.set("parameters", p);
            one.putArray("required").add("name").add("parameters");
        }
        if (!defs.isEmpty()) {
            schema.set("$defs", defs);
        }
        return schema;
    }
}
