package io.radixkv.cli;

import io.radixkv.cli.report.RunMetrics;
import io.radixkv.cli.workload.Workload;
import java.io.PrintWriter;

/**
 * Replays a workload through the serving engine. The engine (io.radixkv.engine) is not in this
 * build yet: the implementation lives on branch {@code cli-engine} and replaces this class when
 * the engine is merged.
 */
final class BenchRunner {
    record Outcome(Workload workload, RunMetrics metrics) {}

    private BenchRunner() {}

    /** Why the engine would refuse these settings (a usage error), or null. */
    static String configError(BenchCommand.Settings s) {
        return null;
    }

    static Outcome run(BenchCommand.Settings s, boolean prefixCache, PrintWriter log) {
        throw new IllegalStateException("the serving engine (io.radixkv.engine) is not part of this build yet");
    }
}
