package io.radixkv.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.radixkv.cli.report.RequestRecord;
import io.radixkv.kernels.DType;
import io.radixkv.kernels.cpu.NativeLibrary;
import io.radixkv.model.ModelConfig;
import io.radixkv.platform.LargePages;
import io.radixkv.model.WeightsSummary;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/**
 * llama-bench-style figures of a {@code llama_bench} run: prefill tokens/s (prompt tokens /
 * TTFT, llama-bench's {@code ppP}) and decode tokens/s ((G - 1) / (E2E - TTFT), {@code tgG}),
 * each the mean and sample standard deviation over the repetitions, and the weight bytes a
 * decoded token streams, per second, against the read bandwidth measured in the same run.
 *
 * @param weightBytesPerToken bytes of every weight a decode step reads once: all layers, the
 *     final norm and the LM head (the embedding table only when it is the tied LM head; a token's
 *     embedding row is a gather)
 * @param weightGbps weightBytesPerToken x decode tokens/s (mean), GB/s
 * @param weightsDtype the matrices' formats ({@code bf16}; {@code q4_k 71%, q6_k 29%})
 * @param bytesPerWeight the matrices' bytes per weight (bf16 2, Q8_0 1.0625, Q4_K 0.5625)
 * @param readGbps the memory baseline measured in the same run: the host read bandwidth (libradixkv's
 *     baseline over a buffer past the LLC), or a device backend's copy bandwidth
 * @param baselineName what {@code readGbps} is ("read bandwidth", "cuda device copy bandwidth")
 * @param hostMemory the THP mode and whether large host blocks are advised for huge pages
 *     ({@link LargePages#describe()})
 * @param timedSeconds the repetitions' end-to-end times added up (they run one at a time)
 * @param warmup what the warm-up before the repetitions did (null where not known)
 * @param timedJitMillis JIT compilation time during the repetitions, ms (-1 where not known): a
 *     large share means the figures include the compiler's use of the cores
 */
record LlamaBench(int promptLen, int genLen, int repetitions, Stat prefillTokS, Stat decodeTokS,
                  long weightBytesPerToken, double weightGbps, double readGbps, String weightsDtype,
                  double bytesPerWeight, int threads,
                  String cpuModel, String nativeBuild, String baselineName, String backend, String hostMemory,
                  double timedSeconds, JitWarmup.Result warmup, long timedJitMillis) {

    /**
     * Mean and sample standard deviation (0 for one value) of the repetitions' values, which are
     * kept in the order the repetitions ran (llama-bench's {@code samples_ts}).
     */
    record Stat(double mean, double stddev, List<Double> samples) {
        static Stat of(double[] v) {
            List<Double> samples = Arrays.stream(v).boxed().toList();
            if (v.length == 0) {
                return new Stat(Double.NaN, Double.NaN, samples);
            }
            double mean = 0;
            for (double x : v) {
                mean += x / v.length;
            }
            double ss = 0;
            for (double x : v) {
                ss += (x - mean) * (x - mean);
            }
            return new Stat(mean, v.length < 2 ? 0 : Math.sqrt(ss / (v.length - 1)), samples);
        }
    }

    /** Figures from the successful records of the run (failed ones are reported by bench itself). */
    static LlamaBench of(List<RequestRecord> records, int promptLen, int genLen, ModelConfig model,
                         WeightsSummary weights, BandwidthCheck.Baseline baseline, String backend) {
        List<RequestRecord> ok = records.stream().filter(r -> !r.failed() && r.ttftNanos() > 0).toList();
        double[] pp = ok.stream().mapToDouble(r -> promptLen / (r.ttftNanos() / 1e9)).toArray();
        double[] tg = ok.stream().mapToDouble(r -> (genLen - 1) / ((r.e2eNanos() - r.ttftNanos()) / 1e9)).toArray();
        long bytes = weights.decodeBytes();
        Stat decode = Stat.of(tg);
        double timed = records.stream().mapToDouble(r -> r.e2eNanos() / 1e9).sum();
        return new LlamaBench(promptLen, genLen, records.size(), Stat.of(pp), decode, bytes,
                bytes * decode.mean() / 1e9, baseline.gbps(), weights.format(), weights.bytesPerWeight(),
                NativeLibrary.numThreads(), NativeLibrary.cpuModel(), Main.oneLine(NativeLibrary.buildInfo()), baseline.name(),
                backend, LargePages.describe(), timed, null, -1);
    }

    /** These figures with the warm-up's result and the JIT compilation time of the timed repetitions. */
    LlamaBench withJit(JitWarmup.Result warm, long jitMillis) {
        return new LlamaBench(promptLen, genLen, repetitions, prefillTokS, decodeTokS, weightBytesPerToken, weightGbps,
                readGbps, weightsDtype, bytesPerWeight, threads, cpuModel, nativeBuild, baselineName, backend, hostMemory, timedSeconds,
                warm, jitMillis);
    }

    /** Share of the timed repetitions' wall time spent in JIT compilation (NaN where not known). */
    double timedJitShare() {
        return timedJitMillis < 0 || timedSeconds <= 0 ? Double.NaN : timedJitMillis / 1e3 / timedSeconds;
    }

    /** Weight bytes per second while decoding over the read bandwidth. */
    double weightReadRatio() {
        return weightGbps / readGbps;
    }

    /** The main format alone (the table's column): {@code q4_k} of {@code q4_k 71%, q6_k 29%}. */
    private String shortFormat() {
        int space = weightsDtype.indexOf(' ');
        return space < 0 ? weightsDtype : weightsDtype.substring(0, space);
    }

    String table() {
        StringBuilder sb = new StringBuilder();
        sb.append(String.format(Locale.ROOT, "%nbackend: %s%ncpu: %s%nnative: %s%nhost memory: %s%n", backend, cpuModel,
                nativeBuild, hostMemory));
        sb.append(String.format(Locale.ROOT, "weights: %s, %.4f bytes per weight%n", weightsDtype, bytesPerWeight));
        sb.append(String.format(Locale.ROOT, "%-8s %-8s %8s %22s%n", "test", "weights", "threads", "t/s"));
        sb.append(String.format(Locale.ROOT, "%-8s %-8s %8d %13.2f ± %6.2f%n", "pp" + promptLen, shortFormat(), threads,
                prefillTokS.mean(), prefillTokS.stddev()));
        sb.append(String.format(Locale.ROOT, "%-8s %-8s %8d %13.2f ± %6.2f%n", "tg" + genLen, shortFormat(), threads,
                decodeTokS.mean(), decodeTokS.stddev()));
        sb.append(String.format(Locale.ROOT, "decode weight stream: %.1f MB/token x %.2f tokens/s = %.2f GB/s, "
                + "%s %.2f GB/s, ratio %.3f (%d repetitions)%n", weightBytesPerToken / 1e6,
                decodeTokS.mean(), weightGbps, baselineName, readGbps, weightReadRatio(), repetitions));
        if (warmup != null) {
            sb.append(String.format(Locale.ROOT, "warm-up: %d repetition(s) (%s)", warmup.repetitions(), warmup.rule()));
            if (timedJitMillis >= 0) {
                sb.append(String.format(Locale.ROOT, "; JIT compiling during the timed ones: %d ms (%.1f%% of %.1f s)",
                        timedJitMillis, 100 * timedJitShare(), timedSeconds));
            }
            sb.append(String.format("%n"));
        }
        return sb.toString();
    }

    ObjectNode toJson(ObjectMapper mapper) {
        ObjectNode o = mapper.createObjectNode();
        o.put("prompt_len", promptLen);
        o.put("gen_len", genLen);
        o.put("repetitions", repetitions);
        o.put("weights_dtype", weightsDtype);
        o.put("bytes_per_weight", bytesPerWeight);
        o.put("threads", threads);
        putStat(o.putObject("prefill_tok_s"), prefillTokS);
        putStat(o.putObject("decode_tok_s"), decodeTokS);
        o.put("weight_bytes_per_token", weightBytesPerToken);
        o.put("weight_gb_s", weightGbps);
        o.put("read_gb_s", readGbps);
        o.put("baseline", baselineName);
        o.put("backend", backend);
        o.put("weight_read_ratio", weightReadRatio());
        o.put("cpu_model", cpuModel);
        o.put("native_build", nativeBuild);
        o.put("host_memory", hostMemory);
        if (warmup != null) {
            o.put("warmup_repetitions", warmup.repetitions());
            o.put("warmup_rule", warmup.rule());
        }
        if (timedJitMillis >= 0 && Double.isFinite(timedJitShare())) {
            o.put("timed_jit_compile_ms", timedJitMillis);
            o.put("timed_jit_share", timedJitShare());
        }
        return o;
    }

    private static void putStat(ObjectNode o, Stat s) {
        o.put("mean", s.mean()).put("stddev", s.stddev());
        s.samples().forEach(o.putArray("samples")::add);
    }
}
