package io.radixkv.bench;

import io.radixkv.cache.EvictionPolicy;
import io.radixkv.cache.Namespace;
import io.radixkv.cache.RadixCache;
import io.radixkv.paging.BlockAllocator;
import io.radixkv.paging.KvSequences;
import io.radixkv.sched.KvManager;
import io.radixkv.sched.PrefixStore;
import io.radixkv.sched.RadixPrefixStore;
import io.radixkv.sched.Scheduler;
import io.radixkv.sched.SchedulerConfig;
import io.radixkv.sched.Sequence;
import io.radixkv.sched.StepPlan;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The engine's own per-step cost, without the model: retire → admit → plan (decode growth,
 * catch-up, deferral, chunking) → commit (setLength, cache insert + relock) → token, for a
 * stream of requests sharing a system prompt (every one matches, inserts and locks in the radix
 * cache). One invocation serves 64 requests (512-token shared prefix + 32..127 own tokens, 16
 * output tokens) to completion; the score is the time of that whole workload, and the setup
 * prints its (deterministic) number of engine steps: score / steps = scheduling cost per step,
 * to compare with a model step (ModelBench).
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@State(Scope.Benchmark)
@Fork(value = 1, jvmArgsAppend = {"--enable-native-access=ALL-UNNAMED"})
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
public class EngineSchedulerBench {
    private static final int REQUESTS = 64;

    @Param({"true", "false"})
    public boolean prefixCache;

    @Param({"16"})
    public int pageSize;

    @Param({"32"})
    public int maxRunning;

    private int[][] prompts;
    private BlockAllocator alloc;
    private KvSequences seqs;
    private Scheduler sched;
    private long order;

    @Setup(Level.Trial)
    public void setUp() {
        SplittableRandom rnd = new SplittableRandom(1);
        int[] system = new int[512];
        for (int i = 0; i < system.length; i++) {
            system[i] = 1 + rnd.nextInt(31_999);
        }
        prompts = new int[REQUESTS][];
        for (int r = 0; r < REQUESTS; r++) {
            int n = 32 + rnd.nextInt(96);
            int[] p = java.util.Arrays.copyOf(system, system.length + n);
            for (int i = system.length; i < p.length; i++) {
                p[i] = 1 + rnd.nextInt(31_999);
            }
            prompts[r] = p;
        }
        int pages = maxRunning * (640 + 64) / pageSize + 64;
        alloc = new BlockAllocator(pages);
        seqs = new KvSequences(alloc, pageSize, maxRunning, pages);
        PrefixStore store = prefixCache
                ? new RadixPrefixStore(new RadixCache(pageSize, EvictionPolicy.LRU, alloc::freeCached), pageSize)
                : PrefixStore.disabled();
        sched = new Scheduler(new SchedulerConfig(maxRunning, 512, 0.3), new KvManager(seqs, store));
        System.out.println("\nengine steps per workload: " + serveAll());
    }

    /** Serves all requests; returns the number of engine steps. */
    private long serveAll() {
        for (int[] p : prompts) {
            sched.enqueue(new Sequence(order++, "r", Namespace.DEFAULT, p, 16, null, null, 0));
        }
        long n = 0;
        while (sched.hasWork()) {
            sched.retire();
            sched.admit(0);
            StepPlan plan = sched.plan();
            for (StepPlan.Entry e : plan.entries()) {
                sched.complete(e);
                if (e.needsLogits()) {
                    sched.onToken(e.seq(), 7, 0);
                }
            }
            n++;
        }
        return n;
    }

    @Benchmark
    public long workload() {
        return serveAll();
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        seqs.close();
    }
}
