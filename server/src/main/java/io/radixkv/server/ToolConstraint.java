package io.radixkv.server;

import com.fasterxml.jackson.databind.JsonNode;

/**
 * Where JSON-schema constrained decoding plugs into tool calling. For {@code tool_choice:
 * "required"} and a named function vLLM constrains the generation to {@link ToolRequest#schema()}
 * (the function's parameters, or an array of {@code {"name", "parameters"}} objects) and reads the
 * output as that JSON; {@link #UNAVAILABLE} leaves generation free, and the output is read by
 * the model family's tool parser, which the schema then does not bind.
 *
 * <p>To wire a constraint engine: implement {@link #constrain} so that the request's generation
 * follows {@code schema} as it follows {@code response_format: {"type": "json_schema"}}, and
 * return true; {@link ChatOutput} then reads the output as vLLM does under the constraint.
 */
@FunctionalInterface
interface ToolConstraint {
    /** Leaves every generation unconstrained. */
    ToolConstraint UNAVAILABLE = (request, schema) -> false;

    /**
     * Constrains the generation of the chat request {@code request} (its JSON body) to
     * {@code schema}; returns whether it will be.
     */
    boolean constrain(JsonNode request, JsonNode schema);
}
