package io.radixkv.cli;

import io.radixkv.cli.report.BenchReport;
import io.radixkv.cli.report.Charts;
import io.radixkv.cli.report.RunMetrics;
import io.radixkv.cli.workload.Workload;
import io.radixkv.cli.workload.Workloads;
import io.radixkv.kernels.DType;
import io.radixkv.kernels.KernelBackend;
import io.radixkv.kernels.select.Backends;
import io.radixkv.model.QuantRecipe;
import java.io.PrintWriter;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.stream.Stream;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParseResult;
import picocli.CommandLine.Spec;

/** {@code radixkv bench}: replays a synthetic workload through the engine and reports latencies. */
@Command(name = "bench", mixinStandardHelpOptions = true, versionProvider = Main.Version.class,
        description = {
            "Replays a synthetic workload through the engine with arrivals in (scaled) real time and prints "
                    + "TTFT, inter-token and end-to-end latency p50/p90/p99, output throughput, prefix-cache hit "
                    + "rate, pages used and preemptions; with --prefix-cache both, cache off and on side by side "
                    + "with their ratios (on/off).",
            "With --url the same workload goes to a running OpenAI-compatible server as streamed /v1/completions "
                    + "(token-id prompts); TTFT and ITL come from the SSE chunks, the hit rate from "
                    + "usage.prompt_tokens_details.cached_tokens where reported; pages and preemptions are n/a.",
            "Workloads: prefix_caching, generated_shared_prefix, multi_turn, paged_attention, continuous_batching, "
                    + "llama_bench.",
            "llama_bench measures like llama.cpp's llama-bench: --repetitions requests of --prompt-len fresh tokens "
                    + "and exactly --gen-len output tokens, one at a time, prefix cache off; prints prefill (ppP) "
                    + "and decode (tgG) tokens/s as mean ± stddev and the decode weight stream (bytes/s) against "
                    + "the memory bandwidth measured in the same run (host read, or device copy on a GPU), with the CPU model; "
                    + "it warms up until the JIT is quiet (--warmup) and reports the JIT time during the timed repetitions."})
final class BenchCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Option(names = "--workload", required = true, paramLabel = "NAME",
            description = "prefix_caching | generated_shared_prefix | multi_turn | paged_attention | continuous_batching "
                    + "| llama_bench")
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

    @Option(names = "--max-duration", paramLabel = "S", defaultValue = "1800",
            description = "Longest a run may take, in seconds: a schedule (arrivals and think times, scaled) "
                    + "longer than this is refused, and requests unfinished by then count as failed "
                    + "(default ${DEFAULT-VALUE}).")
    double maxDuration;

    @Mixin
    EngineOptions engineOptions = new EngineOptions();

    @Option(names = "--url", paramLabel = "http://HOST:PORT",
            description = "Send the workload to this OpenAI-compatible server (radixkv serve, vLLM, SGLang, ...) "
                    + "as streamed /v1/completions with token-id prompts, instead of an engine in process; "
                    + "engine options do not apply.")
    URI url;

    @Option(names = "--served-model-name", paramLabel = "NAME",
            description = "With --url: the model to request (default: the server's only model).")
    String servedModelName;

    @Option(names = "--ignore-eos",
            description = "With --url: ask for exactly --max-tokens tokens (ignore_eos, a vLLM/SGLang extension).")
    boolean ignoreEos;

    @Option(names = "--pages", paramLabel = "N", description = "KV pages in the pool (default: the engine's).")
    Integer pages;

    @Option(names = "--max-running", paramLabel = "N", description = "Most requests running at once (default: the engine's).")
    Integer maxRunning;

    @Option(names = "--max-batch-tokens", paramLabel = "N",
            description = "Tokens per engine step, decode + prefill chunks (default: the engine's).")
    Integer maxBatchTokens;

    @Option(names = "--seed", paramLabel = "S", defaultValue = "0", description = "Workload seed (default ${DEFAULT-VALUE}).")
    long seed;

    @Option(names = "--prompt-len", paramLabel = "P",
            description = "llama_bench: prompt tokens per repetition (default " + Workloads.LLAMA_BENCH_PROMPT + ").")
    Integer promptLen;

    @Option(names = "--gen-len", paramLabel = "G",
            description = "llama_bench: output tokens per repetition, at least 2 (default "
                    + Workloads.LLAMA_BENCH_GEN + ").")
    Integer genLen;

    @Option(names = "--repetitions", paramLabel = "R", description = "llama_bench: repetitions (default 3).")
    Integer repetitions;

    @Option(names = "--warmup", paramLabel = "auto|N",
            description = "llama_bench: warm-up repetitions before the timed ones: auto (default) repeats one until "
                    + "two in a row each spend under 1%% of their time in JIT compilation (at most 30, or 120 s); "
                    + "N runs exactly N (1 warms up as llama-bench does, 0 not at all).")
    String warmup;

    @Option(names = "--json", paramLabel = "FILE", description = "Also write the results as JSON.")
    Path json;

    @Option(names = "--plot", paramLabel = "FILE.png", description = "PNG of TTFT per request for each run.")
    Path plot;

    /** Validated settings of one bench invocation. */
    record Settings(String workloadName, Workloads.Options workloadOptions, List<String> prefixCacheRuns,
                    double timeScale, double maxDurationSeconds, String model, DType kvDtype, int pageSize,
                    Integer pages, String backend, Integer maxRunning, Integer maxBatchTokens, DType weightsDtype,
                    boolean packWeights, QuantRecipe weightsQuant, URI url, String servedModelName, boolean ignoreEos, int promptLen,
                    int warmup) {
        /** The workload for a model with {@code vocab} token ids (ids stay below 32000 and below vocab). */
        Workload workload(int vocab) {
            Workloads.Options o = workloadOptions;
            int v = Math.min(vocab, Workloads.DEFAULT_VOCAB);
            if (workloadName.equals(LLAMA_BENCH)) {
                return Workloads.llamaBench(o.requests(), promptLen, o.maxTokens(), o.seed(), v);
            }
            return Workloads.generate(workloadName,
                    new Workloads.Options(o.requests(), o.rate(), o.seed(), v, o.maxTokens()));
        }
    }

    /** Distinct failure reasons printed per run (all of them go to the JSON). */
    private static final int SHOWN_REASONS = 5;

    /** Options besides the mixin's that reach the engine (named when the engine refuses a setting). */
    static final String[] ENGINE_OPTIONS = {"--pages", "--max-running", "--max-batch-tokens"};

    static final String LLAMA_BENCH = "llama_bench";

    /** Options that only llama_bench takes, and the ones it replaces or cannot honour. */
    private static final List<String> LLAMA_BENCH_ONLY = List.of("--prompt-len", "--gen-len", "--repetitions",
            "--warmup");
    private static final List<String> NOT_WITH_LLAMA_BENCH = List.of("--requests", "--rate", "--max-tokens", "--url",
            "--time-scale");

    @Override
    public Integer call() {
        Settings s = settings();
        if (s.url() != null) {
            BenchRunner.Outcome o = HttpBench.run(s, spec.commandLine().getErr());
            // The server's page size is unknown, so is the ideal prefill ratio.
            return report(new BenchReport(o.workload().name(), o.workload().description(), List.of(o.metrics()),
                    Double.NaN), null);
        }
        EngineOptions.check(spec, () -> BenchRunner.engineConfig(s, true), ENGINE_OPTIONS);
        List<RunMetrics> runs = new ArrayList<>();
        Workload w = null;
        BenchRunner.Outcome o = null;
        for (String pc : s.prefixCacheRuns()) {
            o = BenchRunner.run(spec, s, pc.equals("on"), spec.commandLine().getErr());
            runs.add(o.metrics());
            w = o.workload();
        }
        long prompt = w.promptTokens();
        // The engine caches generated tokens too, so a follow-up turn may reuse the reply.
        double ideal = (double) prompt / (prompt - w.idealCachedTokens(s.pageSize(), true));
        BenchReport report = new BenchReport(w.name(), w.description(), runs, ideal);
        if (!s.workloadName().equals(LLAMA_BENCH)) {
            return report(report, null);
        }
        // the baseline of the backend the engine ran on (a second instance, made after the run)
        try (KernelBackend b = Backends.create(s.backend())) {
            return report(report, LlamaBench.of(o.records(), s.promptLen(), s.workloadOptions().maxTokens(), o.model(),
                    o.weights(), BandwidthCheck.memoryBaseline(b, readBufferBytes()), b.name())
                    .withJit(o.warmup(), o.timedJitMillis()));
        }
    }

    /** The read-bandwidth buffer: kernels' default (past the LLC), capped at a quarter of available memory. */
    private static long readBufferBytes() {
        return KernelsCommand.capToAvailable(KernelsCommand.defaultBytes());
    }

    /**
     * Prints the table, writes JSON and plot, and reports failures: each run's reasons on
     * stderr; a run in which every request failed measured nothing, so the exit code is 1.
     */
    private int report(BenchReport report, LlamaBench llama) {
        PrintWriter out = spec.commandLine().getOut();
        out.print(report.table());
        if (llama != null) {
            out.print(llama.table());
        }
        if (json != null) {
            var root = report.toJson(CliSupport.JSON);
            if (llama != null) {
                root.set(LLAMA_BENCH, llama.toJson(CliSupport.JSON));
            }
            CliSupport.writeJson(json, root);
        }
        if (plot != null) {
            Charts.ttftByRequest(report, plot);
            out.println("wrote " + plot);
        }
        out.flush();
        PrintWriter err = spec.commandLine().getErr();
        String allFailed = null;
        for (RunMetrics m : report.runs()) {
            if (m.failed() == 0) {
                continue;
            }
            String summary = m.failed() + " of " + m.requests() + " requests failed (" + m.label() + ")";
            err.println("bench: " + summary + ":");
            m.errors().entrySet().stream().limit(SHOWN_REASONS)
                    .forEach(e -> err.println("bench:   " + e.getValue() + " x " + e.getKey()));
            if (m.errors().size() > SHOWN_REASONS) {
                err.println("bench:   ... " + (m.errors().size() - SHOWN_REASONS) + " more distinct reasons"
                        + (json != null ? " in " + json : " (all in --json)"));
            }
            if (m.failed() == m.requests() && allFailed == null) {
                allFailed = summary + ", first reason: " + m.errors().keySet().iterator().next();
            }
        }
        err.flush();
        if (allFailed != null) {
            throw new IllegalStateException(allFailed);
        }
        return Main.EXIT_OK;
    }

    /** Validates every option (usage errors, exit 2) and generates the workload. */
    Settings settings() {
        String wl = CliSupport.requireOneOf(spec, "--workload", workload, Workloads.NAMES.toArray(String[]::new));
        String pc = CliSupport.requireOneOf(spec, "--prefix-cache", prefixCache, "on", "off", "both");
        boolean llama = wl.equals(LLAMA_BENCH);
        checkLlamaBenchOptions(llama);
        int n = requests == null ? 0 : CliSupport.requirePositive(spec, "--requests", requests);
        int mt = maxTokens == null ? 0 : CliSupport.requirePositive(spec, "--max-tokens", maxTokens);
        int pl = 0;
        if (llama) {
            n = repetitions == null ? 3 : CliSupport.requirePositive(spec, "--repetitions", repetitions);
            pl = promptLen == null ? Workloads.LLAMA_BENCH_PROMPT
                    : CliSupport.requirePositive(spec, "--prompt-len", promptLen);
            mt = genLen == null ? Workloads.LLAMA_BENCH_GEN : genLen;
            if (mt < 2) {
                throw CliSupport.invalid(spec, "--gen-len", mt, "must be >= 2 (decode speed is over tokens 2..G)");
            }
        }
        int warm = parseWarmup();
        double r = parseRate();
        CliSupport.requirePositiveFinite(spec, "--time-scale", timeScale);
        CliSupport.requirePositiveFinite(spec, "--max-duration", maxDuration);
        EngineOptions.Validated eo = engineOptions.validate(spec);
        CliSupport.requirePositiveIfSet(spec, "--pages", pages);
        CliSupport.requirePositiveIfSet(spec, "--max-running", maxRunning);
        CliSupport.requirePositiveIfSet(spec, "--max-batch-tokens", maxBatchTokens);
        CliSupport.requireWritableTarget(spec, "--json", json);
        CliSupport.requireWritableTarget(spec, "--plot", plot);
        // The workload is held once, plus the prompts in flight.
        if (!llama) {
            CliSupport.requireFitsInHeap(spec, wl, requests, mt, 2);
        }
        Workloads.Options wo = new Workloads.Options(n, r, seed, Workloads.DEFAULT_VOCAB, mt);
        if (!llama) {
            requireScheduleFits(Workloads.generate(wl, wo));
        }
        List<String> runs = llama ? List.of("off") : pc.equals("both") ? List.of("off", "on") : List.of(pc);
        checkTarget();
        return new Settings(wl, wo, runs, timeScale, maxDuration, eo.model(), eo.kvDtype(), eo.pageSize(), pages,
                eo.backend(), maxRunning, maxBatchTokens, eo.weightsDtype(), eo.packWeights(), eo.weightsQuant(), url,
                servedModelName,
                ignoreEos, pl, warm);
    }

    /** --warmup: auto (the default) or a count >= 0. */
    private int parseWarmup() {
        String v = warmup == null ? "auto" : warmup.trim().toLowerCase(Locale.ROOT);
        if (v.equals("auto")) {
            return JitWarmup.AUTO;
        }
        try {
            int n = Integer.parseInt(v);
            if (n >= 0) {
                return n;
            }
        } catch (NumberFormatException e) {
            // falls through to the usage error
        }
        throw CliSupport.invalid(spec, "--warmup", "'" + warmup + "'", "expected auto or a count >= 0");
    }

    /**
     * llama_bench runs with the prefix cache off and its own length options; the options of
     * the serving workloads would silently not apply, so they are refused (and the other way round).
     */
    private void checkLlamaBenchOptions(boolean llama) {
        ParseResult pr = spec.commandLine().getParseResult();
        for (String o : llama ? NOT_WITH_LLAMA_BENCH : LLAMA_BENCH_ONLY) {
            if (pr.hasMatchedOption(o)) {
                throw CliSupport.usage(spec, o + (llama ? " does not apply to --workload llama_bench"
                        : " applies to --workload llama_bench only"));
            }
        }
        if (llama && pr.hasMatchedOption("--prefix-cache") && !prefixCache.trim().equalsIgnoreCase("off")) {
            throw CliSupport.invalid(spec, "--prefix-cache", prefixCache,
                    "llama_bench runs with the prefix cache off (a fresh prompt each repetition)");
        }
    }

    /**
     * With --url the server is configured elsewhere: an engine option would silently not apply,
     * so it is refused; without --url the HTTP-only options are.
     */
    private void checkTarget() {
        ParseResult pr = spec.commandLine().getParseResult();
        if (url == null) {
            for (String o : List.of("--served-model-name", "--ignore-eos")) {
                if (pr.hasMatchedOption(o)) {
                    throw CliSupport.usage(spec, o + " applies to --url only");
                }
            }
            return;
        }
        String scheme = url.getScheme() == null ? "" : url.getScheme().toLowerCase(Locale.ROOT);
        if (!(scheme.equals("http") || scheme.equals("https")) || url.getHost() == null || url.getQuery() != null
                || url.getFragment() != null) {
            throw CliSupport.invalid(spec, "--url", "'" + url + "'", "expected http://HOST:PORT");
        }
        for (String o : Stream.concat(Stream.concat(EngineOptions.NAMES.stream(), Stream.of(ENGINE_OPTIONS)),
                Stream.of("--prefix-cache")).toList()) {
            if (pr.hasMatchedOption(o)) {
                throw CliSupport.usage(spec, o + " does not apply with --url: the server at " + url
                        + " has its own settings");
            }
        }
        if (servedModelName != null && servedModelName.isBlank()) {
            throw CliSupport.invalid(spec, "--served-model-name", "''", "empty");
        }
    }

    /**
     * Refuses a schedule that cannot finish within --max-duration even if every request took no
     * time: arrivals at --rate and think times, times --time-scale. Names the option that
     * stretched it.
     */
    private void requireScheduleFits(Workload w) {
        double span = w.scheduleSeconds() * timeScale;
        if (span <= maxDuration) {
            return;
        }
        String why = String.format(Locale.ROOT, "%d requests arrive over %.0f s at --time-scale %s, more than "
                + "--max-duration %s s", w.size(), span, timeScale, maxDuration);
        if (rate != null) {
            throw CliSupport.invalid(spec, "--rate", rate, why);
        }
        if (timeScale != 1) {
            throw CliSupport.invalid(spec, "--time-scale", timeScale, why);
        }
        throw CliSupport.invalid(spec, "--requests", requests, why);
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
                throw CliSupport.invalid(spec, "--rate", rate, "must be > 0, or inf");
            }
            return d;
        } catch (NumberFormatException e) {
            throw CliSupport.invalid(spec, "--rate", "'" + rate + "'", "a number of requests/s, or inf");
        }
    }
}
