package io.radixkv.sched;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.radixkv.cache.EvictionPolicy;
import io.radixkv.cache.Namespace;
import io.radixkv.cache.RadixCache;
import io.radixkv.paging.BlockAllocator;
import io.radixkv.paging.KvSequences;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Forking the samples of one request after its prompt's prefill, with the engine's calls made
 * by hand: the samples share the prompt's full pages (by reference, or the cache's under its
 * lock), each gets a copy of the partial page, a sample that cannot be placed is queued, and
 * every page is back when they end.
 */
class SchedulerForkTest {
    private static final int PS = 4;

    private BlockAllocator alloc;
    private KvSequences seqs;
    private RadixCache cache;
    private KvManager kv;
    private Scheduler sched;
    private final List<int[]> copies = new ArrayList<>();

    private void setUp(int pages, boolean prefix, int maxRunning, boolean copier) {
        alloc = new BlockAllocator(pages);
        seqs = new KvSequences(alloc, PS, maxRunning, pages);
        PrefixStore store = PrefixStore.disabled();
        if (prefix) {
            cache = new RadixCache(PS, EvictionPolicy.LRU, alloc::freeCached);
            store = new RadixPrefixStore(cache, PS);
        }
        kv = new KvManager(seqs, store);
        if (copier) {
            kv.setPageCopier((from, to) -> copies.add(new int[] {from, to}));
        }
        sched = new Scheduler(new SchedulerConfig(maxRunning, 64, 0.0, 0), kv);
    }

    @AfterEach
    void conservation() {
        kv.checkInvariants();
        seqs.close();
    }

    private static int[] tokens(int n) {
        int[] t = new int[n];
        for (int i = 0; i < n; i++) {
            t[i] = 100 + i;
        }
        return t;
    }

    /** Prefills {@code s}'s prompt (one step) and returns it, its first token not yet sampled. */
    private Sequence prefilled(Sequence s) {
        sched.enqueue(s);
        sched.retire();
        sched.admit(0);
        StepPlan plan = sched.plan();
        for (StepPlan.Entry e : plan.entries()) {
            sched.complete(e);
        }
        assertEquals(s.promptLength(), s.kvLen());
        return s;
    }

    private void runUntilIdle() {
        for (int i = 0; i < 1000 && sched.hasWork(); i++) {
            sched.retire();
            sched.admit(0);
            for (StepPlan.Entry e : sched.plan().entries()) {
                sched.complete(e);
                if (e.needsLogits()) {
                    sched.onToken(e.seq(), 7, 0);
                }
            }
        }
        assertFalse(sched.hasWork());
    }

    private Sequence parent(int promptLen, int n) {
        Sequence s = new Sequence(0, "p", Namespace.DEFAULT, tokens(promptLen), 6, new int[0], null, 0);
        s.setSamples(n);
        return s;
    }

    @Test
    void samplesShareFullPagesAndCopyThePartialOne() {
        setUp(32, false, 4, true);
        Sequence p = prefilled(parent(10, 3)); // 2 full pages and a partial one
        int[] parentPages = seqs.pages(p.slot());
        Sequence c1 = sched.fork(p, "p/1", null);
        Sequence c2 = sched.fork(p, "p/2", null);
        assertEquals(1, p.samples());
        for (Sequence c : List.of(c1, c2)) {
            assertEquals(Sequence.Status.PREFILL, c.status());
            assertEquals(10, c.kvLen());
            int[] pages = seqs.pages(c.slot());
            assertEquals(parentPages[0], pages[0]);
            assertEquals(parentPages[1], pages[1]);
            assertTrue(pages[2] != parentPages[2], "its own copy of the partial page");
        }
        assertEquals(3, alloc.references(parentPages[0]));
        assertEquals(2 + 3, alloc.privatePages(), "2 shared full pages, 3 partial ones");
        assertEquals(2, copies.size());
        assertArrayEquals(new int[] {parentPages[2], seqs.pageAt(c1.slot(), 2)}, copies.get(0));
        kv.checkInvariants();
        for (Sequence s : List.of(p, c1, c2)) {
            sched.onToken(s, 7, 0);
        }
        runUntilIdle();
        assertEquals(0, alloc.privatePages());
        assertEquals(32, alloc.freePages());
    }

    @Test
    void withTheCacheSamplesMapItsPagesUnderTheirOwnLocks() {
        setUp(32, true, 4, true);
        Sequence p = prefilled(parent(9, 2));
        assertEquals(2, cache.cachedPages(), "the prompt's full pages were inserted");
        Sequence c = sched.fork(p, "p/1", null);
        assertEquals(seqs.pageAt(p.slot(), 0), seqs.pageAt(c.slot(), 0));
        assertTrue(alloc.isCached(seqs.pageAt(c.slot(), 1)));
        sched.onToken(p, 7, 0);
        sched.onToken(c, 7, 0);
        p.requestCancel(); // the parent ends first: the child's lock keeps the shared pages
        sched.retire();
        assertEquals(0, cache.evict(32), "the child's lock protects the shared pages");
        runUntilIdle();
        assertEquals(0, cache.metrics().protectedPages());
        assertEquals(0, alloc.privatePages());
    }

    @Test
    void aSampleWithoutAPageCopyIsQueuedAndPrefillsItself() {
        setUp(32, false, 4, false);
        Sequence p = prefilled(parent(6, 2));
        Sequence c = sched.fork(p, "p/1", null);
        assertEquals(Sequence.Status.WAITING, c.status());
        assertEquals(1, sched.waitingCount());
        sched.onToken(p, 7, 0);
        runUntilIdle();
        assertEquals(6, c.outputLength());
        assertEquals(FinishReason.LENGTH, c.finishReason());
        assertEquals(0, alloc.privatePages());
    }

    @Test
    void admissionCountsEverySample() {
        setUp(64, false, 4, true);
        Sequence p = parent(5, 3);
        sched.enqueue(p);
        Sequence q = new Sequence(1, "q", Namespace.DEFAULT, tokens(5), 4, new int[0], null, 0);
        q.setSamples(2);
        sched.enqueue(q);
        sched.admit(0);
        assertEquals(1, sched.runningCount(), "3 + 2 samples exceed maxRunning 4");
        assertEquals(1, sched.waitingCount());
        Sequence big = new Sequence(2, "big", Namespace.DEFAULT, tokens(5), 4, new int[0], null, 0);
        big.setSamples(5);
        assertTrue(sched.whyNeverFits(big).contains("maxRunning"), sched.whyNeverFits(big));
        p.requestCancel();
        runUntilIdle();
    }
}
