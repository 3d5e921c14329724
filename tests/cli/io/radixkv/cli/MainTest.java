package io.radixkv.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import picocli.CommandLine;

/** Top-level behaviour: help and version everywhere, exit codes, one-line errors. */
class MainTest {

    /** Every registered command, so that a new one is covered without editing this list. */
    static Stream<String> commands() {
        CommandLine cl = Main.commandLine(new PrintWriter(new StringWriter()), new PrintWriter(new StringWriter()));
        return Stream.concat(Stream.of(""), cl.getSubcommands().keySet().stream().filter(s -> !s.equals("help")));
    }

    /**
     * Help renders cleanly: picocli formats descriptions as format strings, and one with a bare
     * '%' (as "under 1% of" was) makes it print a warning per line to System.err, not to the
     * command line's err writer, so that stream is watched too.
     */
    @ParameterizedTest
    @MethodSource("commands")
    void helpOnEveryCommand(String sub) {
        ByteArrayOutputStream stray = new ByteArrayOutputStream();
        PrintStream saved = System.err;
        CliRun r;
        System.setErr(new PrintStream(stray, true, StandardCharsets.UTF_8));
        try {
            r = sub.isEmpty() ? CliRun.of("--help") : CliRun.of(sub, "--help");
        } finally {
            System.setErr(saved);
        }
        r.assertOk();
        assertTrue(r.out().startsWith("Usage: radixkv" + (sub.isEmpty() ? "" : " " + sub)), r.out());
        assertEquals("", r.err());
        assertEquals("", stray.toString(StandardCharsets.UTF_8), "written to System.err while rendering help");
        assertFalse(r.out().contains("%n") || r.out().contains("%%"), () -> "unformatted help text:\n" + r.out());
    }

    @Test
    void everyCommandHasHelp() {
        assertTrue(commands().toList().containsAll(List.of("", "info", "kernels", "simulate", "bench", "generate", "serve")),
                commands().toList().toString());
    }

    @Test
    void helpSubcommand() {
        CliRun r = CliRun.of("help", "simulate").assertOk();
        assertTrue(r.out().contains("--trace"), r.out());
    }

    @Test
    void version() {
        CliRun r = CliRun.of("--version").assertOk();
        assertTrue(r.out().startsWith("radixkv "), r.out());
        CliRun.of("info", "--version").assertOk();
    }

    @Test
    void missingSubcommandIsAUsageError() {
        CliRun r = CliRun.of().assertUsageError("missing subcommand");
        commands().filter(c -> !c.isEmpty()).forEach(c -> assertTrue(r.err().contains(c), () -> c + " not listed: " + r.err()));
    }

    @Test
    void unknownSubcommandIsAUsageError() {
        CliRun.of("frobnicate").assertUsageError("frobnicate");
    }

    @Test
    void unknownOptionIsAUsageError() {
        CliRun.of("--bogus").assertUsageError("--bogus");
        CliRun.of("info", "--bogus").assertUsageError("--bogus");
    }

    @Test
    void describeKeepsMessagesOnOneLine() {
        assertEquals("a; b", Main.oneLine("a\n  b\n"));
        assertEquals("bad value 3", Main.describe(new IllegalArgumentException("bad value 3")));
        assertEquals("UnsatisfiedLinkError: cannot load x; tried y",
                Main.describe(new UnsatisfiedLinkError("cannot load x\n tried y")));
        assertEquals("Symbol not found: f",
                Main.describe(new ExceptionInInitializerError(new java.util.NoSuchElementException("Symbol not found: f"))));
    }
}
