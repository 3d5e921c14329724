package io.radixkv.cli.workload;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;

/**
 * Synthetic serving workloads, deterministic from a seed. Token ids are drawn uniformly from
 * {@code [1, vocab)} (0 is left out: models commonly reserve it).
 *
 * <ul>
 *   <li>{@code prefix_caching}: 48 requests sharing one 1024-token system prompt,
 *       each followed by 32-128 unique suffix tokens; uniform arrivals at 8 req/s.
 *   <li>{@code generated_shared_prefix} (SGLang's gsp dataset, scaled to a small CPU machine):
 *       groups of 8 requests sharing a 512-token system prompt, 64-token questions, 32
 *       output tokens; 4 groups by default, shuffled, uniform arrivals at 8 req/s.
 *   <li>{@code multi_turn}: 8 conversations of 4 turns; turn k+1's prompt is turn
 *       k's prompt, a 32-token stand-in for the assistant's reply (a live replay substitutes
 *       the reply actually generated) and a new 32-64-token user message; it is sent 0.1 s
 *       after turn k finishes. Conversations start at 2 per second.
 *   <li>{@code paged_attention}: 48 requests in one burst, prompts 128-384 tokens,
 *       128-256 output tokens.
 *   <li>{@code continuous_batching}: 48 requests with Poisson arrivals at 4 req/s, prompts
 *       32-512 tokens, a mix of short (16-32) and long (128-256) generations, so requests
 *       finish at different times and new ones must join a running batch.
 *   <li>{@code llama_bench} (llama.cpp's {@code llama-bench}): 3 repetitions of one 512-token
 *       prompt (fresh random tokens each time, so nothing can be cached) and 128 output tokens,
 *       one request at a time: each is sent when the previous one has finished.
 * </ul>
 */
public final class Workloads {
    public static final List<String> NAMES = List.of(
            "prefix_caching", "generated_shared_prefix", "multi_turn", "paged_attention", "continuous_batching",
            "llama_bench");

    /** llama_bench's default prompt and output lengths (llama-bench's {@code pp512} / {@code tg128}). */
    public static final int LLAMA_BENCH_PROMPT = 512;
    public static final int LLAMA_BENCH_GEN = 128;

    public static final int DEFAULT_VOCAB = 32000;

    private Workloads() {}

    /**
     * Knobs shared by all workloads.
     *
     * @param requests number of requests, or 0 for the workload's default
     * @param rate arrival rate in requests (conversations for multi_turn) per second; 0 for the
     *     workload's default, {@code Double.POSITIVE_INFINITY} for one burst
     * @param seed random seed
     * @param vocab token ids are in [1, vocab)
     * @param maxTokens output tokens per request, or 0 for the workload's default distribution
     */
    public record Options(int requests, double rate, long seed, int vocab, int maxTokens) {
        public Options {
            if (requests < 0) {
                throw new IllegalArgumentException("requests must be >= 0, got " + requests);
            }
            if (!(rate >= 0)) {
                throw new IllegalArgumentException("rate must be >= 0, got " + rate);
            }
            if (vocab < 2) {
                throw new IllegalArgumentException("vocab must be >= 2, got " + vocab);
            }
            if (maxTokens < 0) {
                throw new IllegalArgumentException("maxTokens must be >= 0, got " + maxTokens);
            }
        }

        public static Options defaults(long seed) {
            return new Options(0, 0, seed, DEFAULT_VOCAB, 0);
        }

        int requestsOr(int dflt) {
            return requests > 0 ? requests : dflt;
        }

        double rateOr(double dflt) {
            return rate > 0 ? rate : dflt;
        }
    }

    /**
     * An upper bound on prompt + output tokens of one request of workload {@code name} (the
     * sizes documented above), to refuse a request count that cannot fit in memory before
     * generating anything.
     *
     * @param maxTokens output tokens per request, or 0 for the workload's default distribution
     */
    public static int tokensPerRequestBound(String name, int maxTokens) {
        String n = name == null ? "" : name.trim().toLowerCase(Locale.ROOT);
        int[] promptAndOutput = switch (n) {
            case "prefix_caching" -> new int[] {1024 + 128, 32};
            case "generated_shared_prefix" -> new int[] {512 + 64, 32};
            case "multi_turn" -> new int[] {256 + 3 * (32 + 64), 32};
            case "paged_attention" -> new int[] {384, 256};
            case "continuous_batching" -> new int[] {512, 256};
            case "llama_bench" -> new int[] {LLAMA_BENCH_PROMPT, LLAMA_BENCH_GEN};
            default -> throw new IllegalArgumentException("unknown workload '" + name + "' (expected one of "
                    + String.join(", ", NAMES) + ")");
        };
        return promptAndOutput[0] + (maxTokens > 0 ? maxTokens : promptAndOutput[1]);
    }

    /** Generates workload {@code name} (one of {@link #NAMES}). */
    public static Workload generate(String name, Options o) {
        String n = name == null ? "" : name.trim().toLowerCase(Locale.ROOT);
        return switch (n) {
            case "prefix_caching" -> prefixCaching(o);
            case "generated_shared_prefix" -> generatedSharedPrefix(o);
            case "multi_turn" -> multiTurn(o);
            case "paged_attention" -> pagedAttention(o);
            case "continuous_batching" -> continuousBatching(o);
            case "llama_bench" -> llamaBench(o.requestsOr(3), LLAMA_BENCH_PROMPT,
                    o.maxTokens() > 0 ? o.maxTokens() : LLAMA_BENCH_GEN, o.seed(), o.vocab());
            default -> throw new IllegalArgumentException("unknown workload '" + name + "' (expected one of "
                    + String.join(", ", NAMES) + ")");
        };
    }

    static Workload prefixCaching(Options o) {
        SplittableRandom rnd = new SplittableRandom(o.seed());
        int n = o.requestsOr(48);
        double rate = o.rateOr(8.0);
        int[] system = tokens(rnd, 1024, o.vocab());
        List<WorkloadRequest> rs = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            int[] suffix = tokens(rnd, rnd.nextInt(32, 129), o.vocab());
            int out = o.maxTokens() > 0 ? o.maxTokens() : 32;
            rs.add(WorkloadRequest.independent(i, arrival(i, rate), concat(system, suffix), out));
        }
        return new Workload("prefix_caching", String.format(Locale.ROOT,
                "%d requests, 1024-token shared system prompt + 32-128 unique tokens, %s", n, rateText(rate)), rs);
    }

    static Workload generatedSharedPrefix(Options o) {
        SplittableRandom rnd = new SplittableRandom(o.seed());
        int perGroup = 8;
        int n = o.requestsOr(32);
        int groups = (n + perGroup - 1) / perGroup;
        double rate = o.rateOr(8.0);
        List<int[]> prompts = new ArrayList<>();
        for (int g = 0; g < groups; g++) {
            int[] system = tokens(rnd, 512, o.vocab());
            for (int q = 0; q < perGroup && prompts.size() < n; q++) {
                prompts.add(concat(system, tokens(rnd, 64, o.vocab())));
            }
        }
        shuffle(prompts, rnd);
        List<WorkloadRequest> rs = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            rs.add(WorkloadRequest.independent(i, arrival(i, rate), prompts.get(i), o.maxTokens() > 0 ? o.maxTokens() : 32));
        }
        return new Workload("generated_shared_prefix", String.format(Locale.ROOT,
                "%d requests in %d groups of up to %d sharing a 512-token system prompt, 64-token questions, shuffled, %s",
                n, groups, perGroup, rateText(rate)), rs);
    }

    static Workload multiTurn(Options o) {
        SplittableRandom rnd = new SplittableRandom(o.seed());
        int turns = 4;
        int n = o.requestsOr(32);
        int conversations = (n + turns - 1) / turns;
        double rate = o.rateOr(2.0);
        int reply = 32;
        // Build conversation by conversation, then order requests by (turn, conversation) so
        // that ids respect dependencies and first turns come first.
        int[][][] prompts = new int[conversations][turns][];
        for (int c = 0; c < conversations; c++) {
            int[] history = tokens(rnd, rnd.nextInt(128, 257), o.vocab());
            for (int t = 0; t < turns; t++) {
                prompts[c][t] = history;
                history = concat(concat(history, tokens(rnd, reply, o.vocab())), tokens(rnd, rnd.nextInt(32, 65), o.vocab()));
            }
        }
        List<WorkloadRequest> rs = new ArrayList<>(n);
        int[][] ids = new int[conversations][turns];
        for (int t = 0; t < turns; t++) {
            for (int c = 0; c < conversations; c++) {
                int remaining = n - c * turns;  // conversation c has min(turns, remaining) turns
                if (t >= Math.min(turns, remaining)) {
                    continue;
                }
                int id = rs.size();
                ids[c][t] = id;
                int out = o.maxTokens() > 0 ? o.maxTokens() : reply;
                rs.add(t == 0 ? WorkloadRequest.independent(id, arrival(c, rate), prompts[c][0], out)
                        : new WorkloadRequest(id, arrival(c, rate), prompts[c][t], out, ids[c][t - 1], 0.1, reply));
            }
        }
        return new Workload("multi_turn", String.format(Locale.ROOT,
                "%d requests: %d conversations of up to %d turns (first message 128-256 tokens, %d-token replies, "
                        + "32-64-token follow-ups, 0.1 s think time), conversations start %s",
                n, conversations, turns, reply, rateText(rate)), rs);
    }

    static Workload pagedAttention(Options o) {
        SplittableRandom rnd = new SplittableRandom(o.seed());
        int n = o.requestsOr(48);
        double rate = o.rate() > 0 ? o.rate() : Double.POSITIVE_INFINITY;
        List<WorkloadRequest> rs = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            int[] prompt = tokens(rnd, rnd.nextInt(128, 385), o.vocab());
            int out = rnd.nextInt(128, 257);
            rs.add(WorkloadRequest.independent(i, arrival(i, rate), prompt, o.maxTokens() > 0 ? o.maxTokens() : out));
        }
        return new Workload("paged_attention", String.format(Locale.ROOT,
                "%d requests, prompts 128-384 tokens, 128-256 output tokens, %s", n, rateText(rate)), rs);
    }

    static Workload continuousBatching(Options o) {
        SplittableRandom rnd = new SplittableRandom(o.seed());
        int n = o.requestsOr(48);
        double rate = o.rateOr(4.0);
        List<WorkloadRequest> rs = new ArrayList<>(n);
        double t = 0;
        for (int i = 0; i < n; i++) {
            int[] prompt = tokens(rnd, rnd.nextInt(32, 513), o.vocab());
            int out = rnd.nextInt(4) == 0 ? rnd.nextInt(128, 257) : rnd.nextInt(16, 33);
            rs.add(WorkloadRequest.independent(i, Double.isInfinite(rate) ? 0 : t, prompt,
                    o.maxTokens() > 0 ? o.maxTokens() : out));
            // Poisson process: exponential gaps with mean 1/rate.
            t += -Math.log(1 - rnd.nextDouble()) / rate;
        }
        return new Workload("continuous_batching", String.format(Locale.ROOT,
                "%d requests, prompts 32-512 tokens, 1 in 4 long (128-256 output tokens) else 16-32, Poisson %s",
                n, rateText(rate)), rs);
    }

    /**
     * llama-bench's measurement: {@code repetitions} requests of {@code promptLen} fresh random
     * tokens and {@code genLen} output tokens, each sent when the previous one has finished.
     */
    public static Workload llamaBench(int repetitions, int promptLen, int genLen, long seed, int vocab) {
        if (repetitions < 1 || promptLen < 1 || genLen < 1) {
            throw new IllegalArgumentException("repetitions, prompt and output length must be >= 1, got "
                    + repetitions + ", " + promptLen + ", " + genLen);
        }
        SplittableRandom rnd = new SplittableRandom(seed);
        List<WorkloadRequest> rs = new ArrayList<>(repetitions);
        for (int i = 0; i < repetitions; i++) {
            int[] prompt = tokens(rnd, promptLen, vocab);
            rs.add(i == 0 ? WorkloadRequest.independent(0, 0, prompt, genLen)
                    : new WorkloadRequest(i, 0, prompt, genLen, i - 1, 0, 0));
        }
        return new Workload("llama_bench", String.format(Locale.ROOT,
                "%d repetitions of a %d-token prompt (fresh each time) and %d output tokens, one request at a time",
                repetitions, promptLen, genLen), rs);
    }

    private static double arrival(int i, double rate) {
        return Double.isInfinite(rate) ? 0 : i / rate;
    }

    private static String rateText(double rate) {
        return Double.isInfinite(rate) ? "one burst" : String.format(Locale.ROOT, "%.3g req/s", rate);
    }

    static int[] tokens(SplittableRandom rnd, int n, int vocab) {
        int[] t = new int[n];
        for (int i = 0; i < n; i++) {
            t[i] = rnd.nextInt(1, vocab);
        }
        return t;
    }

    private static int[] concat(int[] a, int[] b) {
        int[] r = new int[a.length + b.length];
        System.arraycopy(a, 0, r, 0, a.length);
        System.arraycopy(b, 0, r, a.length, b.length);
        return r;
    }

    private static <T> void shuffle(List<T> list, SplittableRandom rnd) {
        for (int i = list.size() - 1; i > 0; i--) {
            int j = rnd.nextInt(i + 1);
            T tmp = list.get(i);
            list.set(i, list.get(j));
            list.set(j, tmp);
        }
    }
}
