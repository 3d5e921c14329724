package io.radixkv.structured;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.radixkv.engine.Engine;
import io.radixkv.engine.EngineConfig;
import io.radixkv.engine.GenerateRequest;
import io.radixkv.engine.RequestResult;
import io.radixkv.kernels.DType;
import io.radixkv.model.ModelPresets;
import io.radixkv.model.SamplingParams;
import io.radixkv.sched.FinishReason;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The engine generating under constraints: the tiny random-weight model over a synthetic
 * vocabulary (every byte but 0 as a token, thousands of random multi-byte tokens of JSON-ish
 * text, some special tokens, token 0 the end), sampled and greedy rows batched together, many
 * seeds per constraint. Each schema's language is finite, so every generation must end with the
 * end token, and its text must validate with networknt's validator (regexes: java.util.regex).
 */
class ConstrainedGenerationTest {
    private static final int EOS = 0;
    private static final List<byte[]> TOKENS = tokens();
    private static Engine engine;
    private static GrammarCompiler compiler;

    /** Bounded schemas: strings, arrays and recursion all have limits. */
    private static final List<String> FINITE_SCHEMAS = List.of(
            """
            {"type":"object","properties":{"name":{"type":"string","maxLength":6},"age":{"type":"integer","minimum":0,"maximum":120},
             "ok":{"type":"boolean"},"tags":{"type":"array","items":{"enum":["a","b","c d"]},"maxItems":3}},
             "required":["name","age","ok","tags"],"additionalProperties":false}""",
            """
            {"$defs":{"leaf":{"type":"object","properties":{"k":{"type":"string","enum":["x","y"]},
               "n":{"anyOf":[{"type":"integer","minimum":-9,"maximum":9},{"type":"null"}]}},"required":["k"],"additionalProperties":false}},
             "type":"object","properties":{"items":{"type":"array","items":{"$ref":"#/$defs/leaf"},"minItems":1,"maxItems":2},
               "inner":{"type":"object","properties":{"id":{"type":"string","format":"uuid"},"d":{"type":"string","format":"date"}},
               "required":["id","d"],"additionalProperties":false}},
             "required":["items","inner"],"additionalProperties":false}""",
            """
            {"anyOf":[{"type":"string","enum":["alpha","beta"]},{"type":"array","items":{"type":"integer","minimum":0,"maximum":99},"maxItems":4},
                      {"const":{"fixed":[1,2]}}]}""");

    @BeforeAll
    static void start() {
        engine = Engine.start(EngineConfig.builder().model("tiny").weightsSeed(7).kvDtype(DType.F32).pageSize(4)
                .numPages(2048).maxBatchTokens(64).maxRunning(8).backend("cpu").build());
        compiler = new GrammarCompiler(TokenVocabulary.of(TOKENS, ModelPresets.tiny().vocab(), List.of(EOS)), 8);
    }

    @AfterAll
    static void stop() {
        engine.close();
    }

    @Test
    void generationsUnderEverySchemaValidate() {
        for (String schema : FINITE_SCHEMAS) {
            Grammar g = compiler.compile(Constraint.jsonSchema(JsonSchemas.parse(schema)));
            for (RequestResult r : run(g, 8)) {
                String text = completedText(r);
                JsonNode v = JsonSchemas.parse(text);
                assertEquals(List.of(), JsonSchemas.errors(schema, v), schema + "\n" + text);
            }
        }
    }

    @Test
    void generationsUnderARegexAndAChoiceMatch() {
        String regex = "(?:[a-c]{1,3}-\\d{2}|é+x){1,2}";
        for (RequestResult r : run(compiler.compile(Constraint.regex(regex)), 8)) {
            String text = completedText(r);
            assertTrue(Pattern.compile(regex).matcher(text).matches(), text);
        }
        for (RequestResult r : run(compiler.compile(Constraint.choice(List.of("yes", "no", "maybe so"))), 6)) {
            assertTrue(List.of("yes", "no", "maybe so").contains(completedText(r)));
        }
    }

    @Test
    void aConstraintNoTokenCanContinueFailsOnlyItsRequest() {
        // byte 0 is no token's: after "a" nothing can follow
        Grammar stuck = compiler.compile(Constraint.regex("a\\x00"));
        Grammar fine = compiler.compile(Constraint.choice(List.of("ok")));
        List<RequestResult> rs = engine.runConcurrently(List.of(
                new GenerateRequest("stuck", new int[] {5, 6, 7}, null, new SamplingParams(20, 1f, 1f, 1, List.of(EOS)), stuck),
                new GenerateRequest("fine", new int[] {5, 6, 8}, null, new SamplingParams(20, 0f, 1f, 1, List.of(EOS)), fine)));
        assertEquals(FinishReason.ERROR, rs.get(0).reason());
        assertTrue(rs.get(0).error().contains("no token of the vocabulary"), rs.get(0).error());
        assertEquals("ok", completedText(rs.get(1)));
    }

    @Test
    void unconstrainedGreedyRowsBesideConstrainedOnesAreUnchanged() {
        int[] prompt = {11, 12, 13, 14};
        GenerateRequest plain = new GenerateRequest("plain", prompt, SamplingParams.greedy(12));
        int[] alone = engine.runToCompletion(List.of(plain)).get(0).outputTokens();
        Grammar g = compiler.compile(Constraint.jsonObject());
        List<RequestResult> rs = engine.runConcurrently(List.of(plain,
                new GenerateRequest("json", new int[] {11, 12, 13, 15}, null, SamplingParams.greedy(12), g)));
        assertEquals(java.util.Arrays.toString(alone), java.util.Arrays.toString(rs.get(0).outputTokens()));
        // the constrained greedy row is masked: its text is a prefix of a JSON object
        byte[] b = bytes(rs.get(1).outputTokens());
        assertTrue(b.length > 0 && b[0] == '{', new String(b, StandardCharsets.UTF_8));
        assertFalse(new String(b, StandardCharsets.UTF_8).equals(new String(bytes(alone), StandardCharsets.UTF_8)));
    }

    /** {@code n} requests, half sampled (seeds 1..), half greedy with distinct prompts, run together. */
    private static List<RequestResult> run(Grammar g, int n) {
        List<GenerateRequest> reqs = new ArrayList<>();
        SplittableRandom rnd = new SplittableRandom(n);
        for (int i = 0; i < n; i++) {
            int[] prompt = {1 + rnd.nextInt(30_000), 1 + rnd.nextInt(30_000), 1 + rnd.nextInt(30_000)};
            SamplingParams p = new SamplingParams(1500, i % 2 == 0 ? 1f : 0f, i % 4 == 0 ? 0.9f : 1f, i, List.of(EOS));
            reqs.add(new GenerateRequest("r" + i, prompt, null, p, g));
        }
        return engine.runConcurrently(reqs);
    }

    /** The text of a generation that ended with the end token. */
    private static String completedText(RequestResult r) {
        assertEquals(FinishReason.STOP, r.reason(), r.id() + ": " + r.error());
        int[] out = r.outputTokens();
        assertEquals(EOS, out[out.length - 1]);
        return new String(bytes(java.util.Arrays.copyOf(out, out.length - 1)), StandardCharsets.UTF_8);
    }

    private static byte[] bytes(int[] ids) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        for (int id : ids) {
            byte[] b = TOKENS.get(id);
            if (b == null) {
                throw new AssertionError("special token " + id + " was generated");
            }
            out.writeBytes(b);
        }
        return out.toByteArray();
    }

    private static List<byte[]> tokens() {
        List<byte[]> t = new ArrayList<>();
        t.add(null); // 0: the end token
        for (int b = 1; b < 256; b++) {
            t.add(new byte[] {(byte) b});
        }
        for (int i = 256; i < 300; i++) {
            t.add(null); // special tokens
        }
        String alphabet = "{}[]\":, abcxyz-0123456789é\n";
        SplittableRandom rnd = new SplittableRandom(99);
        while (t.size() < ModelPresets.tiny().vocab()) {
            int len = 2 + rnd.nextInt(5);
            StringBuilder s = new StringBuilder();
            for (int k = 0; k < len; k++) {
                s.append(alphabet.charAt(rnd.nextInt(alphabet.length())));
            }
            t.add(s.toString().getBytes(StandardCharsets.UTF_8));
        }
        return t;
    }
}
