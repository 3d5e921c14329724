package io.radixkv.bench;

import io.radixkv.cache.EvictionPolicy;
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
 * Eviction of 10 000 unlocked leaves (a shared 1-page prefix with 10 000 one-page branches, random
 * access order), through the heap with lazy invalidation: one op evicts them all, one victim at a
 * time as the allocator would ask for pages, and finally the shared parent.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@State(Scope.Thread)
public class RadixCacheEvictBench {

    @Param({"10000"})
    public int leaves;

    @Param({"LRU", "LFU"})
    public EvictionPolicy policy;

    RadixCache cache;
    long freed;

    @Setup(Level.Invocation)
    public void setup() {
        Random rnd = new Random(3);
        long[] tick = {0};
        cache = new RadixCache(16, policy, (p, o, l) -> freed += l, () -> ++tick[0]);
        int[] ids = new int[32];
        TokenSequence[] seqs = new TokenSequence[leaves];
        for (int i = 0; i < leaves; i++) {
            for (int j = 16; j < 32; j++) {
                ids[j] = rnd.nextInt(150_000);
            }
            ids[16] = i; // distinct first key per branch
            seqs[i] = TokenSequence.ofText(ids);
            cache.insert(Namespace.DEFAULT, seqs[i], 32, new int[] {0, 1 + i});
        }
        for (int i = 0; i < leaves; i++) { // shuffle recency (and hit counts)
            cache.match(Namespace.DEFAULT, seqs[rnd.nextInt(leaves)]);
        }
    }

    @Benchmark
    public int evictAllLeavesOneByOne() {
        int n = 0;
        while (cache.evict(1) > 0) {
            n++;
        }
        return n;
    }
}
