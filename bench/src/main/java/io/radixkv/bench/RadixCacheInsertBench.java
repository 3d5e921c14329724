package io.radixkv.bench;

import io.radixkv.cache.EvictionPolicy;
import io.radixkv.cache.InsertResult;
import io.radixkv.cache.Namespace;
import io.radixkv.cache.RadixCache;
import io.radixkv.cache.TokenSequence;
import java.util.Random;
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

/**
 * Insert latency on prompts of 1k, 8k and 32k tokens: cold (empty tree: one new node, keys and
 * page ids copied), warm (already cached: a walk, nothing inserted), extend (second half of a
 * chunked prefill: walk the first half, add the rest), split (diverges mid-node: split + new leaf).
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@State(Scope.Thread)
public class RadixCacheInsertBench {

    @Param({"1024", "8192", "32768"})
    public int promptLen;

    @Param({"16"})
    public int pageSize;

    TokenSequence prompt;
    TokenSequence diverging;
    int[] pages;
    int[] divergingPages;
    RadixCache warmCache;
    RadixCache fresh;

    @Setup(Level.Trial)
    public void setup() {
        Random rnd = new Random(1);
        int[] ids = new int[promptLen];
        for (int i = 0; i < promptLen; i++) {
            ids[i] = rnd.nextInt(150_000);
        }
        prompt = TokenSequence.ofText(ids);
        int[] d = ids.clone();
        d[promptLen / 2 + 5] = 150_001;
        diverging = TokenSequence.ofText(d);
        pages = RadixCacheMatchBench.pages(0, promptLen / pageSize);
        divergingPages = RadixCacheMatchBench.pages(0, promptLen / pageSize);
        for (int i = promptLen / 2 / pageSize; i < divergingPages.length; i++) {
            divergingPages[i] += promptLen;
        }
        warmCache = new RadixCache(pageSize, EvictionPolicy.LRU, (p, o, l) -> { });
        warmCache.insert(Namespace.DEFAULT, prompt, prompt.size(), pages);
    }

    @Setup(Level.Invocation)
    public void freshCache() {
        fresh = new RadixCache(pageSize, EvictionPolicy.LRU, (p, o, l) -> { });
    }

    @Benchmark
    public InsertResult cold() {
        return fresh.insert(Namespace.DEFAULT, prompt, prompt.size(), pages);
    }

    @Benchmark
    public InsertResult warm() {
        return warmCache.insert(Namespace.DEFAULT, prompt, prompt.size(), pages);
    }

    /** Tree holding the first half (chunked prefill); the op inserts the whole prompt. */
    @State(Scope.Thread)
    public static class HalfState {
        RadixCache cache;

        @Setup(Level.Invocation)
        public void setup(RadixCacheInsertBench b) {
            cache = new RadixCache(b.pageSize, EvictionPolicy.LRU, (p, o, l) -> { });
            cache.insert(Namespace.DEFAULT, b.prompt, b.promptLen / 2, b.pages);
        }
    }

    @Benchmark
    public InsertResult extend(HalfState s) {
        return s.cache.insert(Namespace.DEFAULT, prompt, prompt.size(), pages);
    }

    /** Tree holding the whole prompt; the op inserts a prompt diverging halfway: split + new leaf. */
    @State(Scope.Thread)
    public static class FullState {
        RadixCache cache;

        @Setup(Level.Invocation)
        public void setup(RadixCacheInsertBench b) {
            cache = new RadixCache(b.pageSize, EvictionPolicy.LRU, (p, o, l) -> { });
            cache.insert(Namespace.DEFAULT, b.prompt, b.prompt.size(), b.pages);
        }
    }

    @Benchmark
    public InsertResult split(FullState s) {
        return s.cache.insert(Namespace.DEFAULT, diverging, diverging.size(), divergingPages);
    }
}
