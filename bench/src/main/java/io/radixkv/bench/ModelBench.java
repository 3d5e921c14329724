package io.radixkv.bench;

import io.radixkv.kernels.DType;
import io.radixkv.kernels.DenseKernels;
import io.radixkv.kernels.KernelBackend;
import io.radixkv.kernels.KvCacheView;
import io.radixkv.kernels.PageTableCsr;
import io.radixkv.kernels.PagedKvLayout;
import io.radixkv.kernels.cpu.CpuDenseKernels;
import io.radixkv.kernels.select.Backends;
import io.radixkv.model.ForwardBatch;
import io.radixkv.model.LlamaModel;
import io.radixkv.model.ModelConfig;
import io.radixkv.model.ModelPresets;
import io.radixkv.model.ModelWeights;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.AuxCounters;
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
 * Forward-step throughput of {@link LlamaModel} on a preset with random weights:
 * <ul>
 *   <li>{@code prefill}: one sequence, {@code prefillTokens} new tokens from position 0 (the
 *       {@code tokens} secondary score is prefill tokens/s);</li>
 *   <li>{@code prefillDense}: the same step's dense math only (every GEMM, norm, RoPE,
 *       SiLU·mul, no KV scatter or attention): the GEMM-bound share of prefill;</li>
 *   <li>{@code decode}: one step of {@code decodeBatch} sequences with {@code decodeContext}
 *       cached tokens each (ms per step).</li>
 * </ul>
 * The KV cache is f32, page size 16, on the {@code backend} kernels.
 */
public class ModelBench {

    @AuxCounters(AuxCounters.Type.OPERATIONS)
    @State(Scope.Thread)
    public static class Tokens {
        public long tokens;

        @Setup(Level.Iteration)
        public void reset() {
            tokens = 0;
        }
    }

    @State(Scope.Benchmark)
    public static class Setup1 {
        @Param({"small"})
        public String preset;

        @Param({"f32", "bf16"})
        public String weights;

        @Param({"cpu"})
        public String backend;

        @Param({"1024"})
        public int prefillTokens;

        @Param({"16"})
        public int decodeBatch;

        @Param({"1024"})
        public int decodeContext;

        static final int PAGE = 16;
        ModelConfig config;
        ModelWeights w;
        KernelBackend kernels;
        DenseKernels dense;
        LlamaModel model;
        Arena arena;
        List<KvCacheView> caches;
        ForwardBatch prefill;
        ForwardBatch decode;
        MemorySegment logits;
        // dense-only scratch
        MemorySegment h;
        MemorySegment x;
        MemorySegment qkv;
        MemorySegment gu;
        MemorySegment act;

        @Setup(Level.Trial)
        public void setup() {
            config = ModelPresets.byName(preset);
            w = ModelWeights.random(config, DType.parse(weights), 1);
            kernels = Backends.create(backend);
            dense = new CpuDenseKernels();
            int maxTokens = Math.max(prefillTokens, decodeBatch);
            model = new LlamaModel(config, w, dense, kernels, maxTokens);
            arena = Arena.ofShared();
            int prefillPages = (prefillTokens + PAGE - 1) / PAGE;
            int decodePagesPerSeq = (decodeContext + 1 + PAGE - 1) / PAGE;
            int numPages = Math.max(prefillPages, decodeBatch * decodePagesPerSeq);
            PagedKvLayout layout = new PagedKvLayout(DType.F32, numPages, PAGE, config.kvHeads(), config.headDim());
            caches = new ArrayList<>();
            for (int l = 0; l < config.layers(); l++) {
                caches.add(KvCacheView.of(arena.allocate(layout.poolBytes(), 64), arena.allocate(layout.poolBytes(), 64),
                        layout));
            }
            logits = arena.allocate(4L * decodeBatch * config.vocab(), 64);
            prefill = prefillBatch(prefillPages);
            decode = decodeBatch(decodePagesPerSeq);
            long t = maxTokens;
            h = arena.allocate(4 * t * config.hidden(), 64);
            x = arena.allocate(4 * t * config.hidden(), 64);
            qkv = arena.allocate(4 * t * Math.max(config.qkvDim(), config.qDim()), 64);
            gu = arena.allocate(4 * t * 2 * config.intermediate(), 64);
            act = arena.allocate(4 * t * config.intermediate(), 64);
        }

        private MemorySegment ints(int n) {
            return arena.allocate(4L * Math.max(n, 1), 64);
        }

        private ForwardBatch prefillBatch(int pages) {
            int n = prefillTokens;
            MemorySegment ids = ints(n);
            MemorySegment pos = ints(n);
            MemorySegment slots = arena.allocate(8L * n, 64);
            for (int i = 0; i < n; i++) {
                ids.setAtIndex(ValueLayout.JAVA_INT, i, (i * 7919 + 13) % config.vocab());
                pos.setAtIndex(ValueLayout.JAVA_INT, i, i);
                slots.setAtIndex(ValueLayout.JAVA_LONG, i, i); // pages 0.. in order
            }
            MemorySegment qo = arena.allocateFrom(ValueLayout.JAVA_INT, 0, n);
            MemorySegment indptr = arena.allocateFrom(ValueLayout.JAVA_INT, 0, pages);
            MemorySegment idx = ints(pages);
            for (int p = 0; p < pages; p++) {
                idx.setAtIndex(ValueLayout.JAVA_INT, p, p);
            }
            MemorySegment last = arena.allocateFrom(ValueLayout.JAVA_INT, (n - 1) % PAGE + 1);
            MemorySegment rows = arena.allocateFrom(ValueLayout.JAVA_INT, n - 1);
            return new ForwardBatch(ids, pos, n, slots, qo, new PageTableCsr(indptr, idx, last, 1), rows, 1);
        }

        private ForwardBatch decodeBatch(int pagesPerSeq) {
            int b = decodeBatch;
            MemorySegment ids = ints(b);
            MemorySegment pos = ints(b);
            MemorySegment slots = arena.allocate(8L * b, 64);
            MemorySegment qo = ints(b + 1);
            MemorySegment indptr = ints(b + 1);
            MemorySegment idx = ints(b * pagesPerSeq);
            MemorySegment last = ints(b);
            MemorySegment rows = ints(b);
            int p = decodeContext; // position of the new token
            for (int s = 0; s < b; s++) {
                ids.setAtIndex(ValueLayout.JAVA_INT, s, (s * 104729 + 1) % config.vocab());
                pos.setAtIndex(ValueLayout.JAVA_INT, s, p);
                for (int j = 0; j < pagesPerSeq; j++) {
                    idx.setAtIndex(ValueLayout.JAVA_INT, s * pagesPerSeq + j, s * pagesPerSeq + j);
                }
                slots.setAtIndex(ValueLayout.JAVA_LONG, s, (long) (s * pagesPerSeq + p / PAGE) * PAGE + p % PAGE);
                qo.setAtIndex(ValueLayout.JAVA_INT, s + 1, s + 1);
                indptr.setAtIndex(ValueLayout.JAVA_INT, s + 1, (s + 1) * pagesPerSeq);
                last.setAtIndex(ValueLayout.JAVA_INT, s, p % PAGE + 1);
                rows.setAtIndex(ValueLayout.JAVA_INT, s, s);
            }
            return new ForwardBatch(ids, pos, b, slots, qo, new PageTableCsr(indptr, idx, last, b), rows, b);
        }

        @TearDown(Level.Trial)
        public void tearDown() {
            model.close();
            kernels.close();
            w.close();
            arena.close();
        }
    }

    @Benchmark
    @BenchmarkMode(Mode.Throughput)
    @OutputTimeUnit(TimeUnit.SECONDS)
    public void prefill(Setup1 s, Tokens t) {
        s.model.forward(s.prefill, s.caches, s.logits);
        t.tokens += s.prefillTokens;
    }

    @Benchmark
    @BenchmarkMode(Mode.Throughput)
    @OutputTimeUnit(TimeUnit.SECONDS)
    public void prefillDense(Setup1 s, Tokens t) {
        ModelConfig c = s.config;
        DenseKernels d = s.dense;
        DType wt = s.w.dtype();
        int n = s.prefillTokens;
        d.embedding(s.prefill.tokenIds(), n, s.w.embed(), wt, c.vocab(), c.hidden(), s.h);
        for (int l = 0; l < c.layers(); l++) {
            ModelWeights.Layer L = s.w.layer(l);
            d.rmsnorm(s.h, L.inputNorm(), s.x, n, c.hidden(), c.rmsEps());
            d.linear(s.x, L.qkv(), wt, s.qkv, n, c.qkvDim(), c.hidden(), false);
            d.rope(s.qkv, s.gu, s.prefill.positions(), n, c.heads(), c.kvHeads(), c.headDim(), (float) c.layerAttention().get(0).rope().theta());
            d.linear(s.qkv, L.o(), wt, s.h, n, c.hidden(), c.qDim(), true);
            d.rmsnorm(s.h, L.postNorm(), s.x, n, c.hidden(), c.rmsEps());
            d.linear(s.x, L.gateUp(), wt, s.gu, n, 2L * c.intermediate(), c.hidden(), false);
            d.siluMul(s.gu, s.act, n, c.intermediate());
            d.linear(s.act, L.down(), wt, s.h, n, c.hidden(), c.intermediate(), true);
        }
        d.rmsnorm(s.h, s.w.finalNorm(), s.x, 1, c.hidden(), c.rmsEps());
        d.linear(s.x, s.w.lmHead(), wt, s.logits, 1, c.vocab(), c.hidden(), false);
        t.tokens += n;
    }

    @Benchmark
    @BenchmarkMode(Mode.AverageTime)
    @OutputTimeUnit(TimeUnit.MILLISECONDS)
    public void decode(Setup1 s) {
        s.model.forward(s.decode, s.caches, s.logits);
    }
}
