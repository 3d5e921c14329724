package io.radixkv.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.radixkv.kernels.DType;
import io.radixkv.model.ModelPresets;
import io.radixkv.model.ModelWeights;
import io.radixkv.model.SamplingParams;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The per-step overhead measurement: decode steps of 64 running sequences, with
 * the step time split into scheduling, batch tables, the model's forward and commit +
 * sampling. Checks that the split accounts for the steps (the figure itself is measured and
 * logged, not asserted: it depends on the machine). The tiny model makes the test fast; for
 * the figure that matters run it with {@code -Dradixkv.test.overheadModel=small}, and with
 * {@code -Dradixkv.test.overheadSampling=temperature} (T 0.8) or {@code top_p} (T 0.8, top-p 0.9)
 * for sampled instead of greedy tokens. {@code -Dradixkv.test.overheadWarmup=N} first runs 64
 * requests of N tokens to the end, so that the engine's per-step Java code is compiled, as in a
 * server that has run a while, before the measured batch (which starts from short contexts
 * again); without it, code run once a step is still interpreted in the measured steps.
 */
@Timeout(value = 600, unit = TimeUnit.SECONDS)
class EngineStepOverheadTest {
    private static final Logger LOG = LogManager.getLogger(EngineStepOverheadTest.class);
    private static final int SEQS = 64;

    @Test
    void decodeStepOf64SequencesIsSplitIntoItsParts() throws Exception {
        String preset = System.getProperty("radixkv.test.overheadModel", "tiny");
        String sampling = System.getProperty("radixkv.test.overheadSampling", "greedy");
        int from = 4;
        int to = Integer.getInteger("radixkv.test.overheadSteps", 24) + from;
        int warmup = Integer.getInteger("radixkv.test.overheadWarmup", 0);
        int pagesPerSeq = (16 + Math.max(to + 16, warmup) + 15) / 16 + 1;
        EngineConfig cfg = EngineConfig.builder().model(preset).weightsSeed(7).kvDtype(DType.BF16).pageSize(16)
                .numPages(SEQS * pagesPerSeq + 64).maxRunning(SEQS).maxBatchTokens(SEQS * 16).backend("cpu").build();
        ModelWeights weights = preset.equals("tiny") ? EngineTestSupport.weights()
                : ModelWeights.random(ModelPresets.byName(preset), DType.F32, 7);
        AtomicReference<StepBreakdown> first = new AtomicReference<>();
        AtomicReference<StepBreakdown> last = new AtomicReference<>();
        AtomicReference<Engine> engine = new AtomicReference<>();
        StepBreakdown total;
        try (Engine e = Engine.start(cfg, EngineTestSupport.backend(), weights, null)) {
            engine.set(e);
            SplittableRandom rnd = new SplittableRandom(14);
            List<RequestHandle> handles = new ArrayList<>();
            for (int i = 0; i < (warmup > 0 ? SEQS : 0); i++) {
                handles.add(e.submit(new GenerateRequest("w" + i, EngineTestSupport.randomTokens(rnd, 16),
                        params(sampling, warmup, 1000 + i)), t -> { }));
            }
            for (RequestHandle h : handles) {
                assertTrue(h.result().get(600, TimeUnit.SECONDS).ok());
            }
            handles.clear();
            for (int i = 0; i < SEQS; i++) {
                AtomicInteger n = new AtomicInteger();
                // the last request is the probe: the engine may start stepping while the others are
                // still being submitted, so only once the last one decodes are all 64 decoding; its
                // k-th token comes from its step k, its listener reads the end of the step before.
                // The others may run a few steps ahead: their extra tokens keep them decoding.
                boolean probe = i == SEQS - 1;
                handles.add(e.submit(new GenerateRequest("r" + i, EngineTestSupport.randomTokens(rnd, 16),
                        params(sampling, to + 16, i)), t -> {
                            int k = n.incrementAndGet();
                            if (probe && k == from) {
                                first.set(engine.get().stepBreakdown());
                            } else if (probe && k == to) {
                                last.set(engine.get().stepBreakdown());
                            }
                        }));
            }
            for (RequestHandle h : handles) {
                assertTrue(h.result().get(300, TimeUnit.SECONDS).ok());
            }
            total = e.stepBreakdown(); // between steps: whole steps only
        } finally {
            if (!preset.equals("tiny")) {
                weights.close();
            }
        }
        assertNotNull(first.get());
        assertNotNull(last.get());
        StepBreakdown d = last.get().since(first.get());
        LOG.info("decode steps of {} sequences, {} model, {} tokens, CPU backend: {}", SEQS, preset, sampling, d);
        System.out.println("step overhead (" + preset + ", " + sampling + ", " + SEQS + " sequences decoding): " + d);
        assertEquals(d.stepNanos(), d.scheduleNanos() + d.tablesNanos() + d.modelNanos() + d.sampleNanos(),
                0.05 * d.stepNanos(), "whole steps are their parts: " + d);
        assertEquals(to - from, d.steps(), "one step per decode token of the probe request");
        assertEquals((long) SEQS * (to - from), d.decodeTokens(), "every step decoded all 64 sequences");
        // over whole steps the parts are disjoint intervals inside the steps
        assertTrue(total.scheduleNanos() > 0 && total.tablesNanos() > 0 && total.modelNanos() > 0
                && total.sampleNanos() > 0, total.toString());
        long parts = total.scheduleNanos() + total.tablesNanos() + total.modelNanos() + total.sampleNanos();
        assertTrue(parts <= total.stepNanos(), "parts " + parts + " exceed the steps: " + total);
        assertTrue(parts >= 0.5 * total.stepNanos(), "the parts miss step time: " + total);
    }

    private static SamplingParams params(String sampling, int maxTokens, long seed) {
        return switch (sampling) {
            case "greedy" -> SamplingParams.greedy(maxTokens);
            case "temperature" -> new SamplingParams(maxTokens, 0.8f, 1f, seed, List.of());
            case "top_p" -> new SamplingParams(maxTokens, 0.8f, 0.9f, seed, List.of());
            default -> throw new IllegalArgumentException(
                    "radixkv.test.overheadSampling: greedy, temperature or top_p, got " + sampling);
        };
    }
}
