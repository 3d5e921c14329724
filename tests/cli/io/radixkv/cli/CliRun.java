package io.radixkv.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.PrintWriter;
import java.io.StringWriter;

/** Runs the CLI in-process (picocli {@code execute}) and captures stdout, stderr and the exit code. */
record CliRun(int code, String out, String err) {

    static CliRun of(String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int code = Main.run(new PrintWriter(out, true), new PrintWriter(err, true), args);
        return new CliRun(code, out.toString(), err.toString());
    }

    /** Exit code 2, exactly one line on stderr naming the problem, no stack trace, nothing on stdout. */
    CliRun assertUsageError(String expectedInMessage) {
        assertEquals(Main.EXIT_USAGE, code, () -> "exit code; stderr: " + err + " stdout: " + out);
        assertOneLineError(expectedInMessage);
        assertEquals("", out, "stdout of a usage error");
        return this;
    }

    /** Exit code 1, exactly one line on stderr, no stack trace. */
    CliRun assertFailure(String expectedInMessage) {
        assertEquals(Main.EXIT_FAILURE, code, () -> "exit code; stderr: " + err);
        assertOneLineError(expectedInMessage);
        return this;
    }

    CliRun assertOk() {
        assertEquals(Main.EXIT_OK, code, () -> "exit code; stderr: " + err + " stdout: " + out);
        return this;
    }

    private void assertOneLineError(String expected) {
        String e = err.strip();
        assertFalse(e.isEmpty(), "stderr is empty");
        assertEquals(1, e.lines().count(), () -> "stderr must be one line, got:\n" + err);
        assertFalse(e.contains("Exception in") || e.contains("\tat ") || e.contains("at io.radixkv"),
                () -> "stack trace on stderr:\n" + err);
        assertTrue(e.toLowerCase().contains(expected.toLowerCase()),
                () -> "stderr should mention '" + expected + "', got: " + err);
    }
}
