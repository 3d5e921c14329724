package io.radixkv.server;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.ObjectReader;
import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CharsetDecoder;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.MalformedInputException;
import java.nio.charset.StandardCharsets;
import java.util.Iterator;
import java.util.Map;

/**
 * A request body as one JSON value, read strictly: the bytes must be UTF-8 (an invalid byte is a
 * 400, never replaced by U+FFFD, so two different byte strings never become the same text: a
 * cache salt or a prompt is what the client sent or nothing), no string may hold an unpaired
 * surrogate (a {@code \ud800} escape has no UTF-8 form), and nothing may follow the value.
 */
final class StrictJson {
    private final ObjectReader reader;

    StrictJson(ObjectMapper json) {
        this.reader = json.readerFor(JsonNode.class).with(DeserializationFeature.FAIL_ON_TRAILING_TOKENS);
    }

    JsonNode parse(byte[] body) {
        CharBuffer text = decode(body);
        JsonNode root;
        try {
            root = reader.readValue(text.toString());
        } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
            throw ApiException.badRequest(null, "the request body is not valid JSON: " + e.getOriginalMessage());
        }
        if (root == null) {
            throw ApiException.badRequest(null, "the request body is empty");
        }
        checkSurrogates(root, "");
        return root;
    }

    private static CharBuffer decode(byte[] body) {
        CharsetDecoder d = StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                .onUnmappableCharacter(CodingErrorAction.REPORT);
        ByteBuffer in = ByteBuffer.wrap(body);
        try {
            return d.decode(in);
        } catch (MalformedInputException e) {
            throw ApiException.badRequest(null, "the request body is not valid UTF-8 (invalid byte sequence at offset "
                    + in.position() + ")");
        } catch (CharacterCodingException e) {
            throw ApiException.badRequest(null, "the request body is not valid UTF-8");
        }
    }

    /** Refuses any string or field name with an unpaired surrogate, naming where it is. */
    private static void checkSurrogates(JsonNode n, String path) {
        if (n.isTextual()) {
            requireWellFormed(n.asText(), path);
        } else if (n.isArray()) {
            for (int i = 0; i < n.size(); i++) {
                checkSurrogates(n.get(i), path + "[" + i + "]");
            }
        } else if (n.isObject()) {
            for (Iterator<Map.Entry<String, JsonNode>> it = n.fields(); it.hasNext(); ) {
                Map.Entry<String, JsonNode> e = it.next();
                String p = path.isEmpty() ? e.getKey() : path + "." + e.getKey();
                requireWellFormed(e.getKey(), p);
                checkSurrogates(e.getValue(), p);
            }
        }
    }

    private static void requireWellFormed(String s, String path) {
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (Character.isHighSurrogate(c) && i + 1 < s.length() && Character.isLowSurrogate(s.charAt(i + 1))) {
                i++;
            } else if (Character.isSurrogate(c)) {
                throw ApiException.badRequest(path.isEmpty() ? null : path, "'" + path + "' holds an unpaired "
                        + "surrogate (\\u" + Integer.toHexString(c) + " at index " + i + "): text must be valid Unicode");
            }
        }
    }
}
