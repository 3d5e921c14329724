package io.radixkv.checkpoint.gguf;

import io.radixkv.checkpoint.CheckpointException;
import java.nio.file.Path;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The metadata key/value pairs of a GGUF file, in file order. Values are Java objects by kind:
 * the integer kinds (uint8 to int64) a {@link Long} (uint64 keeps its two's-complement bits),
 * float32 a {@link Float}, float64 a {@link Double}, bool a {@link Boolean}, string a
 * {@link String}, array an unmodifiable {@link List} of such values (arrays may nest). The typed
 * getters throw a {@link CheckpointException} naming the file and the key.
 *
 * @param file the file, for messages
 * @param values the values by key
 */
public record GgufMetadata(Path file, Map<String, Object> values) {
    public GgufMetadata {
        values = Collections.unmodifiableMap(new LinkedHashMap<>(values));
    }

    public boolean has(String key) {
        return values.containsKey(key);
    }

    public Set<String> keys() {
        return values.keySet();
    }

    /** The value of {@code key} or null. */
    public Object get(String key) {
        return values.get(key);
    }

    /** A string value. */
    public String string(String key) throws CheckpointException {
        if (values.get(key) instanceof String s) {
            return s;
        }
        throw wrongKind(key, "a string");
    }

    /** An integer value (any integer kind) that fits an int and is at least {@code min}. */
    public int integer(String key, int min) throws CheckpointException {
        if (values.get(key) instanceof Long l && l >= min && l <= Integer.MAX_VALUE) {
            return (int) (long) l;
        }
        throw wrongKind(key, "an integer >= " + min + " that fits 32 bits");
    }

    /** {@link #integer(String, int)} when the key is present, else {@code dflt}. */
    public int integer(String key, int min, int dflt) throws CheckpointException {
        return has(key) ? integer(key, min) : dflt;
    }

    /** A finite number of any kind (integer or float). */
    public double number(String key) throws CheckpointException {
        Object v = values.get(key);
        double d = switch (v) {
            case Float f -> f;
            case Double x -> x;
            case Long l -> l;
            case null, default -> Double.NaN;
        };
        if (!Double.isFinite(d)) {
            throw wrongKind(key, "a finite number");
        }
        return d;
    }

    /** {@link #number(String)} when the key is present, else {@code dflt}. */
    public double number(String key, double dflt) throws CheckpointException {
        return has(key) ? number(key) : dflt;
    }

    /** A bool value. */
    public boolean bool(String key) throws CheckpointException {
        if (values.get(key) instanceof Boolean b) {
            return b;
        }
        throw wrongKind(key, "a bool");
    }

    /** An array value. */
    public List<?> array(String key) throws CheckpointException {
        if (values.get(key) instanceof List<?> l) {
            return l;
        }
        throw wrongKind(key, "an array");
    }

    private CheckpointException wrongKind(String key, String expected) {
        Object v = values.get(key);
        String got = v == null ? "absent" : v instanceof List<?> l ? "an array of " + l.size() : String.valueOf(v);
        return new CheckpointException(file + ": metadata key " + key + " must be " + expected + ", got " + got);
    }
}
