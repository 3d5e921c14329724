package io.radixkv.server;

import com.fasterxml.jackson.databind.JsonNode;
import io.radixkv.structured.Constraint;
import io.radixkv.structured.ConstraintException;
import io.radixkv.structured.Grammar;
import io.radixkv.structured.GrammarCompiler;
import io.radixkv.structured.TokenVocabulary;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Set;

/**
 * Structured outputs on both endpoints: OpenAI's {@code response_format} ({@code text},
 * {@code json_object}, {@code json_schema}) and vLLM's {@code structured_outputs} ({@code json},
 * {@code regex}, {@code choice}, {@code json_object}), compiled to a {@link Grammar} over the
 * model's tokenizer (built on the first such request, then shared; compiled grammars are
 * cached). Anything it cannot honour is a 400 naming the field or the schema keyword.
 * Thread-safe.
 */
final class StructuredOutputFields {
    static final int GRAMMAR_CACHE = 64;
    private static final com.fasterxml.jackson.databind.ObjectMapper JSON = new com.fasterxml.jackson.databind.ObjectMapper();
    private static final Set<String> JSON_SCHEMA_FIELDS = Set.of("name", "schema", "strict", "description");
    private static final Set<String> KINDS = Set.of("json", "regex", "choice", "json_object", "grammar",
            "structural_tag");
    /** vLLM's options that change nothing here, at any value radixkv honours. */
    private static final Set<String> OPTIONS = Set.of("backend", "disable_fallback", "disable_additional_properties",
            "disable_any_whitespace", "whitespace_pattern");

    private final TextModel text;
    private final int modelVocab;
    private volatile GrammarCompiler compiler;

    StructuredOutputFields(TextModel text, int modelVocab) {
        this.text = text;
        this.modelVocab = modelVocab;
    }

    /** The request's grammar, or null when it asks for free text. */
    Grammar grammar(JsonNode body) {
        JsonNode rf = body.get("response_format");
        JsonNode so = body.get("structured_outputs");
        boolean hasRf = rf != null && !rf.isNull();
        boolean hasSo = so != null && !so.isNull();
        Constraint c = null;
        String param = null;
        if (hasRf) {
            c = responseFormat(rf);
            param = "response_format";
        }
        if (hasSo) {
            if (c != null) {
                throw ApiException.badRequest("structured_outputs", "'structured_outputs' and a 'response_format' "
                        + "other than text cannot both be given");
            }
            c = structuredOutputs(so);
            param = "structured_outputs";
        }
        return c == null ? null : compile(c, param);
    }

    /**
     * {@code c} compiled over the model's vocabulary (from the cache when compiled before); a 400
     * naming {@code param} and the refused keyword when it cannot be honoured. Tool calling's
     * forced calls use it with the tool's parameter schema ({@link Constraint#jsonSchema}).
     */
    Grammar compile(Constraint c, String param) {
        text.requireTokenizer(param, "structured outputs");
        try {
            return compiler().compile(c);
        } catch (ConstraintException e) {
            throw ApiException.badRequest(param, "unsupported " + param + " (" + e.keyword() + "): " + e.getMessage());
        }
    }

    /**
     * The grammar a {@code tool_choice} of "required" or a named function puts on the output (vLLM's:
     * a JSON array of {@code {name, parameters}} calls, or the named function's arguments object),
     * compiled from {@link ToolRequest#schema}; null for other choices and for a named function
     * without parameters. A tool schema with a keyword the grammar engine refuses is a 400 naming it.
     */
    Grammar toolGrammar(ToolRequest tools) {
        JsonNode schema = tools.schema();
        if (schema == null) {
            return null;
        }
        text.requireTokenizer("tool_choice", "tool calling");
        try {
            return compiler().compile(Constraint.jsonSchema(schema));
        } catch (ConstraintException e) {
            throw ApiException.badRequest("tools", "a tool's parameters cannot constrain tool_choice "
                    + (tools.function() != null ? "'" + tools.function() + "'" : "\"required\"") + " ("
                    + e.keyword() + "): " + e.getMessage());
        }
    }

    private static Constraint responseFormat(JsonNode rf) {
        if (!rf.isObject() || !rf.path("type").isTextual()) {
            throw ApiException.badRequest("response_format", "'response_format' must be an object with a string 'type'");
        }
        String type = rf.get("type").asText();
        switch (type) {
            case "text" -> {
                onlyFields(rf, Set.of("type"), "response_format");
                return null;
            }
            case "json_object" -> {
                onlyFields(rf, Set.of("type"), "response_format");
                return Constraint.jsonObject();
            }
            case "json_schema" -> {
                onlyFields(rf, Set.of("type", "json_schema"), "response_format");
                JsonNode js = rf.get("json_schema");
                if (js == null || !js.isObject()) {
                    throw ApiException.badRequest("response_format.json_schema",
                            "'response_format.json_schema' must be an object with a 'schema'");
                }
                onlyFields(js, JSON_SCHEMA_FIELDS, "response_format.json_schema");
                JsonNode name = js.get("name");
                if (name != null && !name.isTextual()) {
                    throw ApiException.badRequest("response_format.json_schema.name",
                            "'response_format.json_schema.name' must be a string");
                }
                JsonNode strict = js.get("strict");
                if (strict != null && !strict.isNull() && !strict.isBoolean()) {
                    throw ApiException.badRequest("response_format.json_schema.strict",
                            "'response_format.json_schema.strict' must be a boolean");
                }
                JsonNode schema = js.get("schema");
                if (schema == null || !(schema.isObject() || schema.isBoolean())) {
                    throw ApiException.badRequest("response_format.json_schema.schema",
                            "'response_format.json_schema.schema' must be a JSON schema (an object)");
                }
                return Constraint.jsonSchema(schema);
            }
            default -> throw ApiException.badRequest("response_format.type", "unsupported 'response_format.type' '"
                    + type + "': text, json_object and json_schema are supported");
        }
    }

    private static Constraint structuredOutputs(JsonNode so) {
        if (!so.isObject()) {
            throw ApiException.badRequest("structured_outputs", "'structured_outputs' must be an object");
        }
        List<String> kinds = new ArrayList<>();
        for (Iterator<String> it = so.fieldNames(); it.hasNext(); ) {
            String f = it.next();
            if (so.get(f).isNull()) {
                continue;
            }
            if (KINDS.contains(f)) {
                if (!(f.equals("json_object") && so.get(f).isBoolean() && !so.get(f).asBoolean())) {
                    kinds.add(f);
                }
            } else if (!OPTIONS.contains(f)) {
                throw ApiException.badRequest("structured_outputs." + f, "unknown field 'structured_outputs." + f + "'");
            }
        }
        neutral(so, "disable_any_whitespace", n -> n.isBoolean(), "must be a boolean");
        neutral(so, "disable_fallback", n -> n.isBoolean(), "must be a boolean");
        neutral(so, "disable_additional_properties", n -> n.isBoolean(), "must be a boolean");
        neutral(so, "backend", n -> n.isTextual(), "must be a string");
        neutral(so, "whitespace_pattern", n -> false, "a custom whitespace pattern is not supported");
        if (kinds.size() != 1) {
            throw ApiException.badRequest("structured_outputs", "'structured_outputs' needs exactly one of json, regex, "
                    + "choice, json_object; got " + (kinds.isEmpty() ? "none" : kinds));
        }
        String kind = kinds.get(0);
        JsonNode v = so.get(kind);
        String param = "structured_outputs." + kind;
        return switch (kind) {
            case "json" -> {
                JsonNode schema = v;
                if (v.isTextual()) {
                    try {
                        schema = JSON.readTree(v.asText());
                    } catch (IOException e) {
                        throw ApiException.badRequest(param, "'" + param + "' is not a JSON schema: " + e.getMessage());
                    }
                }
                if (schema == null || !(schema.isObject() || schema.isBoolean())) {
                    throw ApiException.badRequest(param, "'" + param + "' must be a JSON schema (an object or its text)");
                }
                yield Constraint.jsonSchema(schema);
            }
            case "regex" -> {
                if (!v.isTextual()) {
                    throw ApiException.badRequest(param, "'" + param + "' must be a string");
                }
                yield Constraint.regex(v.asText());
            }
            case "choice" -> {
                if (!v.isArray() || v.isEmpty()) {
                    throw ApiException.badRequest(param, "'" + param + "' must be a non-empty array of strings");
                }
                List<String> choices = new ArrayList<>();
                for (JsonNode e : v) {
                    if (!e.isTextual() || e.asText().isEmpty()) {
                        throw ApiException.badRequest(param, "'" + param + "' must hold non-empty strings");
                    }
                    choices.add(e.asText());
                }
                yield Constraint.choice(choices);
            }
            case "json_object" -> {
                if (!v.isBoolean()) {
                    throw ApiException.badRequest(param, "'" + param + "' must be a boolean");
                }
                yield Constraint.jsonObject();
            }
            default -> throw ApiException.badRequest(param, "'" + param + "' is not supported (json, regex, choice and "
                    + "json_object are)");
        };
    }

    private interface Check {
        boolean ok(JsonNode n);
    }

    private static void neutral(JsonNode so, String field, Check ok, String why) {
        JsonNode n = so.get(field);
        if (n != null && !n.isNull() && !ok.ok(n)) {
            throw ApiException.badRequest("structured_outputs." + field, "'structured_outputs." + field + "' " + why);
        }
    }

    private static void onlyFields(JsonNode obj, Set<String> allowed, String param) {
        for (Iterator<String> it = obj.fieldNames(); it.hasNext(); ) {
            String f = it.next();
            if (!allowed.contains(f)) {
                throw ApiException.badRequest(param + "." + f, "unsupported field '" + param + "." + f + "'");
            }
        }
    }

    private GrammarCompiler compiler() {
        GrammarCompiler c = compiler;
        if (c == null) {
            synchronized (this) {
                c = compiler;
                if (c == null) {
                    try (java.io.InputStream json = text.openTokenizerJson()) {
                        c = new GrammarCompiler(TokenVocabulary.fromTokenizerJson(json, "the tokenizer.json of "
                                + text.tokenizerDirectory(), modelVocab, text.stopTokenIds()), GRAMMAR_CACHE);
                    } catch (IOException e) {
                        throw new UncheckedIOException("reading the vocabulary of " + text.tokenizerDirectory(), e);
                    }
                    compiler = c;
                }
            }
        }
        return c;
    }
}
