package io.radixkv.server;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.helidon.webserver.http.ServerRequest;
import io.helidon.webserver.http.ServerResponse;

/**
 * vLLM's {@code POST /tokenize} and {@code POST /detokenize}: the model's tokenizer (and chat
 * template) without generating. Bodies are read and validated as completions' are (strict JSON,
 * the same size limit, 400 naming the field).
 */
final class TokenizeService {
    private final CompletionService completions;
    private final RequestParser parser;
    private final TextModel text;
    private final ObjectMapper json;

    TokenizeService(CompletionService completions, TextModel text, ObjectMapper json) {
        this.completions = completions;
        this.parser = completions.parser();
        this.text = text;
        this.json = json;
    }

    /**
     * {@code {model?, prompt, add_special_tokens?}} (default true) or {@code {model?, messages,
     * add_generation_prompt?, continue_final_message?, chat_template?, chat_template_kwargs?, tools?}}
     * to {@code {count, max_model_len, tokens}}.
     */
    void tokenize(ServerRequest req, ServerResponse res) {
        JsonNode body = completions.readJson(req);
        RequestParser.requireObject(body);
        parser.model(body);
        int[] ids;
        if (body.has("messages")) {
            ids = ChatPrompt.ids(text, body);
        } else {
            JsonNode p = body.get("prompt");
            if (p == null || !p.isTextual()) {
                throw ApiException.badRequest("prompt", "'prompt' (a string) or 'messages' is required");
            }
            ids = text.encode(p.asText(), RequestParser.bool(body, "add_special_tokens", true), "prompt");
        }
        ObjectNode out = json.createObjectNode();
        out.put("count", ids.length);
        out.put("max_model_len", completions.contextLimit());
        var tokens = out.putArray("tokens");
        for (int id : ids) {
            tokens.add(id);
        }
        out.putNull("token_strs");
        OpenAiServer.sendJson(res, json, 200, out);
    }

    /** {@code {model?, tokens}} to {@code {prompt}}: the text of the ids, special tokens included. */
    void detokenize(ServerRequest req, ServerResponse res) {
        JsonNode body = completions.readJson(req);
        RequestParser.requireObject(body);
        parser.model(body);
        JsonNode t = body.get("tokens");
        if (t == null || t.isNull()) {
            throw ApiException.badRequest("tokens", "'tokens' (an array of token ids) is required");
        }
        int[] ids = parser.tokenIds(t, "tokens");
        text.requireTokenizer("tokens", "detokenizing");
        OpenAiServer.sendJson(res, json, 200, json.createObjectNode().put("prompt", text.decode(ids)));
    }
}
