package io.radixkv.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Locale;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.ParameterException;

/** Small helpers shared by the subcommands: option validation and JSON output. */
final class CliSupport {
    static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);

    private CliSupport() {}

    static ParameterException usage(CommandSpec spec, String message) {
        return new ParameterException(spec.commandLine(), message);
    }

    /** The lower-cased value when it is one of {@code allowed}, else a usage error naming it. */
    static String requireOneOf(CommandSpec spec, String option, String value, String... allowed) {
        String v = value == null ? "" : value.trim().toLowerCase(Locale.ROOT);
        for (String a : allowed) {
            if (a.equals(v)) {
                return a;
            }
        }
        throw usage(spec, "invalid value for " + option + ": '" + value + "' (expected one of "
                + String.join(", ", allowed) + ")");
    }

    static int requirePositive(CommandSpec spec, String option, int value) {
        if (value <= 0) {
            throw usage(spec, "invalid value for " + option + ": " + value + " (must be > 0)");
        }
        return value;
    }

    static double requirePositive(CommandSpec spec, String option, double value) {
        if (!(value > 0) || Double.isNaN(value)) {
            throw usage(spec, "invalid value for " + option + ": " + value + " (must be > 0)");
        }
        return value;
    }

    /** An existing readable regular file, else a usage error. */
    static Path requireReadableFile(CommandSpec spec, String option, Path p) {
        if (!Files.isRegularFile(p) || !Files.isReadable(p)) {
            throw usage(spec, "invalid value for " + option + ": '" + p + "' is not a readable file");
        }
        return p;
    }

    /** An output path whose parent directory exists, else a usage error (checked before any work). */
    static Path requireWritableTarget(CommandSpec spec, String option, Path p) {
        if (p == null) {
            return null;
        }
        Path parent = p.toAbsolutePath().getParent();
        if (parent != null && !Files.isDirectory(parent)) {
            throw usage(spec, "invalid value for " + option + ": directory '" + parent + "' does not exist");
        }
        if (Files.isDirectory(p)) {
            throw usage(spec, "invalid value for " + option + ": '" + p + "' is a directory");
        }
        return p;
    }

    /** Writes pretty-printed JSON (with a trailing newline). */
    static void writeJson(Path file, JsonNode node) {
        try {
            Files.writeString(file, JSON.writeValueAsString(node) + System.lineSeparator());
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write " + file + ": " + e.getMessage(), e);
        }
    }

    static String json(JsonNode node) {
        try {
            return JSON.writeValueAsString(node);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Comma-separated positive integers ("1,2,3"), else a usage error naming the bad element. */
    static int[] parsePositiveInts(CommandSpec spec, String option, String list) {
        if (list == null || list.isBlank()) {
            throw usage(spec, "invalid value for " + option + ": empty list");
        }
        return Arrays.stream(list.split(",")).map(String::trim).mapToInt(s -> {
            try {
                int v = Integer.parseInt(s);
                if (v <= 0) {
                    throw usage(spec, "invalid value for " + option + ": " + v + " (must be > 0)");
                }
                return v;
            } catch (NumberFormatException e) {
                throw usage(spec, "invalid value for " + option + ": '" + s + "' is not an integer");
            }
        }).toArray();
    }

    /** True when stderr is an interactive terminal (progress bars only then). */
    static boolean interactive() {
        java.io.Console c = System.console();
        return c != null && c.isTerminal();
    }
}
