package io.radixkv.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.radixkv.cli.report.RequestRecord;
import io.radixkv.kernels.DType;
import io.radixkv.kernels.LargePages;
import io.radixkv.kernels.NativeLibrary;
import io.radixkv.model.ModelConfig;
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
 * @param readGbps the memory baseline measured in the same run: the host read bandwidth (libradixkv's
 *     baseline over a buffer past the LLC), or a device backend's copy bandwidth
 * @param baselineName what {@code readGbps} is ("read bandwidth", "cuda device copy bandwidth")
 * @param hostMemory the THP mode and whether large host blocks are advised for huge pages
 *     ({@link LargePages#describe()})
 */
record LlamaBench(int promptLen, int genLen, int repetitions, Stat prefillTokS, Stat decodeTokS,
                  long weightBytesPerToken, double weightGbps, double readGbps, String weightsDtype, int threads,
                  String cpuModel, String nativeBuild, String baselineName, String backend, String hostMemory) {

    /** Mean and sample standard deviation (0 for one value). */
    record Stat(double mean, double stddev) {
        static Stat of(double[] v) {
            if (v.length == 0) {
                return new Stat(Double.NaN, Double.NaN);
            }
            double mean = 0;
            for (double x : v) {
                mean += x / v.length;
            }
            double ss = 0;
            for (double x : v) {
                ss += (x - mean) * (x - mean);
            }
            return new Stat(mean, v.length < 2 ? 0 : Math.sqrt(ss / (v.length - 1)));
        }
    }

    /** Figures from the successful records of the run (failed ones are reported by bench itself). */
    static LlamaBench of(List<RequestRecord> records, int promptLen, int genLen, ModelConfig model, DType weights,
                         BandwidthCheck.Baseline baseline, String backend) {
        List<RequestRecord> ok = records.stream().filter(r -> !r.failed() && r.ttftNanos() > 0).toList();
        double[] pp = ok.stream().mapToDouble(r -> promptLen / (r.ttftNanos() / 1e9)).toArray();
        double[] tg = ok.stream().mapToDouble(r -> (genLen - 1) / ((r.e2eNanos() - r.ttftNanos()) / 1e9)).toArray();
        long params = model.parameterCount() - (model.tiedEmbeddings() ? 0 : (long) model.vocab() * model.hidden());
        long bytes = params * weights.bytes();
        Stat decode = Stat.of(tg);
        return new LlamaBench(promptLen, genLen, records.size(), Stat.of(pp), decode, bytes,
                bytes * decode.mean() / 1e9, baseline.gbps(), weights.name().toLowerCase(Locale.ROOT),
                NativeLibrary.numThreads(), NativeLibrary.cpuModel(), Main.oneLine(NativeLibrary.buildInfo()), baseline.name(),
                backend, LargePages.describe());
    }

    /** Weight bytes per second while decoding over the read bandwidth. */
    double weightReadRatio() {
        return weightGbps / readGbps;
    }

    String table() {
        StringBuilder sb = new StringBuilder();
        sb.append(String.format(Locale.ROOT, "%nbackend: %s%ncpu: %s%nnative: %s%nhost memory: %s%n", backend, cpuModel,
                nativeBuild, hostMemory));
        sb.append(String.format(Locale.ROOT, "%-8s %-8s %8s %22s%n", "test", "weights", "threads", "t/s"));
        sb.append(String.format(Locale.ROOT, "%-8s %-8s %8d %13.2f ± %6.2f%n", "pp" + promptLen, weightsDtype, threads,
                prefillTokS.mean(), prefillTokS.stddev()));
        sb.append(String.format(Locale.ROOT, "%-8s %-8s %8d %13.2f ± %6.2f%n", "tg" + genLen, weightsDtype, threads,
                decodeTokS.mean(), decodeTokS.stddev()));
        sb.append(String.format(Locale.ROOT, "decode weight stream: %.1f MB/token x %.2f tokens/s = %.2f GB/s, "
                + "%s %.2f GB/s, ratio %.3f (%d repetitions)%n", weightBytesPerToken / 1e6,
                decodeTokS.mean(), weightGbps, baselineName, readGbps, weightReadRatio(), repetitions));
        return sb.toString();
    }

    ObjectNode toJson(ObjectMapper mapper) {
        ObjectNode o = mapper.createObjectNode();
        o.put("prompt_len", promptLen);
        o.put("gen_len", genLen);
        o.put("repetitions", repetitions);
        o.put("weights_dtype", weightsDtype);
        o.put("threads", threads);
        o.putObject("prefill_tok_s").put("mean", prefillTokS.mean()).put("stddev", prefillTokS.stddev());
        o.putObject("decode_tok_s").put("mean", decodeTokS.mean()).put("stddev", decodeTokS.stddev());
        o.put("weight_bytes_per_token", weightBytesPerToken);
        o.put("weight_gb_s", weightGbps);
        o.put("read_gb_s", readGbps);
        o.put("baseline", baselineName);
        o.put("backend", backend);
        o.put("weight_read_ratio", weightReadRatio());
        o.put("cpu_model", cpuModel);
        o.put("native_build", nativeBuild);
        o.put("host_memory", hostMemory);
        return o;
    }
}
