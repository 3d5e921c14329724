package io.radixkv.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import io.radixkv.cli.workload.Workloads;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Locale;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Model.OptionSpec;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.ParseResult;

/** Small helpers shared by the subcommands: option validation and JSON output. */
final class CliSupport {
    static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);

    private CliSupport() {}

    static ParameterException usage(CommandSpec spec, String message) {
        return new ParameterException(spec.commandLine(), message);
    }

    /** The lower-cased value when it is one of {@code allowed}, else a usage error naming it. */
    static String requireOneOf(CommandSpec spec, String option, String value, String... allowed) {
        return requireOneOf(spec, option, value, List.of(allowed));
    }

    static String requireOneOf(CommandSpec spec, String option, String value, List<String> allowed) {
        String v = value == null ? "" : value.trim().toLowerCase(Locale.ROOT);
        for (String a : allowed) {
            if (a.equals(v)) {
                return a;
            }
        }
        throw invalid(spec, option, "'" + value + "'", "expected one of " + String.join(", ", allowed));
    }

    /** "invalid value for OPTION: VALUE (why)": the one shape of every option error. */
    static ParameterException invalid(CommandSpec spec, String option, Object value, String why) {
        return usage(spec, "invalid value for " + option + ": " + value + " (" + why + ")");
    }

    static int requirePositive(CommandSpec spec, String option, int value) {
        if (value <= 0) {
            throw invalid(spec, option, value, "must be > 0");
        }
        return value;
    }

    /** An optional positive integer option: null stays null. */
    static Integer requirePositiveIfSet(CommandSpec spec, String option, Integer value) {
        return value == null ? null : requirePositive(spec, option, value);
    }

    /** A positive, finite number. */
    static double requirePositiveFinite(CommandSpec spec, String option, double value) {
        if (!(value > 0) || Double.isInfinite(value)) {
            throw invalid(spec, option, value, "must be > 0 and finite");
        }
        return value;
    }

    /**
     * The options of {@code names} given on the command line with their values, as typed
     * ("--pages 1 --page-size 16"), or "defaults": names the settings behind an error that the
     * engine, not the CLI, detected.
     */
    static String given(CommandSpec spec, Collection<String> names) {
        ParseResult pr = spec.commandLine().getParseResult();
        List<String> parts = new ArrayList<>();
        if (pr != null) {
            for (OptionSpec o : pr.matchedOptions()) {
                if (names.contains(o.longestName())) {
                    parts.add(o.longestName() + " " + String.join(",", o.originalStringValues()));
                }
            }
        }
        return parts.isEmpty() ? "defaults" : String.join(" ", parts);
    }

    /**
     * Refuses, before anything is generated, a request count whose token ids (up to
     * {@code copies} copies of the workload: trace, prompts in flight, cache) would take more
     * than half of the Java heap: such a run would thrash in GC or die out of memory later.
     */
    static void requireFitsInHeap(CommandSpec spec, String workload, Integer requests, int maxTokens, int copies) {
        if (requests == null) {
            return;
        }
        long bytes = (long) requests * Workloads.tokensPerRequestBound(workload, maxTokens) * Integer.BYTES * copies;
        long heap = Runtime.getRuntime().maxMemory();
        if (bytes > heap / 2) {
            throw invalid(spec, "--requests", requests, String.format(Locale.ROOT,
                    "%s needs up to %.1f GiB for its token ids, more than half of the %.1f GiB Java heap",
                    workload, bytes / GIB, heap / GIB));
        }
    }

    private static final double GIB = 1024.0 * 1024 * 1024;

    /** An existing readable regular file, else a usage error. */
    static Path requireReadableFile(CommandSpec spec, String option, Path p) {
        if (!Files.isRegularFile(p) || !Files.isReadable(p)) {
            throw invalid(spec, option, "'" + p + "'", "not a readable file");
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

    /**
     * Comma-separated integers ("1,2,3"), each at least {@code min}; an empty element ("1,,2",
     * "1,2,") or a non-integer is a usage error naming the element.
     */
    static int[] parseInts(CommandSpec spec, String option, String list, int min) {
        if (list == null || list.isBlank()) {
            throw invalid(spec, option, "''", "empty list");
        }
        String[] parts = list.split(",", -1);
        int[] values = new int[parts.length];
        for (int i = 0; i < parts.length; i++) {
            String t = parts[i].trim();
            try {
                values[i] = Integer.parseInt(t);
            } catch (NumberFormatException e) {
                throw invalid(spec, option, "'" + list + "'", t.isEmpty() ? "element " + (i + 1) + " is empty"
                        : "'" + t + "' is not an integer");
            }
            if (values[i] < min) {
                throw invalid(spec, option, "'" + list + "'", values[i] + " is below " + min);
            }
        }
        return values;
    }

    /** True when stderr is an interactive terminal (progress bars only then). */
    static boolean interactive() {
        java.io.Console c = System.console();
        return c != null && c.isTerminal();
    }
}
