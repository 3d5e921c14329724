package io.radixkv.cli;

import io.radixkv.cli.report.BenchReport;
import io.radixkv.cli.report.Charts;
import io.radixkv.cli.report.RunMetrics;
import io.radixkv.cli.workload.Workload;
import io.radixkv.cli.workload.Workloads;
import io.radixkv.kernels.DType;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code radixkv bench}: replays a synthetic workload through the engine and reports latencies. */
@Command(name = "bench", mixinStandardHelpOptions = true, versionProvider = Main.Version.class,
        description = {
            "Replays a synthetic workload through the engine with arrivals in (scaled) real time and prints "
                    + "TTFT, inter-token and end-to-end latency p50/p90/p99, output throughput, prefix-cache hit "
                    + "rate, pages used and preemptions; with --prefix-cache both, cache off and on side by side "
                    + "with their ratios (on/off).",
            "Workloads: prefix_caching, generated_shared_prefix, multi_turn, paged_attention, continuous_batching."})
final class BenchCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Option(names = "--workload", required = true, paramLabel = "NAME",
            description = "prefix_caching | generated_shared_prefix | multi_turn | paged_attention | continuous_batching")
    String workload;

    @Option(names = "--prefix-cache", paramLabel = "on|off|both", defaultValue = "on",
            description = "Prefix cache setting(s) to run (default ${DEFAULT-VALUE}).")
    String prefixCache;

    @Option(names = "--requests", paramLabel = "N", description = "Number of requests (default: the workload's).")
    Integer requests;

    @Option(names = "--rate", paramLabel = "R",
            description = "Arrival rate in requests/s (conversations/s for multi_turn); 'inf' sends one burst "
                    + "(default: the workload's).")
    String rate;

    @Option(names = "--max-tokens", paramLabel = "N", description = "Output tokens per request (default: the workload's).")
    Integer maxTokens;

    @Option(names = "--time-scale", paramLabel = "X", defaultValue = "1",
            description = "Multiply arrival times and think times by X (default ${DEFAULT-VALUE}).")
    double timeScale;

    @Mixin
    EngineOptions engineOptions = new EngineOptions();

    @Option(names = "--pages", paramLabel = "N", description = "KV pages in the pool (default: the engine's).")
    Integer pages;

    @Option(names = "--max-running", paramLabel = "N", description = "Most requests running at once (default: the engine's).")
    Integer maxRunning;

    @Option(names = "--max-batch-tokens", paramLabel = "N",
            description = "Tokens per engine step, decode + prefill chunks (default: the engine's).")
    Integer maxBatchTokens;

    @Option(names = "--seed", paramLabel = "S", defaultValue = "0", description = "Workload seed (default ${DEFAULT-VALUE}).")
    long seed;

    @Option(names = "--json", paramLabel = "FILE", description = "Also write the results as JSON.")
    Path json;

    @Option(names = "--plot", paramLabel = "FILE.png", description = "PNG of TTFT per request for each run.")
    Path plot;

    /** Validated settings of one bench invocation. */
    record Settings(String workloadName, Workloads.Options workloadOptions, List<String> prefixCacheRuns,
                    double timeScale, String model, DType kvDtype, int pageSize, Integer pages, String backend,
                    Integer maxRunning, Integer maxBatchTokens, DType weightsDtype) {
        /** The workload for a model with {@code vocab} token ids (ids stay below 32000 and below vocab). */
        Workload workload(int vocab) {
            Workloads.Options o = workloadOptions;
            int v = Math.min(vocab, Workloads.DEFAULT_VOCAB);
            return Workloads.generate(workloadName,
                    new Workloads.Options(o.requests(), o.rate(), o.seed(), v, o.maxTokens()));
        }
    }

    @Override
    public Integer call() {
        Settings s = settings();
        String why = BenchRunner.configError(s);
        if (why != null) {
            throw CliSupport.usage(spec, "invalid engine settings: " + why);
        }
        PrintWriter out = spec.commandLine().getOut();
        List<RunMetrics> runs = new ArrayList<>();
        Workload w = null;
        for (String pc : s.prefixCacheRuns()) {
            BenchRunner.Outcome o = BenchRunner.run(s, pc.equals("on"), spec.commandLine().getErr());
            runs.add(o.metrics());
            w = o.workload();
        }
        long prompt = w.promptTokens();
        // The engine caches generated tokens too, so a follow-up turn may reuse the reply.
        double ideal = (double) prompt / (prompt - w.idealCachedTokens(s.pageSize(), true));
        BenchReport report = new BenchReport(w.name(), w.description(), runs, ideal);
        out.print(report.table());
        if (json != null) {
            CliSupport.writeJson(json, report.toJson(CliSupport.JSON));
        }
        if (plot != null) {
            Charts.ttftByRequest(report, plot);
            out.println("wrote " + plot);
        }
        out.flush();
        return Main.EXIT_OK;
    }

    /** Validates every option (usage errors, exit 2) and generates the workload. */
    Settings settings() {
        String wl = CliSupport.requireOneOf(spec, "--workload", workload, Workloads.NAMES.toArray(String[]::new));
        String pc = CliSupport.requireOneOf(spec, "--prefix-cache", prefixCache, "on", "off", "both");
        int n = requests == null ? 0 : CliSupport.requirePositive(spec, "--requests", requests);
        int mt = maxTokens == null ? 0 : CliSupport.requirePositive(spec, "--max-tokens", maxTokens);
        double r = parseRate();
        CliSupport.requirePositive(spec, "--time-scale", timeScale);
        if (Double.isInfinite(timeScale)) {
            throw CliSupport.usage(spec, "invalid value for --time-scale: must be finite");
        }
        EngineOptions.Validated eo = engineOptions.validate(spec);
        if (pages != null) {
            CliSupport.requirePositive(spec, "--pages", pages);
        }
        if (maxRunning != null) {
            CliSupport.requirePositive(spec, "--max-running", maxRunning);
        }
        if (maxBatchTokens != null) {
            CliSupport.requirePositive(spec, "--max-batch-tokens", maxBatchTokens);
        }
        CliSupport.requireWritableTarget(spec, "--json", json);
        CliSupport.requireWritableTarget(spec, "--plot", plot);
        Workloads.Options wo = new Workloads.Options(n, r, seed, Workloads.DEFAULT_VOCAB, mt);
        List<String> runs = pc.equals("both") ? List.of("off", "on") : List.of(pc);
        return new Settings(wl, wo, runs, timeScale, eo.model(), eo.kvDtype(), eo.pageSize(), pages, eo.backend(),
                maxRunning, maxBatchTokens, eo.weightsDtype());
    }

    private double parseRate() {
        if (rate == null) {
            return 0;
        }
        String v = rate.trim().toLowerCase(Locale.ROOT);
        if (v.equals("inf") || v.equals("infinity")) {
            return Double.POSITIVE_INFINITY;
        }
        try {
            double d = Double.parseDouble(v);
            if (!(d > 0) || Double.isInfinite(d)) {
                throw CliSupport.usage(spec, "invalid value for --rate: " + rate + " (must be > 0, or inf)");
            }
            return d;
        } catch (NumberFormatException e) {
            throw CliSupport.usage(spec, "invalid value for --rate: '" + rate + "' (a number of requests/s, or inf)");
        }
    }
}
