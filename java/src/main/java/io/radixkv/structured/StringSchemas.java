package io.radixkv.structured;

import com.fasterxml.jackson.databind.JsonNode;

/**
 * String schemas: {@code minLength} / {@code maxLength} (in characters, an escape counting as
 * one), {@code pattern} (ECMA-262 search semantics, through {@link RegexParser}) and the formats
 * {@code date}, {@code time}, {@code date-time}, {@code uuid} and {@code email} as patterns.
 * A length bound together with a pattern or format would need their intersection: refused.
 */
final class StringSchemas {
    // 4-digit years divisible by 4, except the centuries that are not divisible by 400
    private static final String LEAP_YEAR = "(?:[0-9]{2}(?:0[48]|[2468][048]|[13579][26])|(?:[02468][048]|[13579][26])00)";
    private static final String DATE = "(?:[0-9]{4}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])"
            + "|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)|02-(?:0[1-9]|1[0-9]|2[0-8]))|" + LEAP_YEAR + "-02-29)";
    private static final String TIME = "(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\\.[0-9]{1,6})?"
            + "(?:Z|[+-](?:(?:0[0-9]|1[0-7]):[0-5][0-9]|18:00))"; // offsets within +-18:00, as java.time
    private static final String UUID = "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}";
    private static final String LABEL = "[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,20}[a-zA-Z0-9])?";
    // within RFC 5321's lengths (local part at most 64 bytes, labels at most 63); top-level domains
    // from a short list, since validators check them against IANA's
    private static final String EMAIL = "[a-zA-Z0-9_+-]{1,16}(?:\\.[a-zA-Z0-9_+-]{1,16}){0,2}@" + LABEL
            + "(?:\\." + LABEL + "){0,3}\\.(?:com|org|net|edu|gov|io|dev|ai|co|uk|de|fr|jp)";

    private StringSchemas() {}

    static ByteRegex.Node string(JsonGrammar json, JsonNode s, String path) {
        ByteRegex rx = json.rx;
        int min = JsonSchemaCompiler.count(s, "minLength", 0, path);
        int max = JsonSchemaCompiler.count(s, "maxLength", ByteRegex.INF, path);
        if (max != ByteRegex.INF && max < min) {
            throw new ConstraintException("maxLength", "JSON schema keyword 'maxLength' at " + path
                    + ": is below minLength, so nothing matches");
        }
        JsonNode pattern = s.get("pattern");
        JsonNode format = s.get("format");
        boolean bounded = s.has("minLength") || s.has("maxLength");
        if (pattern != null && format != null) {
            throw new ConstraintException("format", "JSON schema keyword 'format' at " + path
                    + ": together with 'pattern' is not supported");
        }
        if (pattern != null || format != null) {
            String keyword = pattern != null ? "pattern" : "format";
            if (bounded) {
                throw new ConstraintException(s.has("minLength") ? "minLength" : "maxLength", "JSON schema keyword '"
                        + (s.has("minLength") ? "minLength" : "maxLength") + "' at " + path + ": together with '"
                        + keyword + "' is not supported");
            }
            if (pattern != null) {
                if (!pattern.isTextual()) {
                    throw new ConstraintException("pattern", "JSON schema keyword 'pattern' at " + path
                            + ": must be a string");
                }
                ByteRegex.Node content;
                try {
                    content = RegexParser.parseSearch(pattern.asText(), rx, json::jsonChars);
                } catch (ConstraintException e) {
                    throw new ConstraintException("pattern", "JSON schema keyword 'pattern' at " + path + ": "
                            + e.getMessage());
                }
                return json.quoted(content);
            }
            String regex = switch (format.asText("")) {
                case "date" -> DATE;
                case "time" -> TIME;
                case "date-time" -> DATE + "T" + TIME;
                case "uuid" -> UUID;
                case "email" -> EMAIL;
                default -> throw new ConstraintException("format", "JSON schema keyword 'format' at " + path
                        + ": format '" + format.asText() + "' is not supported (date, time, date-time, uuid, email are)");
            };
            return json.quoted(RegexParser.parse(regex, rx, json::jsonChars));
        }
        return json.quoted(rx.rep(json.stringChar, min, max));
    }
}
