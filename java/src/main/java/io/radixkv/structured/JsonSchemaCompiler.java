package io.radixkv.structured;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Compiles a JSON Schema (the subset of OpenAI's strict mode) to a {@link ByteRegex} of the
 * JSON texts it generates. Every keyword is either honoured or refused with a
 * {@link ConstraintException} naming it; annotations ({@code title}, {@code description},
 * {@code default}, ...) are read past.
 *
 * <p>Objects: the declared {@code properties} in schema order, those in {@code required}
 * always, the others optionally; no other keys, whatever {@code additionalProperties} says
 * (as xgrammar's strict mode), except that an object without {@code properties} and with an
 * {@code additionalProperties} schema is a map of any keys to that schema. Recursion through
 * {@code $ref} is expanded at most {@value #MAX_REF_DEPTH} times along a path; deeper, the
 * recursive branch matches nothing, so the generator must close the structure.
 */
final class JsonSchemaCompiler {
    static final int MAX_REF_DEPTH = 4;
    private static final Set<String> ANNOTATIONS = Set.of("title", "description", "$schema", "$id", "$comment",
            "default", "examples", "deprecated", "readOnly", "writeOnly", "$defs", "definitions");
    private static final Set<String> STRUCTURAL = Set.of("type", "enum", "const", "anyOf", "$ref");
    private static final Set<String> STRING_KEYWORDS = Set.of("minLength", "maxLength", "pattern", "format");
    private static final Set<String> NUMBER_KEYWORDS = Set.of("minimum", "maximum", "exclusiveMinimum",
            "exclusiveMaximum");
    private static final Set<String> OBJECT_KEYWORDS = Set.of("properties", "required", "additionalProperties");
    private static final Set<String> ARRAY_KEYWORDS = Set.of("items", "minItems", "maxItems");
    private static final List<String> TYPES = List.of("object", "array", "string", "integer", "number", "boolean",
            "null");

    private final JsonGrammar json;
    private final ByteRegex rx;
    private final JsonNode root;
    private final Map<String, Integer> refDepth = new HashMap<>();

    private JsonSchemaCompiler(JsonGrammar json, JsonNode root) {
        this.json = json;
        this.rx = json.rx;
        this.root = root;
    }

    /** The texts {@code schema} generates; refused when it matches nothing or uses an unsupported keyword. */
    static ByteRegex.Node compile(JsonGrammar json, JsonNode schema) {
        if (schema == null || !(schema.isObject() || schema.isBoolean())) {
            throw new ConstraintException("schema", "a JSON schema must be an object or a boolean");
        }
        ByteRegex.Node n = new JsonSchemaCompiler(json, schema).schema(schema, "#");
        if (n == json.rx.none) {
            throw new ConstraintException("schema", "the schema matches no JSON value");
        }
        return n;
    }

    private ConstraintException refuse(String keyword, String path, String why) {
        return new ConstraintException(keyword, "JSON schema keyword '" + keyword + "' at " + path + ": " + why);
    }

    private ByteRegex.Node schema(JsonNode s, String path) {
        if (s.isBoolean()) {
            return s.asBoolean() ? json.value(JsonGrammar.ANY_DEPTH) : rx.none;
        }
        if (!s.isObject()) {
            throw refuse("schema", path, "a schema must be an object or a boolean, got " + s.getNodeType());
        }
        Set<String> keys = new LinkedHashSet<>();
        for (Iterator<String> it = s.fieldNames(); it.hasNext(); ) {
            String k = it.next();
            if (ANNOTATIONS.contains(k)) {
                continue;
            }
            if (!STRUCTURAL.contains(k) && !STRING_KEYWORDS.contains(k) && !NUMBER_KEYWORDS.contains(k)
                    && !OBJECT_KEYWORDS.contains(k) && !ARRAY_KEYWORDS.contains(k)) {
                throw refuse(k, path, "not supported");
            }
            keys.add(k);
        }
        if (keys.contains("$ref")) {
            only(keys, Set.of("$ref"), "$ref", path);
            return ref(s.get("$ref"), path);
        }
        if (keys.contains("anyOf")) {
            only(keys, Set.of("anyOf", "type"), "anyOf", path);
            JsonNode options = s.get("anyOf");
            if (!options.isArray() || options.isEmpty()) {
                throw refuse("anyOf", path, "must be a non-empty array of schemas");
            }
            List<ByteRegex.Node> alts = new ArrayList<>();
            for (int i = 0; i < options.size(); i++) {
                alts.add(schema(withType(options.get(i), s.get("type"), path + "/anyOf/" + i), path + "/anyOf/" + i));
            }
            return rx.alt(alts);
        }
        List<String> types = types(s, path);
        if (keys.contains("enum") || keys.contains("const")) {
            only(keys, Set.of("enum", "const", "type"), keys.contains("enum") ? "enum" : "const", path);
            List<ByteRegex.Node> alts = new ArrayList<>();
            if (keys.contains("const")) {
                if (keys.contains("enum")) {
                    throw refuse("const", path, "together with enum is not supported");
                }
                addIfTyped(alts, s.get("const"), types);
            } else {
                JsonNode values = s.get("enum");
                if (!values.isArray()) {
                    throw refuse("enum", path, "must be an array");
                }
                for (JsonNode v : values) {
                    addIfTyped(alts, v, types);
                }
            }
            return rx.alt(alts);
        }
        if (!keys.contains("type")) {
            // no type: the keywords present tell which kind of value is meant
            types = new ArrayList<>();
            if (keys.stream().anyMatch(OBJECT_KEYWORDS::contains)) {
                types.add("object");
            }
            if (keys.stream().anyMatch(ARRAY_KEYWORDS::contains)) {
                types.add("array");
            }
            if (keys.stream().anyMatch(STRING_KEYWORDS::contains)) {
                types.add("string");
            }
            if (keys.stream().anyMatch(NUMBER_KEYWORDS::contains)) {
                types.add("number");
            }
            if (types.isEmpty()) {
                return json.value(JsonGrammar.ANY_DEPTH);
            }
        }
        List<ByteRegex.Node> alts = new ArrayList<>();
        for (String t : types) {
            alts.add(switch (t) {
                case "object" -> object(s, path);
                case "array" -> array(s, path);
                case "string" -> StringSchemas.string(json, s, path);
                case "integer" -> NumberSchemas.integer(json, s, path);
                case "number" -> NumberSchemas.number(json, s, path);
                case "boolean" -> rx.alt(rx.literal("true"), rx.literal("false"));
                default -> rx.literal("null");
            });
        }
        return rx.alt(alts);
    }

    /**
     * {@code option} of an {@code anyOf} whose schema also gives {@code type}: the same language with
     * the type in the option ({@code {"type": T, "anyOf": [A, B]}} is {@code anyOf: [A ∧ T, B ∧ T]}).
     * An option with a type of its own must give the same one.
     */
    private JsonNode withType(JsonNode option, JsonNode type, String path) {
        if (type == null) {
            return option;
        }
        if (option.isBoolean()) {
            return option.asBoolean() ? JsonNodeFactory.instance.objectNode().set("type", type) : option;
        }
        if (!option.isObject()) {
            return option; // refused where it is compiled
        }
        JsonNode own = option.get("type");
        if (own != null && !own.equals(type)) {
            throw refuse("type", path, "differs from the 'type' beside 'anyOf' (" + type + ")");
        }
        return own != null ? option : ((ObjectNode) option.deepCopy()).set("type", type);
    }

    private void only(Set<String> keys, Set<String> allowed, String keyword, String path) {
        for (String k : keys) {
            if (!allowed.contains(k)) {
                throw refuse(k, path, "beside '" + keyword + "' is not supported");
            }
        }
    }

    private List<String> types(JsonNode s, String path) {
        JsonNode t = s.get("type");
        if (t == null) {
            return TYPES;
        }
        List<String> out = new ArrayList<>();
        if (t.isTextual()) {
            out.add(t.asText());
        } else if (t.isArray() && !t.isEmpty()) {
            for (JsonNode e : t) {
                out.add(e.asText(""));
            }
        } else {
            throw refuse("type", path, "must be a type name or a non-empty array of them");
        }
        for (String name : out) {
            if (!TYPES.contains(name)) {
                throw refuse("type", path, "unknown type '" + name + "'");
            }
        }
        return out;
    }

    private void addIfTyped(List<ByteRegex.Node> alts, JsonNode v, List<String> types) {
        String t = switch (v.getNodeType()) {
            case OBJECT -> "object";
            case ARRAY -> "array";
            case STRING -> "string";
            case BOOLEAN -> "boolean";
            case NULL -> "null";
            case NUMBER -> v.isIntegralNumber() || (v.isNumber() && v.asDouble() == Math.rint(v.asDouble()))
                    ? "integer" : "number";
            default -> "";
        };
        if (types.contains(t) || (t.equals("integer") && types.contains("number"))) {
            alts.add(json.literal(v));
        }
    }

    private ByteRegex.Node ref(JsonNode ref, String path) {
        if (!ref.isTextual() || !ref.asText().startsWith("#")) {
            throw refuse("$ref", path, "only references inside the schema ('#', '#/$defs/Name') are supported");
        }
        String pointer = ref.asText().substring(1);
        JsonNode target;
        try {
            target = pointer.isEmpty() ? root : root.at(pointer);
        } catch (IllegalArgumentException e) {
            throw refuse("$ref", path, "bad JSON pointer '" + ref.asText() + "'");
        }
        if (target == null || target.isMissingNode()) {
            throw refuse("$ref", path, "'" + ref.asText() + "' does not resolve");
        }
        int d = refDepth.getOrDefault(pointer, 0);
        if (d >= MAX_REF_DEPTH) {
            return rx.none;
        }
        refDepth.put(pointer, d + 1);
        try {
            return schema(target, ref.asText());
        } finally {
            refDepth.put(pointer, d);
        }
    }

    private ByteRegex.Node object(JsonNode s, String path) {
        JsonNode props = s.get("properties");
        JsonNode additional = s.get("additionalProperties");
        JsonNode required = s.get("required");
        if (props != null && !props.isObject()) {
            throw refuse("properties", path, "must be an object");
        }
        if (additional != null && !additional.isBoolean() && !additional.isObject()) {
            throw refuse("additionalProperties", path, "must be a boolean or a schema");
        }
        Set<String> req = new LinkedHashSet<>();
        if (required != null) {
            if (!required.isArray()) {
                throw refuse("required", path, "must be an array of property names");
            }
            for (JsonNode r : required) {
                req.add(r.asText());
            }
        }
        if (props == null) {
            if (!req.isEmpty()) {
                throw refuse("required", path, "without 'properties' is not supported");
            }
            if (additional == null || additional.isBoolean() && additional.asBoolean()) {
                return json.object(JsonGrammar.ANY_DEPTH);
            }
            if (additional.isBoolean()) {
                return rx.seq(rx.literal("{"), json.ws, rx.literal("}"));
            }
            return json.map(schema(additional, path + "/additionalProperties"));
        }
        if (additional != null && additional.isObject() && !additional.isEmpty()) {
            throw refuse("additionalProperties", path, "a schema beside 'properties' is not supported");
        }
        for (String r : req) {
            if (!props.has(r)) {
                throw refuse("required", path, "'" + r + "' is not among the properties, so nothing matches");
            }
        }
        List<ByteRegex.Node> members = new ArrayList<>();
        List<Boolean> mandatory = new ArrayList<>();
        for (Map.Entry<String, JsonNode> e : props.properties()) {
            ByteRegex.Node value = schema(e.getValue(), path + "/properties/" + e.getKey());
            boolean must = req.contains(e.getKey());
            if (value == rx.none && !must) {
                continue; // an optional property that can have no value is left out
            }
            members.add(rx.seq(json.literal(com.fasterxml.jackson.databind.node.TextNode.valueOf(e.getKey())),
                    json.colon, value));
            mandatory.add(must);
        }
        // after(i): members i.. when one precedes (each present one after a comma);
        // first(i): members i.. when none precedes
        int n = members.size();
        ByteRegex.Node after = rx.empty;
        ByteRegex.Node first = rx.empty;
        for (int i = n - 1; i >= 0; i--) {
            ByteRegex.Node withComma = rx.seq(json.comma, members.get(i));
            ByteRegex.Node taken = rx.seq(members.get(i), after);
            first = mandatory.get(i) ? taken : rx.alt(taken, first);
            after = rx.seq(mandatory.get(i) ? withComma : rx.opt(withComma), after);
        }
        ByteRegex.Node close = rx.literal("}");
        ByteRegex.Node body = first.nullable
                ? rx.alt(close, rx.seq(first, json.ws, close)) // empty object: no whitespace twice
                : rx.seq(first, json.ws, close);
        return rx.seq(rx.literal("{"), json.ws, body);
    }

    private ByteRegex.Node array(JsonNode s, String path) {
        JsonNode items = s.get("items");
        if (items != null && items.isArray()) {
            throw refuse("items", path, "an array of schemas (tuple form) is not supported");
        }
        int min = count(s, "minItems", 0, path);
        int max = count(s, "maxItems", ByteRegex.INF, path);
        if (max != ByteRegex.INF && max < min) {
            throw refuse("maxItems", path, "is below minItems, so nothing matches");
        }
        ByteRegex.Node item = items == null ? json.value(JsonGrammar.ANY_DEPTH - 1) : schema(items, path + "/items");
        if (item == rx.none) {
            return min == 0 ? json.array(rx.none, 0, 0) : rx.none;
        }
        return json.array(item, min, max);
    }

    static int count(JsonNode s, String keyword, int dflt, String path) {
        JsonNode n = s.get(keyword);
        if (n == null) {
            return dflt;
        }
        if (!n.isIntegralNumber() || n.asLong() < 0 || n.asLong() > RegexParser.MAX_COUNT) {
            throw new ConstraintException(keyword, "JSON schema keyword '" + keyword + "' at " + path
                    + ": must be an integer in [0, " + RegexParser.MAX_COUNT + "], got " + n);
        }
        return n.asInt();
    }
}
