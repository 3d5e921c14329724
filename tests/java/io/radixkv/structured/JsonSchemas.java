package io.radixkv.structured;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.networknt.schema.Error;
import com.networknt.schema.Schema;
import com.networknt.schema.SchemaRegistry;
import com.networknt.schema.SchemaRegistryConfig;
import com.networknt.schema.SpecificationVersion;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.List;

/**
 * The schemas the structured-output tests generate under (nested objects, arrays, enums, anyOf,
 * $ref and recursion, formats, bounds), and the independent validator: networknt's JSON Schema
 * implementation (draft 2020-12, formats asserted).
 */
final class JsonSchemas {
    static final ObjectMapper JSON = new ObjectMapper();
    private static final SchemaRegistry REGISTRY = SchemaRegistry.withDefaultDialect(SpecificationVersion.DRAFT_2020_12,
            b -> b.schemaRegistryConfig(SchemaRegistryConfig.builder().formatAssertionsEnabled(true).build()));

    private JsonSchemas() {}

    static final List<String> SCHEMAS = List.of(
            // a flat object: every basic type, all required (OpenAI strict mode)
            """
            {"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"},
             "score":{"type":"number"},"ok":{"type":"boolean"},"none":{"type":"null"}},
             "required":["name","age","score","ok","none"],"additionalProperties":false}""",
            // nested objects and arrays, optional properties, bounds
            """
            {"type":"object","properties":{
               "id":{"type":"integer","minimum":-20,"maximum":1234},
               "tags":{"type":"array","items":{"type":"string","maxLength":5},"minItems":1,"maxItems":3},
               "owner":{"type":"object","properties":{"first":{"type":"string","minLength":2},
                        "last":{"type":"string"}},"required":["first"],"additionalProperties":false},
               "nick":{"type":"string"}},
             "required":["id","tags","owner"]}""",
            // enums, const, anyOf and nullable types
            """
            {"type":"object","properties":{
               "color":{"type":"string","enum":["red","green","blue \\"x\\""]},
               "level":{"enum":[1,2,3.5,null,"high",true]},
               "kind":{"const":"fixed"},
               "value":{"anyOf":[{"type":"integer","exclusiveMinimum":0},{"type":"string","maxLength":3},{"type":"null"}]},
               "maybe":{"type":["string","null"]}},
             "required":["color","level","kind","value","maybe"],"additionalProperties":false}""",
            // $defs / $ref, recursion
            """
            {"$defs":{"node":{"type":"object","properties":{"v":{"type":"integer"},
               "children":{"type":"array","items":{"$ref":"#/$defs/node"},"maxItems":2}},
               "required":["v","children"],"additionalProperties":false}},
             "type":"object","properties":{"root":{"$ref":"#/$defs/node"}},"required":["root"]}""",
            // formats and patterns
            """
            {"type":"object","properties":{"d":{"type":"string","format":"date"},
               "t":{"type":"string","format":"date-time"},"u":{"type":"string","format":"uuid"},
               "e":{"type":"string","format":"email"},"p":{"type":"string","pattern":"^[A-Z]{2}-\\\\d{3}$"},
               "q":{"type":"string","pattern":"^x[0-9]\\""}},
             "required":["d","t","u","e","p","q"],"additionalProperties":false}""",
            // a top-level array of anyOf objects; a map; non-negative numbers
            """
            {"type":"array","items":{"anyOf":[
               {"type":"object","properties":{"x":{"type":"number","minimum":0}},"required":["x"],"additionalProperties":false},
               {"type":"object","additionalProperties":{"type":"integer","minimum":5,"maximum":9}}]},
             "maxItems":4}""",
            // a type beside anyOf, given to every option (vLLM's schema of required tool calls)
            """
            {"type":"array","minItems":1,"maxItems":2,"items":{"type":"object","anyOf":[
               {"properties":{"name":{"type":"string","enum":["f"]},"parameters":{"type":"object",
                 "properties":{"a":{"type":"integer","minimum":0,"maximum":9}},"required":["a"],"additionalProperties":false}},
                "required":["name","parameters"],"additionalProperties":false},
               {"type":"object","properties":{"name":{"const":"g"}},"required":["name"],"additionalProperties":false}]}}""",
            // no type: any JSON value; a string-only enum at the top
            """
            {"type":"object","properties":{"anything":{},"choice":{"type":"string","enum":["a","b"]}},
             "required":["anything","choice"],"additionalProperties":false}""");

    static JsonNode parse(String json) {
        try {
            return JSON.readTree(json);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The validator's errors for {@code instance} (empty: valid). */
    static List<Error> errors(String schema, JsonNode instance) {
        Schema s = REGISTRY.getSchema(parse(schema));
        return s.validate(instance);
    }
}
