package io.radixkv.structured;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * JSON constraints: random texts drawn from each schema's automaton (a uniformly chosen live
 * byte at every step) parse as one JSON value with Jackson and validate with networknt's
 * validator; hand-written instances are accepted or rejected as the schema says; every
 * unsupported keyword is refused naming it, and a schema that matches nothing is refused.
 */
class JsonSchemaConstraintTest {
    private static final ObjectMapper STRICT = new ObjectMapper()
            .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
            .enable(JsonParser.Feature.STRICT_DUPLICATE_DETECTION);

    @Test
    void randomTextsOfEverySchemaValidate() throws Exception {
        for (int k = 0; k < JsonSchemas.SCHEMAS.size(); k++) {
            String schema = JsonSchemas.SCHEMAS.get(k);
            ByteRegex rx = new ByteRegex();
            ByteRegex.Node start = ByteAutomata.start(Constraint.jsonSchema(JsonSchemas.parse(schema)), rx);
            for (int seed = 0; seed < 60; seed++) {
                String text = ByteAutomata.sample(rx, start, new SplittableRandom(seed * 31L + k), 0.3, 20_000);
                assertNotNull(text, "schema " + k + " seed " + seed + ": no text within 20000 bytes");
                JsonNode v = STRICT.readTree(text);
                assertEquals(java.util.List.of(), JsonSchemas.errors(schema, v), "schema " + k + ": " + text);
            }
        }
    }

    @Test
    void anyJsonAndJsonObjectParse() throws Exception {
        for (Constraint c : new Constraint[] {Constraint.anyJson(), Constraint.jsonObject()}) {
            ByteRegex rx = new ByteRegex();
            ByteRegex.Node start = ByteAutomata.start(c, rx);
            for (int seed = 0; seed < 60; seed++) {
                String text = ByteAutomata.sample(rx, start, new SplittableRandom(seed), 0.3, 20_000);
                assertNotNull(text);
                JsonNode v = STRICT.readTree(text);
                if (c.kind() == Constraint.Kind.JSON_OBJECT) {
                    assertTrue(v.isObject(), text);
                }
            }
            assertTrue(ByteAutomata.matches(rx, start, "{\"a\": [1, -2.5e3, {\"b\":null}], \"c\":\"\\u00e9\\n\"}"));
            assertFalse(ByteAutomata.matches(rx, start, "{\"a\":1,}"));
            assertFalse(ByteAutomata.matches(rx, start, "{\"a\":01}"));
            assertFalse(ByteAutomata.matches(rx, start, "{\"a\":\"\\ud800\"}"), "an unpaired surrogate escape");
            assertFalse(ByteAutomata.matches(rx, start, " {}"), "whitespace before the value");
            assertFalse(ByteAutomata.matches(rx, start, "{}\n"), "whitespace after the value");
            assertFalse(ByteAutomata.matches(rx, start, "{\"a\":   1}"), "three whitespace bytes");
            assertTrue(ByteAutomata.matches(rx, start, "{\n \"a\" :\t1 }"));
        }
    }

    @Test
    void instancesAreAcceptedAsTheSchemaSays() {
        String schema = JsonSchemas.SCHEMAS.get(1);
        ByteRegex rx = new ByteRegex();
        ByteRegex.Node start = ByteAutomata.start(Constraint.jsonSchema(JsonSchemas.parse(schema)), rx);
        assertTrue(ByteAutomata.matches(rx, start, "{\"id\":-20,\"tags\":[\"ab\"],\"owner\":{\"first\":\"Jo\"}}"));
        assertTrue(ByteAutomata.matches(rx, start,
                "{\"id\": 1234, \"tags\": [\"a\", \"\", \"abcde\"], \"owner\": {\"first\": \"Jo\", \"last\": \"X\"}, \"nick\": \"n\"}"));
        assertFalse(ByteAutomata.matches(rx, start, "{\"id\":1235,\"tags\":[\"ab\"],\"owner\":{\"first\":\"Jo\"}}"), "maximum");
        assertFalse(ByteAutomata.matches(rx, start, "{\"id\":-21,\"tags\":[\"ab\"],\"owner\":{\"first\":\"Jo\"}}"), "minimum");
        assertFalse(ByteAutomata.matches(rx, start, "{\"id\":1,\"tags\":[],\"owner\":{\"first\":\"Jo\"}}"), "minItems");
        assertFalse(ByteAutomata.matches(rx, start, "{\"id\":1,\"tags\":[\"abcdef\"],\"owner\":{\"first\":\"Jo\"}}"), "maxLength");
        assertFalse(ByteAutomata.matches(rx, start, "{\"id\":1,\"tags\":[\"a\"],\"owner\":{\"first\":\"J\"}}"), "minLength");
        assertFalse(ByteAutomata.matches(rx, start, "{\"id\":1,\"owner\":{\"first\":\"Jo\"}}"), "required");
        assertFalse(ByteAutomata.matches(rx, start, "{\"id\":1,\"tags\":[\"a\"],\"owner\":{\"first\":\"Jo\"},\"x\":1}"),
                "no properties beyond the declared ones");
        String formats = JsonSchemas.SCHEMAS.get(4);
        ByteRegex rf = new ByteRegex();
        ByteRegex.Node fs = ByteAutomata.start(Constraint.jsonSchema(JsonSchemas.parse(formats)), rf);
        String ok = "{\"d\":\"2024-02-29\",\"t\":\"2023-12-31T23:59:59.5+01:00\",\"u\":\"123e4567-e89b-12d3-a456-426614174000\","
                + "\"e\":\"a.b@ex-ample.org\",\"p\":\"AB-123\",\"q\":\"x5\\\"y\"}";
        assertTrue(ByteAutomata.matches(rf, fs, ok));
        assertFalse(ByteAutomata.matches(rf, fs, ok.replace("2024-02-29", "2023-02-29")), "not a leap year");
        assertFalse(ByteAutomata.matches(rf, fs, ok.replace("AB-123", "AB-1234")), "anchored pattern");
    }

    @Test
    void unsupportedKeywordsAreRefusedNamingThem() {
        String[][] refused = {
            {"{\"oneOf\":[{\"type\":\"string\"}]}", "oneOf"},
            {"{\"allOf\":[{\"type\":\"string\"}]}", "allOf"},
            {"{\"not\":{\"type\":\"string\"}}", "not"},
            {"{\"type\":\"object\",\"patternProperties\":{\"a\":{}}}", "patternProperties"},
            {"{\"type\":\"object\",\"minProperties\":1}", "minProperties"},
            {"{\"type\":\"array\",\"uniqueItems\":true}", "uniqueItems"},
            {"{\"type\":\"array\",\"prefixItems\":[{}]}", "prefixItems"},
            {"{\"type\":\"array\",\"items\":[{}]}", "items"},
            {"{\"type\":\"number\",\"multipleOf\":2}", "multipleOf"},
            {"{\"type\":\"number\",\"maximum\":2}", "maximum"},
            {"{\"type\":\"number\",\"minimum\":1}", "minimum"},
            {"{\"type\":\"string\",\"format\":\"hostname\"}", "format"},
            {"{\"type\":\"string\",\"pattern\":\"(a)\\\\1\"}", "pattern"},
            {"{\"type\":\"string\",\"pattern\":\"a\",\"maxLength\":3}", "maxLength"},
            {"{\"if\":{},\"then\":{}}", "if"},
            {"{\"$ref\":\"https://example.com/s.json\"}", "$ref"},
            {"{\"$ref\":\"#/$defs/missing\"}", "$ref"},
            {"{\"type\":\"object\",\"properties\":{\"a\":{}},\"additionalProperties\":{\"type\":\"string\"}}",
                "additionalProperties"},
            {"{\"type\":\"strange\"}", "type"},
            {"{\"enum\":[1],\"minimum\":0}", "minimum"},
            {"{\"type\":\"object\",\"anyOf\":[{\"type\":\"string\"}]}", "type"},
            {"{\"anyOf\":[{\"type\":\"string\"}],\"minLength\":1}", "minLength"},
        };
        for (String[] r : refused) {
            ConstraintException e = assertThrows(ConstraintException.class,
                    () -> Constraint.jsonSchema(JsonSchemas.parse(r[0])).compile(new ByteRegex()), r[0]);
            assertEquals(r[1], e.keyword(), r[0] + ": " + e.getMessage());
            assertTrue(e.getMessage().contains("'" + r[1] + "'"), e.getMessage());
        }
    }

    @Test
    void schemasThatMatchNothingAreRefused() {
        String[][] empty = {
            {"false", "schema"},
            {"{\"type\":\"object\",\"properties\":{\"a\":{}},\"required\":[\"b\"]}", "required"},
            {"{\"type\":\"string\",\"minLength\":3,\"maxLength\":2}", "maxLength"},
            {"{\"type\":\"integer\",\"minimum\":5,\"maximum\":4}", "minimum"},
            {"{\"type\":\"array\",\"minItems\":3,\"maxItems\":1}", "maxItems"},
            {"{\"enum\":[]}", "schema"},
            {"{\"type\":\"string\",\"enum\":[1,2]}", "schema"},
            {"{\"type\":\"object\",\"properties\":{\"next\":{\"$ref\":\"#\"}},\"required\":[\"next\"]}", "schema"},
        };
        for (String[] r : empty) {
            ConstraintException e = assertThrows(ConstraintException.class,
                    () -> Constraint.jsonSchema(JsonSchemas.parse(r[0])).compile(new ByteRegex()), r[0]);
            assertEquals(r[1], e.keyword(), r[0] + ": " + e.getMessage());
        }
    }

    @Test
    void integerRangesAreExact() {
        long[][] ranges = {{0, 0}, {-5, 5}, {7, 123}, {-130, -7}, {99, 1000}, {-1, 0}, {10, 19}};
        for (long[] r : ranges) {
            ByteRegex rx = new ByteRegex();
            ByteRegex.Node n = NumberSchemas.range(rx, r[0], r[1]);
            for (long v = -1200; v <= 1200; v++) {
                assertEquals(v >= r[0] && v <= r[1], ByteAutomata.matches(rx, n, Long.toString(v)),
                        v + " in [" + r[0] + ", " + r[1] + "]");
            }
            assertFalse(ByteAutomata.matches(rx, n, "-0"));
            assertFalse(ByteAutomata.matches(rx, n, "007"));
        }
    }
}
