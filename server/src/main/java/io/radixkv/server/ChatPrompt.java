package io.radixkv.server;

import static io.radixkv.server.RequestParser.bool;
import static io.radixkv.server.RequestParser.kind;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.StringJoiner;

/**
 * A conversation turned into prompt token ids, as vLLM renders it: {@code messages} (text
 * content, parts joined with newlines), {@code add_generation_prompt}, {@code continue_final_message},
 * the request's own {@code chat_template} and its {@code chat_template_kwargs}; with {@code tools},
 * assistant {@code tool_calls} (their JSON {@code arguments} parsed into objects, as vLLM hands
 * them to templates) and {@code tool} messages' {@code tool_call_id}. Shared by chat completions
 * and {@code /tokenize}.
 */
final class ChatPrompt {
    private ChatPrompt() {
    }

    /** A rendered conversation: the prompt text and its ids. */
    record Rendered(String text, int[] ids) {
    }

    /** The prompt ids of {@code body}'s conversation, its tools included; 400 naming the field it cannot use. */
    static int[] ids(TextModel text, JsonNode body) {
        return render(text, body, ToolRequest.parse(body).rendered(false)).ids();
    }

    /** {@code body}'s conversation rendered with {@code tools} (null: none); 400 naming the field it cannot use. */
    static Rendered render(TextModel text, JsonNode body, List<Map<String, Object>> tools) {
        JsonNode msgs = body.get("messages");
        if (msgs == null || !msgs.isArray() || msgs.isEmpty()) {
            throw ApiException.badRequest("messages", "'messages' must be a non-empty array");
        }
        List<Map<String, Object>> messages = new ArrayList<>();
        for (int i = 0; i < msgs.size(); i++) {
            messages.add(message(msgs.get(i), "messages[" + i + "]"));
        }
        Map<String, Object> extra = new HashMap<>();
        JsonNode kw = body.get("chat_template_kwargs");
        if (kw != null && !kw.isNull()) {
            if (!kw.isObject()) {
                throw ApiException.badRequest("chat_template_kwargs", "'chat_template_kwargs' must be an object");
            }
            for (Iterator<Map.Entry<String, JsonNode>> it = kw.fields(); it.hasNext(); ) {
                Map.Entry<String, JsonNode> e = it.next();
                extra.put(e.getKey(), plain(e.getValue()));
            }
        }
        boolean addGen = bool(body, "add_generation_prompt", true);
        boolean continueFinal = bool(body, "continue_final_message", false);
        if (addGen && continueFinal && body.has("add_generation_prompt")) {
            throw ApiException.badRequest("continue_final_message", "'continue_final_message' and "
                    + "'add_generation_prompt' cannot both be true: continue the final message or start a new one");
        }
        JsonNode tpl = body.get("chat_template");
        if (tpl != null && !tpl.isNull() && (!tpl.isTextual() || tpl.asText().isBlank())) {
            throw ApiException.badRequest("chat_template", "'chat_template' must be a non-empty Jinja string");
        }
        String rendered = text.renderChat(messages, tools, new TextModel.ChatOptions(addGen, continueFinal,
                tpl == null || tpl.isNull() ? null : tpl.asText(), extra));
        // the rendered prompt already holds the BOS text
        return new Rendered(rendered, text.encode(rendered, false, "messages"));
    }

    private static Map<String, Object> message(JsonNode m, String param) {
        if (m == null || !m.isObject()) {
            throw ApiException.badRequest(param, "'" + param + "' must be an object with 'role' and 'content'");
        }
        for (Iterator<String> it = m.fieldNames(); it.hasNext(); ) {
            String f = it.next();
            if (!List.of("role", "content", "name", "tool_calls", "tool_call_id", "reasoning_content").contains(f)) {
                throw ApiException.badRequest(param + "." + f, "'" + param + "." + f + "' is not supported");
            }
        }
        JsonNode role = m.get("role");
        if (role == null || !role.isTextual() || role.asText().isBlank()) {
            throw ApiException.badRequest(param + ".role", "'" + param + ".role' must be a non-empty string");
        }
        JsonNode c = m.get("content");
        String content;
        if (c == null || c.isNull()) {
            content = "";
        } else if (c.isTextual()) {
            content = c.asText();
        } else if (c.isArray()) {
            // text parts are joined with newlines, as vLLM joins them
            StringJoiner sb = new StringJoiner("\n");
            for (int i = 0; i < c.size(); i++) {
                JsonNode part = c.get(i);
                String pp = param + ".content[" + i + "]";
                if (!part.isObject() || !part.path("type").asText("").equals("text") || !part.path("text").isTextual()) {
                    throw ApiException.badRequest(pp, "'" + pp + "' must be {\"type\": \"text\", \"text\": ...}: "
                            + "only text content is supported");
                }
                sb.add(part.get("text").asText());
            }
            content = sb.toString();
        } else {
            throw ApiException.badRequest(param + ".content", "'" + param
                    + ".content' must be a string or an array of text parts, got " + kind(c));
        }
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("role", role.asText());
        out.put("content", content);
        ChatToolMessages.addToolFields(m, role.asText(), param, out);
        return out;
    }

    /** A JSON value as the template sees it: strings, longs, doubles, booleans, null, lists and maps in key order. */
    static Object plain(JsonNode n) {
        if (n.isTextual()) {
            return n.asText();
        } else if (n.isBoolean()) {
            return n.asBoolean();
        } else if (n.isIntegralNumber()) {
            return n.asLong();
        } else if (n.isNumber()) {
            return n.asDouble();
        } else if (n.isArray()) {
            List<Object> l = new ArrayList<>();
            n.forEach(e -> l.add(plain(e)));
            return l;
        } else if (n.isObject()) {
            Map<String, Object> m = new LinkedHashMap<>();
            n.fields().forEachRemaining(e -> m.put(e.getKey(), plain(e.getValue())));
            return m;
        }
        return null;
    }
}
