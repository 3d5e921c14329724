package io.radixkv.bench;

import io.radixkv.cache.CacheMetrics;
import io.radixkv.cache.EvictionPolicy;
import io.radixkv.cache.Namespace;
import io.radixkv.cache.RadixCache;
import io.radixkv.cache.TokenSequence;
import java.util.Random;
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

/**
 * Memory per cached token: 64 requests share a long prefix (system prompt + documents) and each
 * adds 256 unique tokens; the tree caches {@code prefixLen + 64*256} tokens. The op's time is the
 * build; the bytes are reported as JMH auxiliary counters, <b>summed over the measurement
 * iterations</b> (JMH's EVENTS semantics: divide by the iteration count), and printed per build:
 * <ul>
 *   <li>treeBytesPerToken: the cache's own estimate (nodes, keys, page ids, child tables, heap);</li>
 *   <li>structBytesPerToken: the same without token keys and page ids (pure tree overhead);</li>
 *   <li>heapBytesPerToken: measured heap growth after full GCs (includes everything reachable).</li>
 * </ul>
 */
@BenchmarkMode(Mode.SingleShotTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@State(Scope.Thread)
public class RadixCacheMemoryBench {

    @Param({"32768"})
    public int prefixLen;

    @Param({"16", "1"})
    public int pageSize;

    @AuxCounters(AuxCounters.Type.EVENTS)
    @State(Scope.Thread)
    public static class Bytes {
        public double treeBytesPerToken;
        public double structBytesPerToken;
        public double heapBytesPerToken;

        @Setup(Level.Iteration)
        public void reset() {
            treeBytesPerToken = structBytesPerToken = heapBytesPerToken = 0;
        }
    }

    static long usedAfterGc() {
        Runtime rt = Runtime.getRuntime();
        for (int i = 0; i < 3; i++) {
            System.gc();
        }
        return rt.totalMemory() - rt.freeMemory();
    }

    @Benchmark
    public RadixCache buildSharedPrefixTree(Bytes out) {
        long before = usedAfterGc();
        Random rnd = new Random(9);
        int[] prefix = new int[prefixLen];
        for (int i = 0; i < prefixLen; i++) {
            prefix[i] = rnd.nextInt(150_000);
        }
        RadixCache cache = new RadixCache(pageSize, EvictionPolicy.LRU, (p, o, l) -> { });
        int total = prefixLen + 256;
        int[] ids = java.util.Arrays.copyOf(prefix, total);
        int[] pages = new int[total / pageSize];
        int next = 0;
        for (int i = 0; i < prefixLen / pageSize; i++) {
            pages[i] = next++;
        }
        for (int r = 0; r < 64; r++) {
            for (int i = prefixLen; i < total; i++) {
                ids[i] = rnd.nextInt(150_000);
            }
            for (int i = prefixLen / pageSize; i < pages.length; i++) {
                pages[i] = next++;
            }
            TokenSequence s = TokenSequence.ofText(ids);
            cache.insert(Namespace.DEFAULT, s, s.size(), pages);
        }
        ids = null;
        pages = null;
        prefix = null;
        long after = usedAfterGc();
        CacheMetrics m = cache.metrics();
        double tokens = (double) m.cachedPages() * pageSize;
        long pageIdBytes = m.cachedPages() * 4L;
        out.treeBytesPerToken = m.treeBytes() / tokens;
        out.structBytesPerToken = (m.treeBytes() - m.keyBytes() - pageIdBytes) / tokens;
        out.heapBytesPerToken = (after - before) / tokens;
        System.out.printf("%n[memory] pageSize=%d tokens=%.0f tree=%.3f B/token (structure %.3f, keys %.3f, page ids %.3f),"
                + " heap growth=%.3f B/token, nodes=%d%n", pageSize, tokens, out.treeBytesPerToken,
                out.structBytesPerToken, m.keyBytes() / tokens, pageIdBytes / tokens, out.heapBytesPerToken, m.nodeCount());
        return cache;
    }
}
