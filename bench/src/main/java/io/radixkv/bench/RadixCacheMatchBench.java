package io.radixkv.bench;

import io.radixkv.cache.EvictionPolicy;
import io.radixkv.cache.MatchResult;
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
 * Prefix match latency on prompts of 1k, 8k and 32k tokens.
 * <ul>
 *   <li>warm: the whole prompt is cached (one node), match refreshes access times and copies the
 *       page ids;</li>
 *   <li>warmShared: the prompt's prefix is shared by 64 cached requests that branch at the end
 *       (system prompt + suffixes), the query is one of them;</li>
 *   <li>peek: read-only {@code peekMatchLength} of the warm prompt;</li>
 *   <li>cold: the namespace holds other prompts, the query misses at its first page;</li>
 *   <li>split: the match ends in the middle of a cached node, which is split (fresh tree per
 *       invocation).</li>
 * </ul>
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@State(Scope.Thread)
public class RadixCacheMatchBench {

    @Param({"1024", "8192", "32768"})
    public int promptLen;

    @Param({"16"})
    public int pageSize;

    RadixCache warmCache;
    RadixCache sharedCache;
    TokenSequence prompt;
    TokenSequence sharedQuery;
    TokenSequence coldQuery;

    static int[] ids(Random rnd, int n) {
        int[] a = new int[n];
        for (int i = 0; i < n; i++) {
            a[i] = rnd.nextInt(150_000);
        }
        return a;
    }

    static int[] pages(int from, int n) {
        int[] p = new int[n];
        for (int i = 0; i < n; i++) {
            p[i] = from + i;
        }
        return p;
    }

    @Setup(Level.Trial)
    public void setup() {
        Random rnd = new Random(42);
        int[] ids = ids(rnd, promptLen);
        prompt = TokenSequence.ofText(ids);
        warmCache = new RadixCache(pageSize, EvictionPolicy.LRU, (p, o, l) -> { });
        warmCache.insert(Namespace.DEFAULT, prompt, prompt.size(), pages(0, promptLen / pageSize));
        for (int i = 0; i < 8; i++) { // other prompts in the same tree
            TokenSequence other = TokenSequence.ofText(ids(rnd, promptLen));
            warmCache.insert(Namespace.DEFAULT, other, other.size(), pages((i + 1) * promptLen, promptLen / pageSize));
        }
        coldQuery = TokenSequence.ofText(ids(rnd, promptLen));

        sharedCache = new RadixCache(pageSize, EvictionPolicy.LRU, (p, o, l) -> { });
        int prefix = promptLen - 4 * pageSize;
        int[] q = ids.clone();
        for (int r = 0; r < 64; r++) {
            for (int i = prefix; i < promptLen; i++) {
                q[i] = rnd.nextInt(150_000);
            }
            TokenSequence s = TokenSequence.ofText(q);
            int[] pg = pages(0, promptLen / pageSize);
            for (int i = prefix / pageSize; i < pg.length; i++) {
                pg[i] = promptLen + r * 64 + i;
            }
            sharedCache.insert(Namespace.DEFAULT, s, s.size(), pg);
            sharedQuery = s;
        }
    }

    @Benchmark
    public MatchResult warm() {
        return warmCache.match(Namespace.DEFAULT, prompt);
    }

    @Benchmark
    public MatchResult warmShared() {
        return sharedCache.match(Namespace.DEFAULT, sharedQuery);
    }

    @Benchmark
    public int peek() {
        return warmCache.peekMatchLength(Namespace.DEFAULT, prompt);
    }

    @Benchmark
    public MatchResult cold() {
        return warmCache.match(Namespace.DEFAULT, coldQuery);
    }

    /** Fresh single-node tree per invocation; the match stops halfway and splits the node. */
    @State(Scope.Thread)
    public static class SplitState {
        RadixCache cache;
        TokenSequence half;

        @Setup(Level.Invocation)
        public void setup(RadixCacheMatchBench b) {
            cache = new RadixCache(b.pageSize, EvictionPolicy.LRU, (p, o, l) -> { });
            cache.insert(Namespace.DEFAULT, b.prompt, b.prompt.size(), pages(0, b.promptLen / b.pageSize));
            if (half == null) {
                half = b.prompt.subSequence(0, b.promptLen / 2 + 3);
            }
        }
    }

    @Benchmark
    public MatchResult split(SplitState s) {
        return s.cache.match(Namespace.DEFAULT, s.half);
    }
}
