package io.radixkv.cli.report;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.function.ToDoubleFunction;

/**
 * The result table and JSON of {@code radixkv bench}: one run, or cache off and on side by
 * side with their ratios (on / off).
 *
 * @param workload workload name
 * @param description workload description line
 * @param runs one or two runs (off first when both)
 * @param idealPrefillRatio prompt tokens without cache / prompt tokens an ideal cache computes,
 *     or NaN when unknown
 */
public record BenchReport(String workload, String description, List<RunMetrics> runs, double idealPrefillRatio) {
    public BenchReport {
        runs = List.copyOf(runs);
        if (runs.isEmpty()) {
            throw new IllegalArgumentException("a report needs at least one run");
        }
    }

    Optional<RunMetrics> run(String prefixCache) {
        return runs.stream().filter(r -> r.prefixCache().equals(prefixCache)).findFirst();
    }

    /** The plain-text table. */
    public String table() {
        Optional<RunMetrics> off = run("off");
        Optional<RunMetrics> on = run("on");
        boolean both = off.isPresent() && on.isPresent() && runs.size() == 2;
        List<String[]> rows = new ArrayList<>();
        List<String> header = new ArrayList<>(List.of("metric"));
        for (RunMetrics r : runs) {
            header.add(r.label());
        }
        if (both) {
            header.add("on/off");
        }
        row(rows, both, "TTFT p50 (ms)", r -> r.ttft().p50(), "%.1f");
        row(rows, both, "TTFT p90 (ms)", r -> r.ttft().p90(), "%.1f");
        row(rows, both, "TTFT p99 (ms)", r -> r.ttft().p99(), "%.1f");
        row(rows, both, "ITL p50 (ms)", r -> r.itl().p50(), "%.2f");
        row(rows, both, "ITL p90 (ms)", r -> r.itl().p90(), "%.2f");
        row(rows, both, "ITL p99 (ms)", r -> r.itl().p99(), "%.2f");
        row(rows, both, "E2E p50 (ms)", r -> r.e2e().p50(), "%.1f");
        row(rows, both, "E2E p90 (ms)", r -> r.e2e().p90(), "%.1f");
        row(rows, both, "E2E p99 (ms)", r -> r.e2e().p99(), "%.1f");
        row(rows, both, "output tok/s", RunMetrics::outputTokPerS, "%.1f");
        row(rows, both, "prefix hit rate", r -> r.hitRate() * 100, "%.1f%%");
        row(rows, both, "prefill tokens computed", r -> r.computedPromptTokens(), "%.0f");
        row(rows, both, "pages used (peak, incl. cached)", r -> r.pagesUsed(), "%.0f");
        row(rows, both, "preemptions", r -> r.preemptions(), "%.0f");
        row(rows, both, "requests failed", r -> r.failed(), "%.0f");
        row(rows, both, "duration (s)", RunMetrics::durationSeconds, "%.1f");

        StringBuilder sb = new StringBuilder();
        sb.append("workload ").append(workload).append(": ").append(description).append('\n');
        int[] widths = new int[header.size()];
        for (int c = 0; c < widths.length; c++) {
            widths[c] = header.get(c).length();
            for (String[] r : rows) {
                widths[c] = Math.max(widths[c], r[c].length());
            }
        }
        appendRow(sb, header.toArray(String[]::new), widths);
        for (String[] r : rows) {
            appendRow(sb, r, widths);
        }
        for (RunMetrics r : runs) {
            for (Map.Entry<String, Integer> e : r.errors().entrySet()) {
                sb.append(String.format(Locale.ROOT, "failed (%s): %d x %s%n", r.label(), e.getValue(), e.getKey()));
            }
        }
        if (both) {
            RunMetrics a = off.get();
            RunMetrics b = on.get();
            sb.append(String.format(Locale.ROOT, "speedup with the prefix cache (off/on): TTFT p50 %.2fx, p99 %.2fx; "
                            + "prefill tokens computed off/on %.2fx (measured)",
                    a.ttft().p50() / b.ttft().p50(), a.ttft().p99() / b.ttft().p99(),
                    ratio(a.computedPromptTokens(), b.computedPromptTokens())));
            if (!Double.isNaN(idealPrefillRatio)) {
                sb.append(String.format(Locale.ROOT, ", %.2fx ideal", idealPrefillRatio));
            }
            sb.append('\n');
        }
        return sb.toString();
    }

    private static double ratio(double a, double b) {
        return b == 0 ? Double.NaN : a / b;
    }

    private void row(List<String[]> rows, boolean both, String name, ToDoubleFunction<RunMetrics> f, String fmt) {
        List<String> cells = new ArrayList<>();
        cells.add(name);
        for (RunMetrics r : runs) {
            double v = f.applyAsDouble(r);
            cells.add(v < 0 ? "n/a" : String.format(Locale.ROOT, fmt, v));
        }
        if (both) {
            double a = f.applyAsDouble(run("off").orElseThrow());
            double b = f.applyAsDouble(run("on").orElseThrow());
            cells.add(a > 0 && b >= 0 ? String.format(Locale.ROOT, "%.2f", b / a) : "-");
        }
        rows.add(cells.toArray(String[]::new));
    }

    private static void appendRow(StringBuilder sb, String[] cells, int[] widths) {
        for (int c = 0; c < cells.length; c++) {
            if (c == 0) {
                sb.append(String.format("%-" + widths[c] + "s", cells[c]));
            } else {
                sb.append("  ").append(String.format("%" + widths[c] + "s", cells[c]));
            }
        }
        sb.append('\n');
    }

    /** JSON per the CLI contract, plus extra fields (extensions only, never renames). */
    public ObjectNode toJson(ObjectMapper mapper) {
        ObjectNode root = mapper.createObjectNode();
        root.put("workload", workload);
        root.put("description", description);
        ArrayNode arr = root.putArray("runs");
        for (RunMetrics r : runs) {
            ObjectNode o = arr.addObject();
            o.put("prefix_cache", r.prefixCache());
            o.put("target", r.target());
            latency(o.putObject("ttft_ms"), r.ttft());
            latency(o.putObject("itl_ms"), r.itl());
            latency(o.putObject("e2e_ms"), r.e2e());
            o.put("output_tok_s", r.outputTokPerS());
            putKnown(o, "hit_rate", r.hitRate());
            o.put("requests", r.requests());
            o.put("failed", r.failed());
            o.put("prompt_tokens", r.promptTokens());
            putKnown(o, "cached_tokens", r.cachedTokens());
            o.put("output_tokens", r.outputTokens());
            putKnown(o, "pages_used", r.pagesUsed());
            putKnown(o, "total_pages", r.totalPages());
            putKnown(o, "preemptions", r.preemptions());
            o.put("duration_s", r.durationSeconds());
            ArrayNode errs = o.putArray("errors");
            r.errors().forEach((why, count) -> errs.addObject().put("error", why).put("count", count));
        }
        if (!Double.isNaN(idealPrefillRatio)) {
            root.put("ideal_prefill_ratio", idealPrefillRatio);
        }
        Optional<RunMetrics> off = run("off");
        Optional<RunMetrics> on = run("on");
        if (off.isPresent() && on.isPresent()) {
            ObjectNode ratios = root.putObject("ratio_on_off");
            ratios.put("ttft_p50", ratio(on.get().ttft().p50(), off.get().ttft().p50()));
            ratios.put("ttft_p99", ratio(on.get().ttft().p99(), off.get().ttft().p99()));
            ratios.put("itl_p50", ratio(on.get().itl().p50(), off.get().itl().p50()));
            ratios.put("e2e_p50", ratio(on.get().e2e().p50(), off.get().e2e().p50()));
            ratios.put("output_tok_s", ratio(on.get().outputTokPerS(), off.get().outputTokPerS()));
            ratios.put("prefill_tokens", ratio(on.get().computedPromptTokens(), off.get().computedPromptTokens()));
        }
        return root;
    }

    /** A measured value, or null where this kind of run cannot measure it (negative). */
    private static void putKnown(ObjectNode o, String field, double v) {
        if (v < 0) {
            o.putNull(field);
        } else {
            o.put(field, v);
        }
    }

    private static void putKnown(ObjectNode o, String field, long v) {
        if (v < 0) {
            o.putNull(field);
        } else {
            o.put(field, v);
        }
    }

    private static void latency(ObjectNode o, LatencySummary s) {
        o.put("p50", s.p50());
        o.put("p90", s.p90());
        o.put("p99", s.p99());
        o.put("mean", s.mean());
        o.put("max", s.max());
    }
}
