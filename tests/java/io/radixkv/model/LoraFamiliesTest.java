package io.radixkv.model;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.radixkv.cache.Namespace;
import io.radixkv.engine.Engine;
import io.radixkv.engine.EngineConfig;
import io.radixkv.engine.GenerateRequest;
import io.radixkv.engine.RequestHandle;
import io.radixkv.engine.RequestResult;
import io.radixkv.kernels.DType;
import io.radixkv.lora.PeftAdapterWriter;
import io.radixkv.model.FamilyFixtures.Fixture;
import io.radixkv.sched.FinishReason;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.Stream;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * A PEFT adapter served by the engine against the same adapter merged into the base weights
 * ({@code W + scale · B · A}, computed in double by the test), for every family's tiny checkpoint:
 * the logits of every sampled token agree within 1e-4 and greedy tokens are identical, with the
 * prefix cache off and on (the repeat of a prompt then reuses the adapter's own cached pages); and
 * a batch mixing rows of three adapters and the base model gives every request exactly the tokens
 * and logits it gets alone.
 */
class LoraFamiliesTest {
    private static final double TOL = 1e-4;
    private static final int TOKENS = 6;

    static Stream<Fixture> fixtures() {
        return Stream.of(FamilyFixtures.llama32(), FamilyFixtures.qwen25(), FamilyFixtures.qwen3(),
                FamilyFixtures.mistral(), FamilyFixtures.gemma3(DType.F32));
    }

    private static PeftAdapterWriter.Dims dims(ReferenceDecoder.Spec s) {
        return new PeftAdapterWriter.Dims(s.layers(), s.hidden(), s.heads() * s.headDim(), s.kvHeads() * s.headDim(),
                s.inter());
    }

    private static EngineConfig config(Path dir, boolean prefixCache) {
        return EngineConfig.builder().model(dir.toString()).backend("cpu").kvDtype("f32").weightsDtype("f32")
                .pageSize(4).numPages(256).prefixCache(prefixCache).maxBatchTokens(64).maxLoras(4).build();
    }

    /** Tokens and the logits of each sampled token of one greedy request. */
    private record Run(int[] tokens, List<float[]> logits, int cachedPromptTokens) {}

    private static List<Run> runAll(Engine e, List<GenerateRequest> requests) {
        Map<String, List<float[]>> seen = new ConcurrentHashMap<>();
        e.setLogitsProbe((id, i, lg) -> seen.computeIfAbsent(id, k -> new ArrayList<>()).add(lg.clone()));
        List<RequestHandle> handles = new ArrayList<>();
        for (GenerateRequest r : requests) {
            handles.add(e.submit(r));
        }
        List<Run> out = new ArrayList<>();
        for (int i = 0; i < handles.size(); i++) {
            RequestResult res = handles.get(i).result().join();
            assertEquals(FinishReason.LENGTH, res.reason(), res.error());
            out.add(new Run(res.outputTokens(), seen.get(requests.get(i).id()), res.stats().cachedPromptTokens()));
        }
        e.setLogitsProbe(null);
        return out;
    }

    private static void assertSame(Run expected, Run got, String what, double tol) {
        assertArrayEquals(expected.tokens(), got.tokens(), what + ": greedy tokens");
        assertEquals(expected.logits().size(), got.logits().size(), what + ": sampled steps");
        double worst = 0;
        for (int t = 0; t < expected.logits().size(); t++) {
            float[] a = expected.logits().get(t);
            float[] b = got.logits().get(t);
            for (int v = 0; v < a.length; v++) {
                worst = Math.max(worst, Math.abs(a[v] - b[v]));
            }
        }
        assertTrue(worst <= tol, what + ": logits differ by " + worst + " (tolerance " + tol + ")");
    }

    private static Map<String, SafetensorsTestWriter.T> asTensors(Map<String, SafetensorsTestWriter.T> like,
                                                                  Map<String, float[]> values) {
        Map<String, SafetensorsTestWriter.T> out = new LinkedHashMap<>();
        like.forEach((k, t) -> out.put(k, new SafetensorsTestWriter.T(k, t.dtype(), t.shape(), values.get(k))));
        return out;
    }

    private static int[] prompt(Random r, int n) {
        int[] p = new int[n];
        for (int i = 0; i < n; i++) {
            p[i] = r.nextInt(FamilyFixtures.VOCAB);
        }
        return p;
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("fixtures")
    void anAdapterMatchesItsMergedWeights(Fixture f, @TempDir Path tmp) throws IOException {
        var base = FamilyFixtures.tensors(f.spec(), f.name().hashCode());
        FamilyFixtures.write(tmp.resolve("base"), f, base, "F32", false);
        var adapter = PeftAdapterWriter.factors(dims(f.spec()), PeftAdapterWriter.ALL, key -> 8, 41);
        // rsLoRA on this one: scale = alpha / sqrt(r)
        PeftAdapterWriter.write(tmp.resolve("ad"), PeftAdapterWriter.config(8, 16, "[\"q_proj\", \"k_proj\", \"v_proj\","
                + " \"o_proj\", \"gate_proj\", \"up_proj\", \"down_proj\"]", "\"use_rslora\": true"), adapter, "BF16");
        var merged = PeftAdapterWriter.merge(FamilyFixtures.values(base), adapter, key -> 16 / Math.sqrt(8));
        FamilyFixtures.write(tmp.resolve("merged"), f, asTensors(base, merged), "F32", false);

        Random r = new Random(5);
        int[] p1 = prompt(r, 11);
        int[] p2 = prompt(r, 9);
        for (boolean cache : new boolean[] {false, true}) {
            List<Run> want;
            try (Engine e = Engine.start(config(tmp.resolve("merged"), cache))) {
                want = runAll(e, List.of(new GenerateRequest("m1", p1, SamplingParams.greedy(TOKENS)),
                        new GenerateRequest("m2", p2, SamplingParams.greedy(TOKENS))));
            }
            try (Engine e = Engine.start(config(tmp.resolve("base"), cache))) {
                e.loadAdapter("ad", tmp.resolve("ad"));
                Namespace ns = Namespace.ofLora("ad");
                List<Run> got = runAll(e, List.of(new GenerateRequest("a1", p1, ns, SamplingParams.greedy(TOKENS)),
                        new GenerateRequest("a2", p2, ns, SamplingParams.greedy(TOKENS))));
                assertSame(want.get(0), got.get(0), f.name() + " cache " + cache + " prompt 1", TOL);
                assertSame(want.get(1), got.get(1), f.name() + " cache " + cache + " prompt 2", TOL);
                List<Run> base0 = runAll(e, List.of(new GenerateRequest("b1", p1, SamplingParams.greedy(TOKENS))));
                assertTrue(!java.util.Arrays.equals(base0.get(0).tokens(), got.get(0).tokens())
                        || !java.util.Arrays.equals(base0.get(0).logits().get(0), got.get(0).logits().get(0)),
                        "the adapter changes nothing: the test would not see it missing");
                if (cache) {
                    Run again = runAll(e, List.of(new GenerateRequest("a1-again", p1, ns,
                            SamplingParams.greedy(TOKENS)))).get(0);
                    assertTrue(again.cachedPromptTokens() > 0, "the adapter's repeat did not hit its own cache");
                    assertSame(want.get(0), again, f.name() + " repeat from the adapter's cache", TOL);
                }
            }
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("fixtures")
    void aMixedBatchGivesEveryRowItsSingleResult(Fixture f, @TempDir Path tmp) throws IOException {
        var base = FamilyFixtures.tensors(f.spec(), f.name().hashCode() + 1);
        FamilyFixtures.write(tmp.resolve("base"), f, base, "F32", false);
        PeftAdapterWriter.Dims d = dims(f.spec());
        PeftAdapterWriter.write(tmp.resolve("a"), PeftAdapterWriter.config(8, 16, "[\"q_proj\", \"v_proj\"]", ""),
                PeftAdapterWriter.factors(d, List.of("q_proj", "v_proj"), k -> 8, 1), "F32");
        PeftAdapterWriter.write(tmp.resolve("b"), PeftAdapterWriter.config(4, 8, "\"all-linear\"", ""),
                PeftAdapterWriter.factors(d, PeftAdapterWriter.ALL, k -> 4, 2), "F16");
        PeftAdapterWriter.write(tmp.resolve("c"), PeftAdapterWriter.config(16, 32, "\".*mlp\\\\.(gate|up|down)_proj\"",
                ""), PeftAdapterWriter.factors(d, List.of("gate_proj", "up_proj", "down_proj"), k -> 16, 3), "BF16");
        Random r = new Random(9);
        List<GenerateRequest> requests = new ArrayList<>();
        String[] adapters = {"a", "b", null, "c", "a", null, "b", "c"};
        for (int i = 0; i < adapters.length; i++) {
            Namespace ns = adapters[i] == null ? Namespace.DEFAULT : Namespace.ofLora(adapters[i]);
            requests.add(new GenerateRequest("q" + i, prompt(r, 5 + i), ns, SamplingParams.greedy(TOKENS)));
        }
        try (Engine e = Engine.start(config(tmp.resolve("base"), false))) {
            for (String a : List.of("a", "b", "c")) {
                e.loadAdapter(a, tmp.resolve(a));
            }
            List<Run> alone = new ArrayList<>();
            for (GenerateRequest q : requests) {
                alone.add(runAll(e, List.of(q)).get(0));
            }
            List<Run> together = runAll(e, requests);
            for (int i = 0; i < requests.size(); i++) {
                // tokens exactly; logits up to the base GEMMs' own batching (their summation order
                // depends on how many rows a step has), not per adapter
                assertSame(alone.get(i), together.get(i), f.name() + " request " + i + " (adapter " + adapters[i] + ")",
                        TOL);
            }
        }
    }
}
