package io.radixkv.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.radixkv.cli.report.RequestRecord;
import io.radixkv.model.ModelConfig;
import io.radixkv.model.ModelPresets;
import io.radixkv.model.WeightsSummary;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code bench --workload llama_bench}: llama-bench's pp/tg figures and the weight-stream ratio. */
class LlamaBenchTest {
    private static final long S = 1_000_000_000L;

    /** A successful record: sent at {@code sent}, first token after {@code ttft}, done after {@code e2e}. */
    private static RequestRecord rec(int id, int prompt, int gen, long sent, long ttft, long e2e) {
        long[] t = new long[gen];
        for (int i = 0; i < gen; i++) {
            t[i] = sent + ttft + (e2e - ttft) * i / (gen - 1);
        }
        return new RequestRecord(id, prompt, 0, sent, t, sent + e2e, false);
    }

    @Test
    void arithmeticOfPrefillDecodeAndWeightStream() {
        ModelConfig tiny = ModelPresets.tiny();
        List<RequestRecord> records = List.of(
                rec(0, 32, 8, 5 * S, S / 10, S / 10 + 7 * S / 10),    // pp 320, tg 7 / 0.7 = 10
                rec(1, 32, 8, 9 * S, S / 5, S / 5 + 35 * S / 100),   // pp 160, tg 7 / 0.35 = 20
                RequestRecord.failed(2, 32, 11 * S, 12 * S, "boom")); // not measured
        long streamed = tiny.parameterCount() - (tiny.tiedEmbeddings() ? 0 : (long) tiny.vocab() * tiny.hidden());
        WeightsSummary bf16 = new WeightsSummary("bf16", 2.0, 2 * streamed);
        LlamaBench b = LlamaBench.of(records, 32, 8, tiny, bf16, new BandwidthCheck.Baseline(10.0, "read bandwidth"), "cpu");
        assertEquals(240, b.prefillTokS().mean(), 1e-9);
        assertEquals(Math.sqrt(2 * 80.0 * 80.0), b.prefillTokS().stddev(), 1e-9, "sample stddev (n - 1)");
        assertEquals(15, b.decodeTokS().mean(), 1e-9);
        assertEquals(Math.sqrt(2 * 5.0 * 5.0), b.decodeTokS().stddev(), 1e-9);
        assertEquals(2 * streamed, b.weightBytesPerToken(), "the weights' decode stream");
        assertEquals(2 * streamed * 15 / 1e9, b.weightGbps(), 1e-12);
        assertEquals(b.weightGbps() / 10.0, b.weightReadRatio(), 1e-15);
        assertEquals(3, b.repetitions());
        assertEquals("bf16", b.weightsDtype());
        assertEquals(List.of(320.0, 160.0), b.prefillTokS().samples(), "in the order the repetitions ran");
        assertEquals(List.of(10.0, 20.0), b.decodeTokS().samples());
        assertEquals(0.8 + 0.55 + 1.0, b.timedSeconds(), 1e-9, "every repetition's end-to-end time, failed ones too");
        assertTrue(Double.isNaN(b.timedJitShare()), "not known until withJit");
        LlamaBench j = b.withJit(new JitWarmup.Result(5, "auto: JIT quiet", 0.001), 235);
        assertEquals(0.235 / 2.35, j.timedJitShare(), 1e-12);
        assertEquals(b.decodeTokS(), j.decodeTokS());
        assertTrue(j.table().contains("warm-up: 5 repetition(s) (auto: JIT quiet); JIT compiling during the timed ones: "
                + "235 ms (10.0% of 2."), j.table());
        // One repetition: no spread.
        assertEquals(0, LlamaBench.of(records.subList(0, 1), 32, 8, tiny, bf16, new BandwidthCheck.Baseline(10.0, "read bandwidth"), "cpu").decodeTokS().stddev());
    }

    @Test
    void tinyPresetRunReportsConsistentFigures(@TempDir Path dir) throws Exception {
        Path json = dir.resolve("llama.json");
        CliRun r = CliRun.of("bench", "--workload", "llama_bench", "--model", "tiny", "--prompt-len", "40",
                "--gen-len", "6", "--repetitions", "2", "--backend", "cpu", "--json", json.toString()).assertOk();
        assertTrue(r.out().contains("pp40") && r.out().contains("tg6") && r.out().contains("cpu: "), r.out());
        JsonNode j = CliSupport.JSON.readTree(Files.readString(json));
        assertEquals("llama_bench", j.get("workload").asText());
        assertEquals(1, j.get("runs").size());
        JsonNode run = j.get("runs").get(0);
        assertEquals("off", run.get("prefix_cache").asText());
        assertEquals(2, run.get("requests").asInt());
        assertEquals(0, run.get("failed").asInt());
        assertEquals(80, run.get("prompt_tokens").asLong());
        assertEquals(0, run.get("cached_tokens").asLong(), "fresh prompts, cache off");
        assertEquals(12, run.get("output_tokens").asLong(), "exactly --gen-len each: EOS is ignored");

        JsonNode l = j.get("llama_bench");
        assertEquals(40, l.get("prompt_len").asInt());
        assertEquals(6, l.get("gen_len").asInt());
        assertEquals(2, l.get("repetitions").asInt());
        assertEquals("f32", l.get("weights_dtype").asText());
        assertTrue(l.get("threads").asInt() >= 1);
        double pp = l.get("prefill_tok_s").get("mean").asDouble();
        double tg = l.get("decode_tok_s").get("mean").asDouble();
        assertTrue(pp > 0 && tg > 0, l.toString());
        assertTrue(l.get("prefill_tok_s").get("stddev").asDouble() >= 0);
        // Means of rates are at least the rate of the mean times (Jensen), and at most the best single one.
        // The report's ttft/e2e statistics come from a histogram kept to 3 significant digits: allow 1e-3.
        double ttftMean = run.get("ttft_ms").get("mean").asDouble() / 1e3;
        double ttftMax = run.get("ttft_ms").get("max").asDouble() / 1e3;
        double e2eMean = run.get("e2e_ms").get("mean").asDouble() / 1e3;
        assertTrue(pp >= 40 / ttftMean * (1 - 1e-3), pp + " vs " + 40 / ttftMean);
        assertTrue(pp >= 40 / ttftMax * (1 - 1e-3));
        // e2e - ttft subtracts two rounded means: their rounding adds up relative to the (smaller) difference
        double tgTolerance = 1e-3 * (e2eMean + ttftMean) / (e2eMean - ttftMean);
        assertTrue(tg >= 5 / (e2eMean - ttftMean) * (1 - tgTolerance), tg + " vs " + 5 / (e2eMean - ttftMean));
        ModelConfig tiny = ModelPresets.tiny();
        long streamed = tiny.parameterCount() - (tiny.tiedEmbeddings() ? 0 : (long) tiny.vocab() * tiny.hidden());
        assertEquals(4 * streamed, l.get("weight_bytes_per_token").asLong());
        assertEquals(4 * streamed * tg / 1e9, l.get("weight_gb_s").asDouble(), 1e-9 * l.get("weight_gb_s").asDouble());
        assertTrue(l.get("read_gb_s").asDouble() > 0);
        assertEquals(l.get("weight_gb_s").asDouble() / l.get("read_gb_s").asDouble(),
                l.get("weight_read_ratio").asDouble(), 1e-12);
        assertFalse(l.get("cpu_model").asText().isBlank());
        assertFalse(l.get("native_build").asText().isBlank());
        assertEquals(2, l.get("decode_tok_s").get("samples").size());
        assertEquals(2, l.get("prefill_tok_s").get("samples").size());
        double mean = (l.get("decode_tok_s").get("samples").get(0).asDouble()
                + l.get("decode_tok_s").get("samples").get(1).asDouble()) / 2;
        assertEquals(tg, mean, 1e-9 * tg);
        assertTrue(l.get("warmup_repetitions").asInt() >= 1, l.toString());
        assertTrue(l.get("warmup_rule").asText().startsWith("auto"), l.toString());
        assertTrue(l.get("timed_jit_compile_ms").asLong() >= 0, l.toString());
        assertTrue(r.out().contains("warm-up: "), r.out());
    }

    @Test
    void warmupCountIsExact(@TempDir Path dir) throws Exception {
        JsonNode three = tinyRunWithWarmup("3", dir.resolve("three.json"));
        assertEquals(3, three.get("warmup_repetitions").asInt());
        assertEquals("fixed", three.get("warmup_rule").asText());
        assertEquals(0, tinyRunWithWarmup("0", dir.resolve("none.json")).get("warmup_repetitions").asInt());
    }

    /** The llama_bench JSON of one short tiny-preset repetition after {@code --warmup warmup}. */
    private static JsonNode tinyRunWithWarmup(String warmup, Path json) throws Exception {
        CliRun.of("bench", "--workload", "llama_bench", "--model", "tiny", "--prompt-len", "8", "--gen-len", "2",
                "--repetitions", "1", "--warmup", warmup, "--backend", "cpu", "--json", json.toString()).assertOk();
        return CliSupport.JSON.readTree(Files.readString(json)).get("llama_bench");
    }

    @Test
    void optionsThatDoNotApplyAreUsageErrors() {
        String[][] cases = {
                // workload, option, value, expected in the message
                {"llama_bench", "--prefix-cache", "on", "prefix cache off"},
                {"llama_bench", "--gen-len", "1", "--gen-len"},
                {"llama_bench", "--max-tokens", "4", "--max-tokens does not apply"},
                {"prefix_caching", "--prompt-len", "4", "llama_bench only"},
                {"prefix_caching", "--warmup", "2", "llama_bench only"},
                {"llama_bench", "--warmup", "-1", "invalid value for --warmup: '-1' (expected auto or a count >= 0)"},
                {"llama_bench", "--warmup", "some", "--warmup: 'some'"},
        };
        for (String[] c : cases) {
            CliRun.of("bench", "--workload", c[0], "--model", "tiny", c[1], c[2]).assertUsageError(c[3]);
        }
    }
}
