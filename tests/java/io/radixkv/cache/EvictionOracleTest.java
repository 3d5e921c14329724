package io.radixkv.cache;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Eviction order against a brute-force oracle: at every {@link RadixCache#evict} call, the expected
 * victims are computed from a snapshot of the trees by repeatedly taking the unlocked leaf with the
 * smallest key <em>right now</em> (SGLang recomputes {@code get_priority} of the evictable leaves at
 * each evict; parents that become leaves join with their current key). Random inserts (locked or
 * not, with priorities), matches (locked or not), lock / unlock, subtree and namespace evictions
 * make keys grow (LRU, LFU, PRIORITY), shrink (MRU) and nodes lose and regain leaf status, so a
 * stale heap key in any direction shows up as a different victim.
 *
 * <p>The keys are written here from the policy definitions ({@link EvictionPolicy}), independently
 * of the cache's strategies. A coarse clock (several operations per tick) exercises the tie-breaks.
 */
class EvictionOracleTest {

    static final int OPS = Integer.getInteger("radixkv.oracleOps", 4000);
    static final Namespace[] NSS = {Namespace.DEFAULT, Namespace.ofLora("a")};

    static Stream<Arguments> configs() {
        List<Arguments> out = new ArrayList<>();
        for (EvictionPolicy p : EvictionPolicy.values()) {
            for (int pageSize : new int[] {1, 3}) {
                for (boolean coarse : new boolean[] {false, true}) {
                    out.add(Arguments.of(p, pageSize, coarse));
                }
            }
        }
        return out.stream();
    }

    /** Smaller is evicted first; ties by creation order (older first; newer first for MRU, FILO). */
    static long[] key(EvictionPolicy p, Node n) {
        return switch (p) {
            case LRU -> new long[] {n.lastAccess, n.id};
            case LFU -> new long[] {n.hits, n.lastAccess, n.id};
            case FIFO -> new long[] {n.created, n.id};
            case MRU -> new long[] {-n.lastAccess, -n.id};
            case FILO -> new long[] {-n.created, -n.id};
            case PRIORITY -> new long[] {n.priority, n.lastAccess, n.id};
        };
    }

    @ParameterizedTest(name = "{0} pageSize={1} coarseClock={2}")
    @MethodSource("configs")
    void evictsTheBestLeafRightNow(EvictionPolicy policy, int pageSize, boolean coarse) {
        long seed = 0x5EED_0000L + policy.ordinal() * 31L + pageSize * 7L + (coarse ? 1 : 0);
        Random rnd = new Random(seed);
        AtomicLong tick = new AtomicLong();
        LongSupplier clock = coarse ? () -> tick.incrementAndGet() / 4 : tick::incrementAndGet;
        ArrayDeque<Integer> free = new ArrayDeque<>();
        for (int i = 0; i < 400; i++) {
            free.add(i);
        }
        List<int[]> freed = new ArrayList<>();
        RadixCache cache = new RadixCache(pageSize, policy, (p, off, len) -> {
            freed.add(Arrays.copyOfRange(p, off, off + len));
            for (int i = off; i < off + len; i++) {
                free.add(p[i]);
            }
        }, clock);
        List<NodeRef> held = new ArrayList<>(); // one entry per lock we own
        int evictCalls = 0;

        for (int op = 0; op < OPS; op++) {
            Namespace ns = NSS[rnd.nextInt(10) < 8 ? 0 : 1];
            TokenSequence seq = randomSeq(rnd);
            int r = rnd.nextInt(100);
            String what = "op " + op + " (seed " + seed + ")";
            if (r < 35) {
                int tokens = 1 + rnd.nextInt(seq.size());
                int np = tokens / pageSize;
                if (free.size() < np) {
                    evictAndCheck(cache, policy, np - free.size(), freed, what);
                    evictCalls++;
                    if (free.size() < np) {
                        continue;
                    }
                }
                int[] pages = new int[np];
                for (int i = 0; i < np; i++) {
                    pages[i] = free.poll();
                }
                boolean lock = rnd.nextBoolean();
                int prio = rnd.nextInt(4);
                InsertResult ins = lock ? cache.insertAndLock(ns, seq, tokens, pages, prio)
                        : cache.insert(ns, seq, tokens, pages, prio);
                for (int i = 0; i < ins.firstNewPageIdx(); i++) {
                    free.add(pages[i]); // not taken: ours stays private, give it back
                }
                if (lock && !ins.node().isRoot()) {
                    held.add(ins.node());
                }
            } else if (r < 60) {
                if (rnd.nextInt(3) == 0) {
                    MatchResult m = cache.matchAndLock(ns, seq);
                    if (!m.node().isRoot()) {
                        held.add(m.node());
                    }
                } else {
                    cache.match(ns, seq);
                }
            } else if (r < 75) {
                if (!held.isEmpty()) {
                    cache.unlock(held.remove(rnd.nextInt(held.size())));
                }
            } else if (r < 78) {
                if (!held.isEmpty()) {
                    NodeRef n = held.get(rnd.nextInt(held.size()));
                    cache.lock(n);
                    held.add(n);
                }
            } else if (r < 81) {
                MatchResult m = cache.match(ns, seq);
                if (!m.node().isRoot() && m.node().lockRef() == 0) {
                    freed.clear();
                    cache.evictSubtree(m.node());
                    freed.clear();
                }
            } else if (r < 82) {
                freed.clear();
                cache.evictNamespace(ns);
                freed.clear();
            } else {
                evictAndCheck(cache, policy, 1 + rnd.nextInt(4 * pageSize), freed, what);
                evictCalls++;
            }
        }
        for (NodeRef n : held) {
            cache.unlock(n);
        }
        evictAndCheck(cache, policy, Integer.MAX_VALUE, freed, "final drain");
        assertEquals(0, cache.cachedPages());
        assertEquals(400, free.size());
        assertEquals(true, evictCalls > OPS / 10, "too few evictions exercised: " + evictCalls);
    }

    /** Evicts {@code pages} and checks the victims, in order, against the oracle. */
    private static void evictAndCheck(RadixCache cache, EvictionPolicy policy, int pages, List<int[]> freed,
                                      String what) {
        List<int[]> expected = oracle(cache, policy, pages);
        freed.clear();
        int got = cache.evict(pages);
        assertEquals(expected.size(), freed.size(), what + ": victim count");
        int sum = 0;
        for (int i = 0; i < expected.size(); i++) {
            assertArrayEquals(expected.get(i), freed.get(i), what + ": victim " + i + " of evict(" + pages + ")");
            sum += expected.get(i).length;
        }
        assertEquals(sum, got, what + ": pages freed");
        freed.clear();
    }

    /** Brute force: repeatedly remove the unlocked leaf with the smallest current key. */
    static List<int[]> oracle(RadixCache cache, EvictionPolicy policy, int pages) {
        Map<Node, Integer> kids = new HashMap<>();
        List<Node> nodes = new ArrayList<>();
        for (Namespace ns : NSS) {
            NodeRef root = cache.root(ns);
            if (root == null) {
                continue;
            }
            ArrayDeque<Node> stack = new ArrayDeque<>();
            stack.push((Node) root);
            while (!stack.isEmpty()) {
                Node n = stack.pop();
                kids.put(n, n.kidCount);
                if (n.parent != null) {
                    nodes.add(n);
                }
                n.forEachChild(stack::push);
            }
        }
        List<int[]> out = new ArrayList<>();
        int freed = 0;
        while (freed < pages) {
            Node best = null;
            long[] bestKey = null;
            for (Node n : nodes) {
                if (kids.get(n) == 0 && n.lockRef == 0) {
                    long[] k = key(policy, n);
                    if (best == null || Arrays.compare(k, bestKey) < 0) {
                        best = n;
                        bestKey = k;
                    }
                }
            }
            if (best == null) {
                break;
            }
            nodes.remove(best);
            kids.merge(best.parent, -1, Integer::sum);
            out.add(best.pages.clone());
            freed += best.pages.length;
        }
        return out;
    }

    /** Short sequences over a tiny alphabet: much sharing, many splits and re-extensions. */
    private static TokenSequence randomSeq(Random rnd) {
        int len = 1 + rnd.nextInt(10);
        int[] t = new int[len];
        for (int i = 0; i < len; i++) {
            t[i] = i < 2 ? 1 + rnd.nextInt(2) : 1 + rnd.nextInt(3);
        }
        return TokenSequence.ofText(t);
    }
}
