package io.radixkv.structured;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.List;
import java.util.Objects;

/**
 * What a generated text must match, as a value (equal constraints share one compiled
 * {@link Grammar} in a {@link GrammarCompiler}'s cache).
 *
 * @param source the JSON schema's text (JSON_SCHEMA), the regex (REGEX), the choices as a JSON
 *     array (CHOICE), empty otherwise
 */
public record Constraint(Kind kind, String source) {
    private static final ObjectMapper JSON = new ObjectMapper();

    public enum Kind {
        /** Any JSON value. */
        JSON,
        /** A JSON object (OpenAI's {@code response_format: json_object}). */
        JSON_OBJECT,
        JSON_SCHEMA,
        /** A regular expression over the whole text ({@link RegexParser} lists the syntax). */
        REGEX,
        /** Exactly one of a list of strings. */
        CHOICE
    }

    public Constraint {
        Objects.requireNonNull(kind, "kind");
        Objects.requireNonNull(source, "source");
    }

    public static Constraint anyJson() {
        return new Constraint(Kind.JSON, "");
    }

    public static Constraint jsonObject() {
        return new Constraint(Kind.JSON_OBJECT, "");
    }

    /** A JSON schema (an object or a boolean); refused when compiled if it uses an unsupported keyword. */
    public static Constraint jsonSchema(JsonNode schema) {
        Objects.requireNonNull(schema, "schema");
        try {
            return new Constraint(Kind.JSON_SCHEMA, JSON.writeValueAsString(schema));
        } catch (JsonProcessingException e) {
            throw new ConstraintException("schema", "cannot serialize the schema: " + e.getOriginalMessage());
        }
    }

    public static Constraint regex(String regex) {
        return new Constraint(Kind.REGEX, Objects.requireNonNull(regex, "regex"));
    }

    public static Constraint choice(List<String> choices) {
        if (choices == null || choices.isEmpty()) {
            throw new ConstraintException("choice", "a choice needs at least one string");
        }
        try {
            return new Constraint(Kind.CHOICE, JSON.writeValueAsString(List.copyOf(choices)));
        } catch (JsonProcessingException e) {
            throw new ConstraintException("choice", "cannot serialize the choices: " + e.getOriginalMessage());
        }
    }

    /** The automaton's start expression. */
    ByteRegex.Node compile(ByteRegex rx) {
        JsonGrammar json = new JsonGrammar(rx);
        try {
            return switch (kind) {
                case JSON -> json.value(JsonGrammar.ANY_DEPTH);
                case JSON_OBJECT -> json.object(JsonGrammar.ANY_DEPTH);
                case JSON_SCHEMA -> JsonSchemaCompiler.compile(json, JSON.readTree(source));
                case REGEX -> {
                    ByteRegex.Node n = RegexParser.parse(source, rx, set -> set.toUtf8(rx));
                    if (n == rx.none) {
                        throw new ConstraintException("regex", "the regular expression matches no text");
                    }
                    yield n;
                }
                case CHOICE -> {
                    List<ByteRegex.Node> alts = new java.util.ArrayList<>();
                    for (JsonNode c : JSON.readTree(source)) {
                        alts.add(rx.literal(c.asText()));
                    }
                    yield rx.alt(alts);
                }
            };
        } catch (JsonProcessingException e) {
            throw new ConstraintException("schema", "not JSON: " + e.getOriginalMessage());
        }
    }
}
