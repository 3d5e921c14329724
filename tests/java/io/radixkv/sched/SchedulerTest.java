package io.radixkv.sched;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.radixkv.cache.EvictionPolicy;
import io.radixkv.cache.Namespace;
import io.radixkv.cache.RadixCache;
import io.radixkv.sched.FinishReason;
import io.radixkv.paging.BlockAllocator;
import io.radixkv.paging.KvSequences;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Scheduler and KV manager without a model: the engine's calls are made by hand (plan →
 * complete → onToken), so admission, reserve, chunking, preemption and page accounting are
 * checked exactly.
 */
@Timeout(value = 180, unit = java.util.concurrent.TimeUnit.SECONDS)
class SchedulerTest {
    private static final int PS = 4;

    private BlockAllocator alloc;
    private KvSequences seqs;
    private RadixCache cache;
    private KvManager kv;
    private Scheduler sched;
    private long order;

    private void setUp(int pages, boolean prefix, int maxRunning, int budget, double reserve) {
        setUp(pages, prefix, maxRunning, budget, reserve, 0);
    }

    private void setUp(int pages, boolean prefix, int maxRunning, int budget, double reserve, int maxSeqLen) {
        alloc = new BlockAllocator(pages);
        seqs = new KvSequences(alloc, PS, maxRunning, pages);
        PrefixStore store = PrefixStore.disabled();
        if (prefix) {
            cache = new RadixCache(PS, EvictionPolicy.LRU, alloc::freeCached);
            store = new RadixPrefixStore(cache, PS);
        }
        kv = new KvManager(seqs, store);
        sched = new Scheduler(new SchedulerConfig(maxRunning, budget, reserve, maxSeqLen), kv);
    }

    @AfterEach
    void conservation() {
        if (seqs != null) {
            kv.checkInvariants();
            if (cache != null) {
                assertEquals(cache.cachedPages(), alloc.cachedPages(), "cache and allocator agree on CACHED pages");
            }
            seqs.close();
        }
    }

    private Sequence seq(int[] prompt, int maxTokens) {
        return new Sequence(order++, "s" + order, Namespace.DEFAULT, prompt, maxTokens, new int[0], null, 0);
    }

    private static int[] tokens(int from, int n) {
        int[] t = new int[n];
        for (int i = 0; i < n; i++) {
            t[i] = from + i;
        }
        return t;
    }

    /** One engine step with a fake model that always samples token 7. */
    private StepPlan step() {
        sched.retire();
        sched.admit(0);
        StepPlan plan = sched.plan();
        for (StepPlan.Entry e : plan.entries()) {
            sched.complete(e);
            if (e.needsLogits()) {
                sched.onToken(e.seq(), 7, 0);
            }
        }
        return plan;
    }

    private void runUntilIdle() {
        for (int i = 0; i < 10_000 && sched.hasWork(); i++) {
            step();
        }
        assertFalse(sched.hasWork());
    }

    @Test
    void admissionCostIsTheUncachedSuffixOnly() {
        setUp(10, true, 4, 64, 0.0);
        Sequence a = seq(tokens(100, 32), 2); // 8 pages
        sched.enqueue(a);
        step(); // prefill (32 tokens) + first token
        assertEquals(Sequence.Status.DECODE, a.status());
        assertEquals(8, cache.cachedPages(), "A's full pages were inserted right after its prefill");
        // B = A's prompt + 4 tokens: 9 pages in all, but only 1 uncached; 2 pages are free
        Sequence b = seq(tokens(100, 36), 1);
        assertEquals(1, kv.admissionCostPages(b));
        sched.enqueue(b);
        sched.admit(0);
        assertEquals(Sequence.Status.PREFILL, b.status());
        assertEquals(32, b.kvLen(), "B maps A's 8 cached pages");
        runUntilIdle();
        assertEquals(0, alloc.privatePages());
    }

    @Test
    void withoutThePrefixCacheTheSameRequestWaits() {
        setUp(10, false, 4, 64, 0.0);
        Sequence a = seq(tokens(100, 32), 3);
        sched.enqueue(a);
        step();
        Sequence b = seq(tokens(100, 36), 1);
        assertEquals(9, kv.admissionCostPages(b));
        sched.enqueue(b);
        sched.admit(0);
        assertEquals(Sequence.Status.WAITING, b.status());
        runUntilIdle(); // retire-free-admit: B runs once A's pages are free
        assertEquals(FinishReason.LENGTH, b.finishReason());
        assertEquals(10, alloc.freePages());
    }

    @Test
    void decodeReserveFollowsRemainingOutputAndIsBounded() {
        // A decodes up to 4 more tokens: its reserve is 1 page; B (2 pages) fits in a 12-page pool
        setUp(12, false, 4, 64, 0.9);
        Sequence a = seq(tokens(1, 4), 4);
        sched.enqueue(a);
        step();
        Sequence b = seq(tokens(50, 8), 1);
        sched.enqueue(b);
        sched.admit(0);
        assertEquals(Sequence.Status.PREFILL, b.status());
        runUntilIdle();

        // A may still write 150 tokens (38 more pages); 39 pages are available: with the reserve
        // bounded at 99% of 40 pages (39) B's 2 pages do not fit next to it; bounded at 25% (10) they do
        for (double fraction : new double[] {0.99, 0.25}) {
            setUp(40, false, 4, 64, fraction);
            a = seq(tokens(1, 4), 150);
            sched.enqueue(a);
            step();
            assertEquals(38, sched.decodeReservePages());
            b = seq(tokens(50, 8), 1);
            sched.enqueue(b);
            sched.admit(0);
            assertEquals(fraction == 0.25 ? Sequence.Status.PREFILL : Sequence.Status.WAITING, b.status(),
                    "fraction " + fraction);
            runUntilIdle();
            kv.checkInvariants();
            seqs.close();
        }
        seqs = null;
    }

    @Test
    void prefillIsChunkedWithinTheTokenBudgetAndDecodesGoFirst() {
        setUp(64, true, 4, 16, 0.0);
        Sequence a = seq(tokens(1, 6), 5);
        sched.enqueue(a);
        step(); // a: whole prompt
        Sequence b = seq(tokens(100, 40), 1);
        sched.enqueue(b);
        StepPlan p = step();
        assertEquals(2, p.size());
        assertTrue(p.entries().get(0).decode(), "decode first");
        assertEquals(15, p.entries().get(1).tokens(), "prefill chunk gets the rest of the 16-token budget");
        assertEquals(16, p.numTokens());
        assertEquals(1 + 3, cache.cachedPages(), "A's full page, and B's 3 inserted right after its first chunk");
        runUntilIdle();
    }

    @Test
    void outOfPagesPreemptsTheNewestAndRequeuesItFirst() {
        setUp(6, true, 4, 64, 0.0);
        Sequence a = seq(tokens(1, 8), 8); // 2 pages, grows to 4 (15 tokens)
        Sequence b = seq(tokens(40, 8), 8);
        Sequence c = seq(tokens(80, 3), 1); // newest, waits
        sched.enqueue(a);
        sched.enqueue(b);
        step(); // both prefilled: 4 pages pinned, 2 free
        sched.enqueue(c);
        boolean preempted = false;
        for (int i = 0; i < 20 && !preempted; i++) {
            sched.retire();
            StepPlan plan = sched.plan();
            if (!sched.preemptedLastStep().isEmpty()) {
                preempted = true;
                assertEquals(List.of(b), sched.preemptedLastStep(), "the newest running request is the victim");
                assertEquals(Sequence.Status.WAITING, b.status());
                assertEquals(-1, b.slot());
                assertEquals(b, sched.waiting().stream().min((x, y) -> Long.compare(x.order(), y.order())).get(),
                        "the preempted request is ahead of newer waiting ones");
            }
            for (StepPlan.Entry e : plan.entries()) {
                sched.complete(e);
                if (e.needsLogits()) {
                    sched.onToken(e.seq(), 7, 0);
                }
            }
        }
        assertTrue(preempted);
        runUntilIdle();
        assertEquals(8, a.outputLength());
        assertEquals(8, b.outputLength());
        assertEquals(1, b.preemptions());
        assertEquals(FinishReason.LENGTH, c.finishReason());
        assertEquals(0, alloc.privatePages());
    }

    @Test
    void requestsThatCanNeverFitAreRefused() {
        setUp(8, true, 4, 64, 0.0);
        Sequence big = seq(tokens(1, 30), 4); // 33 positions = 9 pages > 8
        assertNotNull(sched.whyNeverFits(big));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> sched.enqueue(big));
        assertTrue(e.getMessage().contains("pool holds only 8 pages"), e.getMessage());
        assertNull(sched.whyNeverFits(seq(tokens(1, 29), 4)));
        assertEquals(0, sched.waitingCount());
    }

    /** The sequence limit is exact, not rounded up to the page table's whole pages. */
    @Test
    void sequenceLimitIsExactNotWholePages() {
        setUp(16, true, 4, 64, 0.0, 10); // pages of 4: whole pages would allow 12 (the table alone 64)
        assertNull(sched.whyNeverFits(seq(tokens(1, 8), 3)), "8 + 3 - 1 = 10 positions fit");
        Sequence over = seq(tokens(1, 9), 3); // 11 positions: within 3 pages, beyond the limit
        String why = sched.whyNeverFits(over);
        assertNotNull(why, "11 positions exceed maxSeqLen 10");
        assertTrue(why.contains("11") && why.contains("10") && why.contains("maxSeqLen"), why);
        assertThrows(IllegalArgumentException.class, () -> sched.enqueue(over));
        assertThrows(IllegalArgumentException.class, () -> new SchedulerConfig(4, 64, 0.0, -1));
    }

    @Test
    void cancelledRequestsAreRetiredAndReleased() {
        setUp(16, true, 4, 64, 0.0);
        Sequence a = seq(tokens(1, 9), 50);
        Sequence w = seq(tokens(30, 5), 5);
        sched.enqueue(a);
        step();
        sched.enqueue(w);
        a.requestCancel();
        w.requestCancel();
        List<Sequence> out = sched.retire();
        assertEquals(2, out.size());
        assertEquals(FinishReason.CANCELLED, a.finishReason());
        assertEquals(FinishReason.CANCELLED, w.finishReason());
        assertEquals(0, alloc.privatePages());
        assertEquals(0, cache.protectedPages(), "the cancelled request's lock is gone");
        assertFalse(sched.hasWork());
    }

    // ---- the samples of one request (n > 1): forked after the prompt's prefill ----

    private final List<int[]> copies = new ArrayList<>();

    private void recordPageCopies() {
        kv.setPageCopier((from, to) -> copies.add(new int[] {from, to}));
    }

    /** A request for {@code n} samples with its prompt prefilled (one step, nothing sampled), not yet forked. */
    private Sequence prefilledSamples(int promptLen, int n) {
        Sequence s = seq(tokens(100, promptLen), 6);
        s.setSamples(n);
        sched.enqueue(s);
        sched.retire();
        sched.admit(0);
        for (StepPlan.Entry e : sched.plan().entries()) {
            sched.complete(e);
        }
        assertEquals(promptLen, s.kvLen());
        return s;
    }

    @Test
    void samplesShareFullPagesAndCopyThePartialOne() {
        setUp(32, false, 4, 64, 0.0);
        recordPageCopies();
        Sequence p = prefilledSamples(10, 3); // 2 full pages and a partial one
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
        setUp(32, true, 4, 64, 0.0);
        recordPageCopies();
        Sequence p = prefilledSamples(9, 2);
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
        assertEquals(0, cache.protectedPages());
        assertEquals(0, alloc.privatePages());
    }

    @Test
    void aSampleWithoutAPageCopyIsQueuedAndPrefillsItself() {
        setUp(32, false, 4, 64, 0.0); // no page copier: the partial page cannot be copied
        Sequence p = prefilledSamples(6, 2);
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
        setUp(64, false, 4, 64, 0.0);
        Sequence p = seq(tokens(1, 5), 6);
        p.setSamples(3);
        sched.enqueue(p);
        Sequence q = seq(tokens(1, 5), 4);
        q.setSamples(2);
        sched.enqueue(q);
        sched.admit(0);
        assertEquals(1, sched.runningCount(), "3 + 2 samples exceed maxRunning 4");
        assertEquals(1, sched.waitingCount());
        Sequence big = seq(tokens(1, 5), 4);
        big.setSamples(5);
        assertTrue(sched.whyNeverFits(big).contains("maxRunning"), sched.whyNeverFits(big));
        p.requestCancel();
        runUntilIdle();
    }

    /**
     * Sequences that want every prompt position's logits share PROMPT_LOGIT_ROWS_PER_STEP prefill
     * tokens a step (each adds a vocabulary-wide logits row); others fill the rest of the budget.
     */
    @Test
    void promptLogitSequencesShareTheirRowBudget() {
        int cap = Scheduler.PROMPT_LOGIT_ROWS_PER_STEP;
        setUp(2048, false, 4, 2 * cap + 300, 0.0, 4096);
        Sequence a = seq(tokens(1, cap + 100), 1);
        Sequence b = seq(tokens(5000, 200), 1);
        Sequence c = seq(tokens(9000, 300), 1);
        a.wantPromptLogits();
        b.wantPromptLogits();
        sched.enqueue(a);
        sched.enqueue(b);
        sched.enqueue(c);
        StepPlan first = step();
        int logitTokens = 0;
        for (StepPlan.Entry e : first.entries()) {
            if (e.seq().wantsPromptLogits()) {
                logitTokens += e.tokens();
            }
        }
        assertEquals(cap, logitTokens, "the prompt-logits sequences got exactly the cap");
        assertEquals(cap, first.entries().get(0).tokens(), "the first one took it all");
        assertEquals(List.of(a, c), first.entries().stream().map(StepPlan.Entry::seq).toList(),
                "the second waits; the plain sequence is not held back");
        StepPlan second = step();
        assertEquals(List.of(a, b), second.entries().stream().filter(e -> !e.decode()).map(StepPlan.Entry::seq)
                .toList());
        assertEquals(100, second.entries().stream().filter(e -> e.seq() == a).findFirst().orElseThrow().tokens());
        assertEquals(200, second.entries().stream().filter(e -> e.seq() == b).findFirst().orElseThrow().tokens());
        runUntilIdle();
    }
}
