package io.radixkv.cli;

import io.radixkv.cli.report.RunMetrics;
import java.io.PrintWriter;

/** Replays a workload through the serving engine (io.radixkv.engine) and measures every request. */
final class BenchRunner {
    private BenchRunner() {}

    static RunMetrics run(BenchCommand.Settings settings, boolean prefixCache, PrintWriter log) {
        throw new IllegalStateException("the serving engine (io.radixkv.engine) is not part of this build yet");
    }
}
