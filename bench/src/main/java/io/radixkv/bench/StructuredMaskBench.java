package io.radixkv.bench;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.radixkv.kernels.cpu.CpuSampling;
import io.radixkv.kernels.cpu.CpuTokenBitmask;
import io.radixkv.model.Sampler;
import io.radixkv.model.SamplingParams;
import io.radixkv.structured.Constraint;
import io.radixkv.structured.Grammar;
import io.radixkv.structured.GrammarCompiler;
import io.radixkv.structured.GrammarMatcher;
import io.radixkv.structured.TokenVocabulary;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

/**
 * The cost of structured outputs on real vocabularies (Llama 3.1's 128256 tokens, Qwen3's 151936),
 * read from the tokenizer.json under {@code -Dradixkv.bench.testData} (default
 * {@code build/test-data}, where the test build fetches them).
 *
 * <p>{@code warmStep}: one decode step of a constrained request in a server's steady state, the
 * grammar's masks already cached: {@code allowedTokens} then {@code accept} of the next token of
 * a fixed valid output (its tokens are the greedy longest match over the vocabulary's bytes, an
 * end token last), µs per token. {@code coldCompile}: the constraint compiled on a cache miss
 * (the vocabulary's trie already built, as it is once per model). {@code coldFirstPass}: that
 * compile plus the first walk over the output, every mask computed for the first time.
 * {@code constraint}: {@code json_object}, {@code schema} (10 properties: strings, integers, an
 * enum, a nested object, an array of strings), {@code regex} (an email-like pattern).
 *
 * <p>{@code applyMask} is {@code rkv_apply_token_bitmask} over {@code rows} x vocab logits ({@code masksOf}:
 * {@code json_object}'s masks along the fixed output, or the regex's, which allow few tokens; the
 * masks copied to native memory included, as the engine does each step) against
 * {@code sampleTemperature}, {@code rkv_sample} at T 0.8 over the same rows, in the same run.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
public class StructuredMaskBench {
    static final String INSTANCE = "{\"id\":4182,\"name\":\"Jane Doe\",\"email\":\"jane.doe@example.org\","
            + "\"age\":37,\"role\":\"editor\",\"city\":\"Lyon\",\"score\":-12,"
            + "\"address\":{\"street\":\"12 Rue de la Paix\",\"zip\":69002},"
            + "\"tags\":[\"alpha\",\"beta\",\"gamma\"],\"note\":\"first draft, reviewed twice\"}";
    static final String SCHEMA = """
            {"type":"object","properties":{
              "id":{"type":"integer"},"name":{"type":"string"},"email":{"type":"string"},
              "age":{"type":"integer"},"role":{"enum":["admin","editor","viewer"]},
              "city":{"type":"string"},"score":{"type":"integer"},
              "address":{"type":"object","properties":{"street":{"type":"string"},"zip":{"type":"integer"}},
                         "required":["street","zip"]},
              "tags":{"type":"array","items":{"type":"string"}},"note":{"type":"string"}},
             "required":["id","name","email","age","role","city","score","address","tags","note"]}""";
    static final String REGEX = "[a-z0-9._]+@[a-z0-9-]+(\\.[a-z0-9-]+)*\\.[a-z]{2,6}";
    static final String REGEX_INSTANCE = "jane.doe_42@mail.example.org";

    /** A model's vocabulary: tokenizer directory under the test data, logits width, end ids. */
    record Model(String dir, int size, List<Integer> endIds) {
        static Model of(String name) {
            return switch (name) {
                case "llama3_1" -> new Model("llama3_1", 128256, List.of(128001, 128008, 128009));
                case "qwen3" -> new Model("qwen3", 151936, List.of(151643, 151645));
                default -> throw new IllegalArgumentException("tokenizer " + name);
            };
        }

        TokenVocabulary load() {
            Path root = Path.of(System.getProperty("radixkv.bench.testData", "build/test-data"));
            Path file = root.resolve(dir).resolve("tokenizer.json");
            if (!Files.isRegularFile(file)) {
                throw new IllegalStateException(file.toAbsolutePath() + " is absent: build the tests once (they "
                        + "fetch it) or pass -Dradixkv.bench.testData=DIR holding " + dir + "/tokenizer.json");
            }
            try {
                return TokenVocabulary.fromTokenizerJson(file, size, endIds);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
    }

    static Constraint constraint(String name) {
        try {
            return switch (name) {
                case "json_object" -> Constraint.jsonObject();
                case "schema" -> Constraint.jsonSchema(new ObjectMapper().readTree(SCHEMA));
                case "regex" -> Constraint.regex(REGEX);
                default -> throw new IllegalArgumentException("constraint " + name);
            };
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /**
     * {@code text}'s tokens by greedy longest match over the vocabulary's bytes, then the first
     * end id: a valid output of the constraint, though not the tokenizer's own merges.
     */
    static int[] tokenize(TokenVocabulary vocab, String text) {
        Map<String, Integer> ids = new HashMap<>();
        int longest = 0;
        for (int id = 0; id < vocab.size(); id++) {
            byte[] b = vocab.bytes(id);
            if (b != null && b.length > 0 && !vocab.isEnd(id)) {
                ids.putIfAbsent(new String(b, StandardCharsets.ISO_8859_1), id);
                longest = Math.max(longest, b.length);
            }
        }
        String bytes = new String(text.getBytes(StandardCharsets.UTF_8), StandardCharsets.ISO_8859_1);
        List<Integer> out = new ArrayList<>();
        for (int at = 0; at < bytes.length(); ) {
            int len = Math.min(longest, bytes.length() - at);
            Integer id = null;
            for (; len > 0 && (id = ids.get(bytes.substring(at, at + len))) == null; len--) {
                // shorter
            }
            if (id == null) {
                throw new IllegalStateException("no token covers byte " + at + " of " + text);
            }
            out.add(id);
            at += len;
        }
        out.add(vocab.endIds()[0]);
        return out.stream().mapToInt(Integer::intValue).toArray();
    }

    /** A constraint, its compiler and a valid output's tokens on one model. */
    @State(Scope.Benchmark)
    public static class Walk {
        @Param({"llama3_1", "qwen3"})
        public String tokenizer;

        @Param({"json_object", "schema", "regex"})
        public String constraint;

        GrammarCompiler missing;
        Constraint c;
        int[] tokens;
        Grammar warm;
        GrammarMatcher matcher;
        int next;

        @Setup(Level.Trial)
        public void setUp() {
            MachineLine.print();
            TokenVocabulary vocab = Model.of(tokenizer).load();
            missing = new GrammarCompiler(vocab, 0); // capacity 0: every compile is a miss
            c = constraint(constraint);
            tokens = tokenize(vocab, constraint.equals("regex") ? REGEX_INSTANCE : INSTANCE);
            warm = missing.compile(c);
            walk(warm, tokens); // the masks of every state on the way, cached
            System.out.printf("# %s %s: %d tokens, %d masks cached%n", tokenizer, constraint, tokens.length,
                    warm.stats().masksCached());
            matcher = warm.newMatcher();
        }
    }

    static int walk(Grammar g, int[] tokens) {
        GrammarMatcher m = g.newMatcher();
        int acc = 0;
        for (int t : tokens) {
            acc += m.allowedTokens()[t >>> 5];
            if (!m.accept(t)) {
                throw new IllegalStateException("token " + t + " refused by " + g.constraint());
            }
        }
        return acc;
    }

    @Benchmark
    public int warmStep(Walk w) {
        if (w.next == w.tokens.length) {
            w.matcher = w.warm.newMatcher();
            w.next = 0;
        }
        int t = w.tokens[w.next++];
        int word = w.matcher.allowedTokens()[t >>> 5];
        return w.matcher.accept(t) ? word : -1;
    }

    @Benchmark
    public Grammar coldCompile(Walk w) {
        return w.missing.compile(w.c);
    }

    @Benchmark
    public int coldFirstPass(Walk w) {
        return walk(w.missing.compile(w.c), w.tokens);
    }

    /** {@code rows} x vocab logits and a mask per row: {@code json_object}'s (dense) or the regex's (sparse). */
    @State(Scope.Benchmark)
    public static class Rows {
        @Param({"llama3_1", "qwen3"})
        public String tokenizer;

        @Param({"json_object"})
        public String masksOf;

        @Param({"64"})
        public int rows;

        Arena arena;
        MemorySegment logits;
        MemorySegment scratch;
        int vocab;
        int[][] masks;
        int[] rowIndices;
        SamplingParams[] params;
        long[] steps;
        long step;

        @Setup(Level.Trial)
        public void setUp() {
            MachineLine.print();
            TokenVocabulary v = Model.of(tokenizer).load();
            vocab = v.size();
            Grammar g = new GrammarCompiler(v, 1).compile(constraint(masksOf));
            int[] tokens = tokenize(v, masksOf.equals("regex") ? REGEX_INSTANCE : INSTANCE);
            // the rows' masks: the states along the output, so that they differ
            List<int[]> along = new ArrayList<>();
            GrammarMatcher m = g.newMatcher();
            for (int t : tokens) {
                along.add(m.allowedTokens());
                m.accept(t);
            }
            masks = new int[rows][];
            rowIndices = new int[rows];
            for (int r = 0; r < rows; r++) {
                masks[r] = along.get(r % along.size());
                rowIndices[r] = r;
            }
            arena = Arena.ofShared();
            logits = arena.allocate((long) rows * vocab * 4, 64);
            scratch = arena.allocate((long) rows * vocab * 4, 64);
            SplittableRandom rnd = new SplittableRandom(5);
            for (long i = 0; i < (long) rows * vocab; i++) {
                logits.setAtIndex(ValueLayout.JAVA_FLOAT, i, (float) (rnd.nextGaussian() * 8));
            }
            scratch.copyFrom(logits);
            params = new SamplingParams[rows];
            for (int r = 0; r < rows; r++) {
                params[r] = new SamplingParams(16, 0.8f, 1f, r, List.of());
            }
            steps = new long[rows];
        }

        @TearDown
        public void tearDown() {
            arena.close();
        }
    }

    @Benchmark
    public MemorySegment applyMask(Rows r) {
        // masking is idempotent: the same rows masked again cost the same
        CpuTokenBitmask.instance().applyTokenBitmask(r.scratch, r.rows, r.vocab, r.masks, r.rowIndices);
        return r.scratch;
    }

    @Benchmark
    public int sampleTemperature(Rows r) {
        r.step++;
        Arrays.fill(r.steps, r.step);
        int acc = 0;
        for (int t : Sampler.sampleRows(CpuSampling.instance(), r.logits, r.vocab, r.params, r.steps, null)) {
            acc += t;
        }
        return acc;
    }
}
