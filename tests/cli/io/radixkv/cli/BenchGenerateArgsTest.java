package io.radixkv.cli;

import org.junit.jupiter.api.Test;

/** Option validation of bench and generate: every bad argument is a one-line usage error (exit 2). */
class BenchGenerateArgsTest {

    @Test
    void benchBadArguments() {
        CliRun.of("bench").assertUsageError("--workload");
        CliRun.of("bench", "--workload", "nope").assertUsageError("--workload");
        String[] base = {"bench", "--workload", "prefix_caching"};
        CliRun.of(concat(base, "--prefix-cache", "maybe")).assertUsageError("--prefix-cache");
        CliRun.of(concat(base, "--requests", "0")).assertUsageError("--requests");
        CliRun.of(concat(base, "--requests", "many")).assertUsageError("--requests");
        CliRun.of(concat(base, "--rate", "-1")).assertUsageError("--rate");
        CliRun.of(concat(base, "--rate", "fast")).assertUsageError("--rate");
        CliRun.of(concat(base, "--kv-dtype", "int4")).assertUsageError("--kv-dtype");
        CliRun.of(concat(base, "--page-size", "0")).assertUsageError("--page-size");
        CliRun.of(concat(base, "--pages", "0")).assertUsageError("--pages");
        CliRun.of(concat(base, "--max-tokens", "0")).assertUsageError("--max-tokens");
        CliRun.of(concat(base, "--time-scale", "0")).assertUsageError("--time-scale");
        CliRun.of(concat(base, "--backend", "tpu")).assertUsageError("--backend");
        CliRun.of(concat(base, "--max-running", "0")).assertUsageError("--max-running");
        CliRun.of(concat(base, "--max-batch-tokens", "-5")).assertUsageError("--max-batch-tokens");
        CliRun.of(concat(base, "--seed", "x")).assertUsageError("--seed");
        CliRun.of(concat(base, "--json", "/nonexistent-dir/b.json")).assertUsageError("--json");
        CliRun.of(concat(base, "--plot", "/nonexistent-dir/b.png")).assertUsageError("--plot");
        CliRun.of(concat(base, "extra")).assertUsageError("extra");
        CliRun.of(concat(base, "--model", "/nonexistent/model")).assertUsageError("--model");
    }

    @Test
    void generateBadArguments() {
        CliRun.of("generate").assertUsageError("--prompt-tokens");
        CliRun.of("generate", "--prompt-tokens", "1,a").assertUsageError("--prompt-tokens");
        CliRun.of("generate", "--prompt-tokens", "1,,2").assertUsageError("--prompt-tokens");
        CliRun.of("generate", "--prompt-tokens", "1,-2").assertUsageError("--prompt-tokens");
        CliRun.of("generate", "--prompt-tokens", "1,2", "--max-tokens", "0").assertUsageError("--max-tokens");
        CliRun.of("generate", "--prompt-tokens", "1,2", "--prefix-cache", "both").assertUsageError("--prefix-cache");
        CliRun.of("generate", "--prompt-tokens", "1,2", "--kv-dtype", "q4").assertUsageError("--kv-dtype");
        CliRun.of("generate", "--prompt-tokens", "1,2", "--weights-dtype", "fp8_e4m3").assertUsageError("--weights-dtype");
        CliRun.of("generate", "--prompt-tokens", "1,2", "--pack-weights", "yes").assertUsageError("--pack-weights");
        CliRun.of("generate", "--prompt-tokens", "1,2", "--model", " ").assertUsageError("--model");
        CliRun.of("generate", "--prompt-tokens", "1,2", "--model", "huge").assertUsageError("--model");
    }

    private static String[] concat(String[] a, String... b) {
        String[] r = new String[a.length + b.length];
        System.arraycopy(a, 0, r, 0, a.length);
        System.arraycopy(b, 0, r, a.length, b.length);
        return r;
    }
}
