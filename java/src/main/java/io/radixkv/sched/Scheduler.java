package io.radixkv.sched;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Objects;
import java.util.PriorityQueue;

/**
 * Continuous batching with prefix-aware admission and chunked prefill. The engine calls, every
 * step: {@link #retire} → {@link #admit} → {@link #plan} → (forward pass) → {@link #complete}
 * per entry → {@link #onToken} per sampled token.
 *
 * <ul>
 *   <li><b>Admission</b> is FCFS (submission order; a preempted request keeps its place at
 *       the front). A request costs only its uncached suffix in pages; it is admitted when
 *       that cost plus the decode reserve fits the capacity (free + evictable pages). The
 *       reserve is what the running requests' remaining output can still need (pages up to
 *       prompt + maxTokens), bounded by {@code decodeReserveFraction} of the pool: short
 *       outputs reserve little, long ones cannot starve admission.</li>
 *   <li><b>Batch</b>: every decoding sequence contributes one token (pages grow lazily), then
 *       prefill chunks fill the rest of the token budget in admission order.</li>
 *   <li><b>No duplicate prefill</b>: before its chunk a prefilling sequence adopts whatever
 *       another sequence has inserted since its admission; and it waits while another
 *       prefilling sequence of the same namespace that is ahead of it still has to compute
 *       pages of their common prefix (that one inserts them, this one reuses them).</li>
 *   <li><b>Out of pages</b>: the allocator evicts cached pages first; if still short, the
 *       newest running request is preempted (pages released, requeued; its prefix stays
 *       cached so recompute is cheap).</li>
 *   <li><b>Samples</b>: a request for n samples is one sequence until its prompt is
 *       prefilled, then {@link #fork} makes n - 1 more that share the prompt's pages; admission
 *       counts all n against {@code maxRunning} from the start (as vLLM counts each).</li>
 * </ul>
 * Confined to the engine thread.
 */
public final class Scheduler {
    /**
     * Prefill tokens a step gives sequences that want every prompt position's logits
     * ({@link Sequence#wantsPromptLogits()}), all together: each such token adds a logits row
     * of the vocabulary's width to the step (512 rows of Llama 3's 128256 ids: 256 MiB).
     */
    public static final int PROMPT_LOGIT_ROWS_PER_STEP = 512;

    private final SchedulerConfig config;
    private final KvManager kv;
    private final PriorityQueue<Sequence> waiting = new PriorityQueue<>(Comparator.comparingLong(Sequence::order));
    /** Admitted sequences, ascending submission order. */
    private final List<Sequence> running = new ArrayList<>();
    private final List<Sequence> preemptedThisStep = new ArrayList<>();
    private long preemptions;
    private long deferrals;
    private AdmissionGate gate = AdmissionGate.OPEN;

    public Scheduler(SchedulerConfig config, KvManager kv) {
        this.config = Objects.requireNonNull(config, "config");
        this.kv = Objects.requireNonNull(kv, "kv");
        if (kv.sequences().maxSeqs() < config.maxRunning()) {
            throw new IllegalArgumentException("the page table has " + kv.sequences().maxSeqs()
                    + " sequence slots, fewer than maxRunning " + config.maxRunning());
        }
    }

    public SchedulerConfig config() {
        return config;
    }

    /** Sets the condition each admission must also meet (LoRA slots); {@link AdmissionGate#OPEN} by default. */
    public void setGate(AdmissionGate gate) {
        this.gate = Objects.requireNonNull(gate, "gate");
    }

    public KvManager kv() {
        return kv;
    }

    /**
     * Why {@code s} can never run here, or null if it can: its KV at the end (prompt +
     * maxTokens - 1 tokens) must fit the pool, one sequence's page table and {@code maxSeqLen}.
     */
    public String whyNeverFits(Sequence s) {
        if (s.samples() > config.maxRunning()) {
            return "request " + s.id() + " asks for " + s.samples() + " samples but at most " + config.maxRunning()
                    + " sequences run at once (maxRunning)";
        }
        long finalKv = (long) s.promptLength() + s.maxTokens() - 1;
        long pages = finalPages(s);
        if (pages > kv.numPages()) {
            return "request " + s.id() + " needs " + pages + " KV pages (prompt " + s.promptLength() + " + maxTokens "
                    + s.maxTokens() + " - 1 tokens at page size " + kv.pageSize()
                    + (s.samples() > 1 ? ", " + s.samples() + " samples sharing the prompt's full pages" : "")
                    + ") but the pool holds only " + kv.numPages() + " pages";
        }
        // the page table holds whole pages; the sequence limit (the model's positions) is exact
        long tableLimit = kv.sequences().maxTokensPerSeq();
        long limit = config.maxSeqLen() > 0 ? Math.min(config.maxSeqLen(), tableLimit) : tableLimit;
        if (finalKv > limit) {
            return "request " + s.id() + " needs " + finalKv + " KV positions (prompt " + s.promptLength()
                    + " + maxTokens " + s.maxTokens() + " - 1) but a sequence holds at most " + limit
                    + " (maxSeqLen)";
        }
        return null;
    }

    /**
     * Queues a new request.
     *
     * @throws IllegalArgumentException (nothing queued) when it can never fit
     */
    public void enqueue(Sequence s) {
        if (s.status() != Sequence.Status.WAITING) {
            throw new IllegalStateException("enqueue: " + s + " is not waiting");
        }
        String why = whyNeverFits(s);
        if (why != null) {
            throw new IllegalArgumentException(why);
        }
        waiting.add(s);
    }

    public int waitingCount() {
        return waiting.size();
    }

    public int runningCount() {
        return running.size();
    }

    public List<Sequence> running() {
        return List.copyOf(running);
    }

    public List<Sequence> waiting() {
        return List.copyOf(waiting);
    }

    public boolean hasWork() {
        return !waiting.isEmpty() || !running.isEmpty();
    }

    public long preemptions() {
        return preemptions;
    }

    /** Prefill chunks held back because another sequence was computing the shared prefix. */
    public long deferrals() {
        return deferrals;
    }

    /** Sequences preempted by the last {@link #plan()}. */
    public List<Sequence> preemptedLastStep() {
        return List.copyOf(preemptedThisStep);
    }

    /**
     * Step 1-2: removes finished and cancelled sequences (running and waiting), releasing their
     * locks and private pages. Returns them (status FINISHED) for reporting.
     */
    public List<Sequence> retire() {
        List<Sequence> out = new ArrayList<>();
        for (int i = 0; i < running.size(); ) {
            Sequence s = running.get(i);
            if (s.status() != Sequence.Status.FINISHED && s.cancelRequested()) {
                s.finish(FinishReason.CANCELLED, null);
            }
            if (s.status() == Sequence.Status.FINISHED) {
                FinishReason r = s.finishReason();
                if (r == FinishReason.STOP || r == FinishReason.LENGTH || r == FinishReason.CANCELLED) {
                    kv.cacheFinished(s); // its generated tokens serve the next turn of a conversation
                }
                kv.release(s);
                running.remove(i);
                gate.released(s);
                out.add(s);
            } else {
                i++;
            }
        }
        if (!waiting.isEmpty()) {
            List<Sequence> cancelled = null;
            for (Sequence s : waiting) {
                if (s.cancelRequested() || s.status() == Sequence.Status.FINISHED) {
                    (cancelled == null ? cancelled = new ArrayList<>() : cancelled).add(s);
                }
            }
            if (cancelled != null) {
                for (Sequence s : cancelled) {
                    waiting.remove(s);
                    if (s.status() != Sequence.Status.FINISHED) {
                        s.finish(FinishReason.CANCELLED, null);
                    }
                    out.add(s);
                }
            }
        }
        return out;
    }

    /** Pages the running requests may still need for their output (unbounded sum). */
    public int decodeReservePages() {
        long sum = 0;
        for (Sequence s : running) {
            sum += futurePages(s);
        }
        return (int) Math.min(sum, Integer.MAX_VALUE);
    }

    private int futurePages(Sequence s) {
        int have = s.slot() >= 0 ? kv.sequences().pageCount(s.slot()) : kv.pagesFor(s.totalTokens());
        return (int) Math.max(0, Math.min(finalPages(s) - have, Integer.MAX_VALUE));
    }

    /** Pages {@code s} holds at its end, with all its samples: the prompt's full pages once, the rest each. */
    private long finalPages(Sequence s) {
        long finalKv = (long) s.promptLength() + s.maxTokens() - 1;
        long each = kv.pagesFor(finalKv);
        long shared = s.samples() > 1 ? s.promptLength() / kv.pageSize() : 0;
        return shared + s.samples() * (each - shared);
    }

    /** The sequences the running requests stand for (a request not yet forked counts all its samples). */
    private int runningWeight() {
        int w = 0;
        for (Sequence s : running) {
            w += s.samples();
        }
        return w;
    }

    private int reserveCap() {
        return (int) Math.floor(config.decodeReserveFraction() * kv.numPages());
    }

    /**
     * Steps 3-4: admits waiting requests in order while their uncached cost plus the bounded
     * decode reserve fits the capacity (free + evictable pages). Requests that turn out not to
     * fit even alone are failed (returned through the next {@link #retire}).
     *
     * @return how many were admitted
     */
    public int admit(long nowNanos) {
        int admitted = 0;
        long reserve = decodeReservePages();
        int cap = reserveCap();
        int weight = runningWeight();
        List<Sequence> held = null;
        while (!waiting.isEmpty() && kv.sequences().freeSlots() > 0) {
            Sequence s = waiting.peek();
            if (weight + s.samples() > config.maxRunning()) {
                break; // FCFS: its samples wait for running ones to end
            }
            if (!gate.canAdmit(s)) {
                // held back (e.g. no LoRA slot): keeps its place, later requests may go ahead
                (held == null ? held = new ArrayList<>() : held).add(waiting.poll());
                continue;
            }
            int cost = kv.admissionCostPages(s);
            int own = futurePages(s);
            int capacity = kv.capacityPages();
            if (!running.isEmpty() && (long) cost + Math.min(reserve + own, cap) > capacity) {
                break; // FCFS: later requests wait behind it
            }
            if (!kv.admit(s, nowNanos)) {
                if (running.isEmpty()) {
                    // nothing else holds pages: it will never fit (defensive; enqueue checks this)
                    waiting.poll();
                    s.finish(FinishReason.REJECTED, "request " + s.id() + " does not fit the KV pool even alone ("
                            + cost + " pages needed, " + capacity + " available of " + kv.numPages() + ")");
                    running.add(s); // retired (reported) by the next retire()
                    continue;
                }
                break;
            }
            waiting.poll();
            gate.admitted(s);
            insertRunning(s);
            reserve += own;
            weight += s.samples();
            admitted++;
        }
        if (held != null) {
            waiting.addAll(held);
        }
        return admitted;
    }

    private void insertRunning(Sequence s) {
        int i = running.size();
        while (i > 0 && running.get(i - 1).order() > s.order()) {
            i--;
        }
        running.add(i, s);
    }

    /**
     * Step 5: the batch. Every decoding sequence gets room for one token (preempting the
     * newest requests if eviction cannot free a page) and one token of the budget; prefill
     * chunks fill the rest.
     */
    public StepPlan plan() {
        preemptedThisStep.clear();
        StepPlan plan = new StepPlan();
        for (Sequence s : List.copyOf(running)) {
            if (s.status() != Sequence.Status.DECODE || s.slot() < 0) {
                continue; // finished ones are never here (retired); preempted ones have no slot
            }
            while (!kv.growForDecode(s)) {
                Sequence victim = newestRunning();
                if (victim == s && activeCount() == 1) {
                    // alone and still short: cannot happen for requests enqueue() accepted
                    s.finish(FinishReason.ERROR, "request " + s.id() + " ran out of KV pages while running alone ("
                            + kv.numPages() + " pages)");
                    break;
                }
                preempt(victim);
                if (victim == s) {
                    break;
                }
            }
        }
        int budget = config.maxBatchTokens();
        int promptLogitRows = PROMPT_LOGIT_ROWS_PER_STEP;
        for (Sequence s : running) {
            if (s.status() == Sequence.Status.DECODE && s.slot() >= 0) {
                plan.add(s, s.kvLen, s.kvLen + 1, true, true);
                budget--;
            }
        }
        for (Sequence s : running) {
            if (budget == 0) {
                break;
            }
            if (s.status() != Sequence.Status.PREFILL) {
                continue;
            }
            kv.catchUp(s);
            if (deferToLeader(s)) {
                deferrals++;
                continue;
            }
            int n = Math.min(s.prefillRemaining(), budget);
            if (s.wantsPromptLogits()) {
                n = Math.min(n, promptLogitRows);
                if (n == 0) {
                    continue;
                }
                promptLogitRows -= n;
            }
            int end = s.kvLen + n;
            plan.add(s, s.kvLen, end, false, end == s.prefillTarget);
            budget -= n;
        }
        return plan;
    }

    /** The newest admitted sequence still holding pages. */
    private Sequence newestRunning() {
        for (int i = running.size() - 1; i >= 0; i--) {
            Sequence s = running.get(i);
            if (s.isRunning() && s.slot() >= 0) {
                return s;
            }
        }
        throw new IllegalStateException("no running sequence");
    }

    private int activeCount() {
        int n = 0;
        for (Sequence s : running) {
            if (s.isRunning() && s.slot() >= 0) {
                n++;
            }
        }
        return n;
    }

    private void preempt(Sequence v) {
        kv.cacheFinished(v); // what it computed stays reusable (until evicted): the resume is cheap
        kv.release(v);
        running.remove(v);
        gate.released(v);
        v.setStatus(Sequence.Status.WAITING);
        v.notePreempted();
        preemptions++;
        preemptedThisStep.add(v);
        waiting.add(v);
    }

    /**
     * True when another prefilling sequence of the same namespace is ahead of {@code s}
     * (further along, or as far and older) and will compute and insert pages of their common
     * prefix that {@code s} has not got yet: {@code s} waits and adopts them later.
     */
    private boolean deferToLeader(Sequence s) {
        if (!kv.caches(s)) {
            return false;
        }
        int ps = kv.pageSize();
        for (Sequence a : running) {
            if (a == s || a.status() != Sequence.Status.PREFILL || !a.namespace().equals(s.namespace())
                    || !kv.caches(a)) {
                continue;
            }
            boolean ahead = a.kvLen > s.kvLen || (a.kvLen == s.kvLen && a.order() < s.order());
            if (!ahead) {
                continue;
            }
            int common = commonPrefix(a.attemptTokens, a.prefillTarget, s.attemptTokens, s.prefillTarget);
            int sharedFull = common / ps * ps;
            if (sharedFull > s.kvLen) {
                return true;
            }
        }
        return false;
    }

    private static int commonPrefix(int[] a, int alen, int[] b, int blen) {
        int n = Math.min(alen, blen);
        int i = 0;
        while (i < n && a[i] == b[i]) {
            i++;
        }
        return i;
    }

    /**
     * After {@code parent}'s prompt was prefilled (its first token not yet sampled): a new sample
     * of it with {@code id} and {@code attachment}. Returned running where the prompt's pages could
     * be shared ({@link KvManager#fork}): PREFILL with the whole prompt's KV, its first token to
     * be sampled from the parent's logits ({@link #onToken}); otherwise queued (WAITING) at the
     * parent's place to prefill the prompt itself, which draws the same tokens. The parent stands
     * for one sample less.
     */
    public Sequence fork(Sequence parent, String id, Object attachment) {
        if (parent.samples() <= 1) {
            throw new IllegalStateException("fork from " + parent + ", which has no samples left to fork");
        }
        Sequence child = parent.forkChild(id, attachment);
        if (kv.fork(parent, child)) {
            gate.admitted(child); // runs from now on as its parent does (e.g. holds its LoRA adapter's slot)
            insertRunning(child);
        } else {
            waiting.add(child);
        }
        parent.forkedOne();
        return child;
    }

    /** After a successful forward pass: the entry's KV is written. */
    public void complete(StepPlan.Entry e) {
        Sequence s = e.seq();
        if (e.decode()) {
            kv.commitDecode(s);
        } else {
            kv.commitPrefill(s, e.end());
        }
    }

    /**
     * A token sampled for {@code s}: appends it; a stop token or the length limit finishes the
     * sequence (released by the next {@link #retire}). Returns true if it finished.
     */
    public boolean onToken(Sequence s, int token, long nowNanos) {
        if (s.status() == Sequence.Status.PREFILL) {
            if (s.kvLen != s.prefillTarget) {
                throw new IllegalStateException("token for " + s + " before its prefill finished");
            }
            s.setStatus(Sequence.Status.DECODE);
        }
        boolean done = s.appendToken(token, nowNanos);
        if (done) {
            s.finish(s.isStopToken(token) ? FinishReason.STOP : FinishReason.LENGTH, null);
        }
        return done;
    }

    /** Fails one sequence (its own error); released by the next {@link #retire}. */
    public void fail(Sequence s, String error) {
        if (s.status() == Sequence.Status.WAITING) {
            s.finish(FinishReason.ERROR, error);
            return; // retire() removes it from the queue
        }
        s.finish(FinishReason.ERROR, error);
    }

    /** Ends everything (engine shutdown): releases all pages; returns the sequences ended. */
    public List<Sequence> abortAll(String why) {
        List<Sequence> out = new ArrayList<>();
        for (Sequence s : running) {
            kv.release(s);
            gate.released(s);
            if (s.status() != Sequence.Status.FINISHED) {
                s.finish(FinishReason.ABORTED, why);
            }
            out.add(s);
        }
        running.clear();
        while (!waiting.isEmpty()) {
            Sequence s = waiting.poll();
            if (s.status() != Sequence.Status.FINISHED) {
                s.finish(FinishReason.ABORTED, why);
            }
            out.add(s);
        }
        return out;
    }
}
