package io.radixkv.cli;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.radixkv.cache.EvictionPolicy;
import io.radixkv.cli.report.Charts;
import io.radixkv.cli.sim.CacheSimulator;
import io.radixkv.cli.sim.TraceReader;
import io.radixkv.cli.sim.TraceRequest;
import io.radixkv.cli.workload.Workload;
import io.radixkv.cli.workload.WorkloadRequest;
import io.radixkv.cli.workload.Workloads;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.function.IntConsumer;
import me.tongfei.progressbar.ProgressBar;
import me.tongfei.progressbar.ProgressBarBuilder;
import me.tongfei.progressbar.ProgressBarStyle;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code radixkv simulate}: cache-only trace replay for sizing a prefix cache. */
@Command(name = "simulate", mixinStandardHelpOptions = true, versionProvider = Main.Version.class,
        description = {
            "Cache-only replay of a request trace (no model compute), for sizing a prefix cache.",
            "The trace is JSON lines, one request each: {\"tokens\":[...], \"output\":[...], \"namespace\":\"...\", "
                    + "\"priority\":n} (all but tokens optional; priority feeds --policy priority). Requests run one at a time in file order: match, reuse per "
                    + "the full-match rule (a fully matched prompt recomputes its last page), take pages for prompt + "
                    + "output (evicting when short; a request that cannot fit is rejected), insert the prompt "
                    + "(plus the output with --cache-output), release. A logical clock makes results deterministic.",
            "Prints {\"requests\", \"prompt_tokens\", \"hit_tokens\", \"hit_rate\", \"evicted_pages\", \"rejected\"} "
                    + "(hit_tokens = prompt tokens whose KV is reused); with --sweep-pages, hit rate against cache size."})
final class SimulateCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Option(names = "--trace", paramLabel = "FILE", description = "JSON-lines trace.")
    Path trace;

    @Option(names = "--workload", paramLabel = "NAME",
            description = "Instead of --trace: a bench workload as the trace (prefix_caching, generated_shared_prefix, "
                    + "multi_turn, paged_attention, continuous_batching); outputs are the tokens a later turn "
                    + "repeats (multi_turn), else random.")
    String workload;

    @Option(names = "--seed", paramLabel = "S", defaultValue = "0", description = "Seed of --workload (default ${DEFAULT-VALUE}).")
    long seed;

    @Option(names = "--requests", paramLabel = "N", description = "Requests of --workload (default: the workload's).")
    Integer requestCount;

    @Option(names = "--page-size", paramLabel = "P", defaultValue = "16",
            description = "Tokens per page (default ${DEFAULT-VALUE}).")
    int pageSize;

    @Option(names = "--pages", paramLabel = "N",
            description = "Pages in the pool (default: enough for the whole trace, so nothing is evicted).")
    Integer pages;

    @Option(names = "--policy", paramLabel = "lru|lfu|fifo|mru|filo|priority", defaultValue = "lru",
            description = "Eviction policy (default ${DEFAULT-VALUE}).")
    String policy;

    @Option(names = "--cache-output", description = "Insert generated tokens too (multi-turn reuse).")
    boolean cacheOutput;

    @Option(names = "--json", paramLabel = "FILE", description = "Also write the result as JSON.")
    Path json;

    @Option(names = "--sweep-pages", paramLabel = "a,b,c",
            description = "Replay once per pool size and print hit rate against cache size.")
    String sweepPages;

    @Option(names = "--plot", paramLabel = "FILE.png", description = "PNG of hit rate against cache size (needs --sweep-pages).")
    Path plot;

    @Override
    public Integer call() {
        CliSupport.requirePositive(spec, "--page-size", pageSize);
        CliSupport.requirePositiveIfSet(spec, "--pages", pages);
        EvictionPolicy pol = EvictionPolicy.valueOf(CliSupport.requireOneOf(spec, "--policy", policy,
                Arrays.stream(EvictionPolicy.values()).map(p -> p.name().toLowerCase(Locale.ROOT)).toList())
                .toUpperCase(Locale.ROOT));
        int[] sweep = sweepPages == null ? null : CliSupport.parseInts(spec, "--sweep-pages", sweepPages, 1);
        if (sweep != null && pages != null) {
            throw CliSupport.usage(spec, "--pages and --sweep-pages are mutually exclusive");
        }
        if (plot != null && sweep == null) {
            throw CliSupport.usage(spec, "--plot needs --sweep-pages");
        }
        if ((trace == null) == (workload == null)) {
            throw CliSupport.usage(spec, "give exactly one of --trace FILE or --workload NAME");
        }
        String wl = null;
        if (workload != null) {
            wl = CliSupport.requireOneOf(spec, "--workload", workload, Workloads.NAMES.toArray(String[]::new));
            CliSupport.requirePositiveIfSet(spec, "--requests", requestCount);
            // Workload, trace and cache each hold the token ids.
            CliSupport.requireFitsInHeap(spec, wl, requestCount, 0, 3);
        } else {
            CliSupport.requireReadableFile(spec, "--trace", trace);
            if (requestCount != null) {
                throw CliSupport.usage(spec, "--requests applies to --workload only");
            }
        }
        CliSupport.requireWritableTarget(spec, "--json", json);
        CliSupport.requireWritableTarget(spec, "--plot", plot);

        List<TraceRequest> requests = wl != null ? traceOf(Workloads.generate(wl, new Workloads.Options(
                requestCount == null ? 0 : requestCount, 0, seed, Workloads.DEFAULT_VOCAB, 0)), seed)
                : TraceReader.read(trace);
        String source = wl != null ? "workload " + wl : trace.toString();
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        int[] sizes = sweep != null ? sweep : new int[] {pages != null ? pages : pagesForWholeTrace(requests)};
        long total = (long) sizes.length * requests.size();
        try (ProgressBar bar = progressBar(total)) {
            IntConsumer step = bar == null ? i -> { } : i -> bar.step();
            if (sweep == null) {
                CacheSimulator.Result r = CacheSimulator.run(config(sizes[0], pol), requests, step);
                err.printf("simulate: %s, page size %d, %d pages%s, policy %s, %s%n", source, pageSize, sizes[0],
                        pages == null ? " (whole trace)" : "", pol.name().toLowerCase(Locale.ROOT),
                        cacheOutput ? "prompts + outputs cached" : "prompts cached");
                err.flush();
                ObjectNode node = toJson(r);
                out.println(CliSupport.json(node));
                if (json != null) {
                    CliSupport.writeJson(json, node);
                }
            } else {
                ObjectNode root = CliSupport.JSON.createObjectNode();
                root.put("page_size", pageSize);
                root.put("policy", pol.name().toLowerCase(Locale.ROOT));
                root.put("cache_output", cacheOutput);
                ArrayNode arr = root.putArray("sweep");
                double[] rates = new double[sizes.length];
                out.printf("%10s %10s %12s %12s %10s%n", "pages", "hit_rate", "hit_tokens", "evicted", "rejected");
                for (int i = 0; i < sizes.length; i++) {
                    CacheSimulator.Result r = CacheSimulator.run(config(sizes[i], pol), requests, step);
                    rates[i] = r.hitRate();
                    arr.add(toJson(r));
                    out.printf(Locale.ROOT, "%10d %9.2f%% %12d %12d %10d%n", sizes[i], r.hitRate() * 100,
                            r.hitTokens(), r.evictedPages(), r.rejected());
                }
                if (json != null) {
                    CliSupport.writeJson(json, root);
                }
                if (plot != null) {
                    Charts.hitRateByPages(String.format(Locale.ROOT, "%s: hit rate vs cache size (page size %d, %s)",
                            wl != null ? wl : trace.getFileName(), pageSize, pol.name().toLowerCase(Locale.ROOT)), sizes, rates, plot);
                    out.println("wrote " + plot);
                }
            }
        }
        out.flush();
        return Main.EXIT_OK;
    }

    private CacheSimulator.Config config(int n, EvictionPolicy pol) {
        return new CacheSimulator.Config(pageSize, n, pol, cacheOutput);
    }

    /**
     * A workload as a trace, in request order. A request's output is the reply its
     * conversation's next turn repeats ({@link WorkloadRequest#replyTokens}), so --cache-output
     * models multi-turn reuse; otherwise it is {@code maxTokens} random ids.
     */
    static List<TraceRequest> traceOf(Workload w, long seed) {
        SplittableRandom rnd = new SplittableRandom(seed ^ 0x5deece66dL);
        int[][] outputs = new int[w.size()][];
        for (WorkloadRequest r : w.requests()) {
            if (r.replyTokens() > 0 && outputs[r.after()] == null) {
                int from = w.requests().get(r.after()).promptLength();
                outputs[r.after()] = Arrays.copyOfRange(r.prompt(), from, from + r.replyTokens());
            }
        }
        List<TraceRequest> trace = new ArrayList<>(w.size());
        for (WorkloadRequest r : w.requests()) {
            int[] out = outputs[r.id()];
            if (out == null) {
                out = rnd.ints(r.maxTokens(), 1, Workloads.DEFAULT_VOCAB).toArray();
            }
            trace.add(new TraceRequest(r.prompt(), out, null));
        }
        return trace;
    }

    /** Enough pages to hold every request's whole sequence at once: nothing is ever evicted. */
    private int pagesForWholeTrace(List<TraceRequest> requests) {
        long sum = 0;
        for (TraceRequest r : requests) {
            sum += Math.ceilDiv((long) r.tokens().length + r.output().length, pageSize);
        }
        return (int) Math.min(Integer.MAX_VALUE - 8, Math.max(1, sum));
    }

    static ObjectNode toJson(CacheSimulator.Result r) {
        ObjectNode o = CliSupport.JSON.createObjectNode();
        o.put("requests", r.requests());
        o.put("prompt_tokens", r.promptTokens());
        o.put("hit_tokens", r.hitTokens());
        o.put("hit_rate", r.hitRate());
        o.put("evicted_pages", r.evictedPages());
        o.put("rejected", r.rejected());
        o.put("pages", r.config().pages());
        o.put("page_size", r.config().pageSize());
        o.put("policy", r.config().policy().name().toLowerCase(Locale.ROOT));
        o.put("cached_pages", r.cachedPages());
        return o;
    }

    /** A progress bar on stderr for long replays on a terminal; null otherwise. */
    private static ProgressBar progressBar(long steps) {
        if (steps < 200_000 || !CliSupport.interactive()) {
            return null;
        }
        return new ProgressBarBuilder().setTaskName("simulate").setInitialMax(steps)
                .setStyle(ProgressBarStyle.ASCII).setUpdateIntervalMillis(250).continuousUpdate().build();
    }
}
