package io.radixkv.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Top-level behaviour: help and version everywhere, exit codes, one-line errors. */
class MainTest {

    @ParameterizedTest
    @ValueSource(strings = {"", "info", "kernels", "simulate", "bench", "generate"})
    void helpOnEveryCommand(String sub) {
        CliRun r = sub.isEmpty() ? CliRun.of("--help") : CliRun.of(sub, "--help");
        r.assertOk();
        assertTrue(r.out().startsWith("Usage: radixkv" + (sub.isEmpty() ? "" : " " + sub)), r.out());
        assertEquals("", r.err());
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
        CliRun.of().assertUsageError("missing subcommand");
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
