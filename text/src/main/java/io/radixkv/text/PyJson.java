package io.radixkv.text;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.util.DefaultIndenter;
import com.fasterxml.jackson.core.util.DefaultPrettyPrinter;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.Map;
import java.util.TreeMap;

/**
 * The {@code tojson} filter transformers installs: Python's
 * {@code json.dumps(x, ensure_ascii=False, indent=indent, separators=separators, sort_keys=sort_keys)},
 * written by Jackson with Python's layout: {@code ", "} and {@code ": "} without indent,
 * {@code ","} and newline + indent with one, non-ASCII characters as they are.
 */
public final class PyJson {
    private static final ObjectMapper MAPPER = new ObjectMapper();

    private PyJson() {}

    /** {@code json.dumps(value, ensure_ascii=False)}: {@code ", "} and {@code ": "} separators. */
    public static String dumps(Object value) {
        return dumps(value, null, null, null, false);
    }

    static String dumps(Object value, Integer indent, String itemSep, String keySep, boolean sortKeys) {
        String item = itemSep != null ? itemSep : (indent == null ? ", " : ",");
        String key = keySep != null ? keySep : ": ";
        try {
            // Keys are sorted here rather than by Jackson, which sorts only Map entries it writes itself.
            return MAPPER.writer(new PythonPrinter(indent, item, key)).writeValueAsString(sortKeys ? sorted(value) : value);
        } catch (JsonProcessingException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static Object sorted(Object value) {
        if (value instanceof Map<?, ?> m) {
            Map<String, Object> out = new TreeMap<>();
            m.forEach((k, v) -> out.put(String.valueOf(k), sorted(v)));
            return out;
        }
        if (value instanceof Iterable<?> it) {
            java.util.List<Object> out = new java.util.ArrayList<>();
            it.forEach(v -> out.add(sorted(v)));
            return out;
        }
        return value;
    }

    /** Python json.dumps spacing: separators between items and after keys, optional indent. */
    private static final class PythonPrinter extends DefaultPrettyPrinter {
        private final Integer indent;
        private final String itemSep;
        private final String keySep;

        PythonPrinter(Integer indent, String itemSep, String keySep) {
            super();
            this.indent = indent;
            this.itemSep = itemSep;
            this.keySep = keySep;
            DefaultIndenter indenter = indent == null ? null
                    : new DefaultIndenter(" ".repeat(indent), "\n");
            indentArraysWith(indenter == null ? new NopIndenter() : indenter);
            indentObjectsWith(indenter == null ? new NopIndenter() : indenter);
        }

        @Override
        public DefaultPrettyPrinter createInstance() {
            return new PythonPrinter(indent, itemSep, keySep);
        }

        @Override
        public void writeObjectFieldValueSeparator(JsonGenerator g) throws IOException {
            g.writeRaw(keySep);
        }

        @Override
        public void writeObjectEntrySeparator(JsonGenerator g) throws IOException {
            g.writeRaw(itemSep);
            _objectIndenter.writeIndentation(g, _nesting);
        }

        @Override
        public void writeArrayValueSeparator(JsonGenerator g) throws IOException {
            g.writeRaw(itemSep);
            _arrayIndenter.writeIndentation(g, _nesting);
        }

        @Override
        public void writeEndObject(JsonGenerator g, int nrOfEntries) throws IOException {
            if (!_objectIndenter.isInline()) {
                --_nesting;
            }
            if (nrOfEntries > 0) {
                _objectIndenter.writeIndentation(g, _nesting);
            }
            g.writeRaw('}');
        }

        @Override
        public void writeEndArray(JsonGenerator g, int nrOfValues) throws IOException {
            if (!_arrayIndenter.isInline()) {
                --_nesting;
            }
            if (nrOfValues > 0) {
                _arrayIndenter.writeIndentation(g, _nesting);
            }
            g.writeRaw(']');
        }
    }
}
