package io.radixkv.cli.sim;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.Reader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Reads a simulation trace: JSON lines, one request each,
 * {@code {"tokens":[...], "output":[...], "namespace":"...", "priority":n}} ({@code output},
 * {@code namespace} and {@code priority} optional; blank lines ignored). Errors name the line.
 */
public final class TraceReader {
    /** One object per line (nothing after it) and no key given twice. */
    private static final ObjectMapper MAPPER = JsonMapper.builder()
            .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
            .enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION)
            .build();

    private TraceReader() {}

    public static List<TraceRequest> read(Path file) {
        try (BufferedReader r = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
            return read(r, file.toString());
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read trace " + file + ": " + e.getMessage(), e);
        }
    }

    /** @throws IllegalArgumentException naming {@code source} and the line of the first bad request */
    public static List<TraceRequest> read(Reader in, String source) throws IOException {
        BufferedReader r = in instanceof BufferedReader b ? b : new BufferedReader(in);
        List<TraceRequest> out = new ArrayList<>();
        String line;
        int lineNo = 0;
        while ((line = r.readLine()) != null) {
            lineNo++;
            if (line.isBlank()) {
                continue;
            }
            try {
                out.add(parse(line));
            } catch (JsonProcessingException e) {
                throw new IllegalArgumentException(source + " line " + lineNo + ": invalid JSON ("
                        + e.getOriginalMessage() + ")");
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException(source + " line " + lineNo + ": " + e.getMessage());
            }
        }
        if (out.isEmpty()) {
            throw new IllegalArgumentException(source + ": the trace holds no requests");
        }
        return out;
    }

    static TraceRequest parse(String line) throws JsonProcessingException {
        JsonNode n = MAPPER.readTree(line);
        if (n == null || !n.isObject()) {
            throw new IllegalArgumentException("expected a JSON object");
        }
        int[] tokens = ids(n.get("tokens"), "tokens", true);
        int[] output = ids(n.get("output"), "output", false);
        JsonNode ns = n.get("namespace");
        String namespace = null;
        if (ns != null && !ns.isNull()) {
            if (!ns.isTextual()) {
                throw new IllegalArgumentException("'namespace' must be a string");
            }
            namespace = ns.asText();
        }
        JsonNode pr = n.get("priority");
        int priority = 0;
        if (pr != null && !pr.isNull()) {
            if (!pr.isIntegralNumber() || !pr.canConvertToInt()) {
                throw new IllegalArgumentException("'priority' must be an integer, got " + pr);
            }
            priority = pr.asInt();
        }
        return new TraceRequest(tokens, output, namespace, priority);
    }

    private static int[] ids(JsonNode a, String field, boolean required) {
        if (a == null || a.isNull()) {
            if (required) {
                throw new IllegalArgumentException("missing '" + field + "'");
            }
            return new int[0];
        }
        if (!a.isArray()) {
            throw new IllegalArgumentException("'" + field + "' must be an array of token ids");
        }
        if (required && a.isEmpty()) {
            throw new IllegalArgumentException("'" + field + "' must not be empty");
        }
        int[] ids = new int[a.size()];
        for (int i = 0; i < ids.length; i++) {
            JsonNode v = a.get(i);
            if (!v.canConvertToInt() || !v.isIntegralNumber() || v.asInt() < 0) {
                throw new IllegalArgumentException("'" + field + "'[" + i + "] = " + v + " is not a token id (an int >= 0)");
            }
            ids[i] = v.asInt();
        }
        return ids;
    }
}
