package io.radixkv.cli;

import java.io.PrintWriter;

/** Runs {@code generate}'s prompts through one engine and prints the outputs and stats. */
final class GenerateRunner {
    private GenerateRunner() {}

    static void run(GenerateCommand.Settings settings, PrintWriter out) {
        throw new IllegalStateException("the serving engine (io.radixkv.engine) is not part of this build yet");
    }
}
