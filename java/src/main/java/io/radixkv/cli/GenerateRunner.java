package io.radixkv.cli;

import java.io.PrintWriter;

/**
 * Runs {@code generate}'s prompts through one engine. The engine (io.radixkv.engine) is not in
 * this build yet: the implementation lives on branch {@code cli-engine} and replaces this class
 * when the engine is merged.
 */
final class GenerateRunner {
    private GenerateRunner() {}

    /** Thrown for a prompt token the model's vocabulary does not have (a usage error). */
    static final class BadTokenException extends RuntimeException {
        BadTokenException(String message) {
            super(message);
        }
    }

    static void run(GenerateCommand.Settings s, PrintWriter out) {
        throw new IllegalStateException("the serving engine (io.radixkv.engine) is not part of this build yet");
    }
}
