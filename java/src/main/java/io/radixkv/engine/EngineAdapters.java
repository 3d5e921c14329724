package io.radixkv.engine;

import io.radixkv.cache.Namespace;
import io.radixkv.kernels.DenseKernels;
import io.radixkv.lora.LoraAdapter;
import io.radixkv.lora.LoraSlots;
import io.radixkv.lora.LoraStep;
import io.radixkv.model.ModelConfig;
import io.radixkv.sched.AdmissionGate;
import io.radixkv.sched.Scheduler;
import io.radixkv.sched.Sequence;
import io.radixkv.sched.StepPlan;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

/**
 * The engine's LoRA adapters: the loaded ones by name (any thread), the slots the admitted
 * requests' adapters occupy ({@link LoraSlots}: a request whose adapter finds no slot waits in the
 * queue, {@link AdmissionGate}), each step's row segments ({@link LoraStep}), and unloading, which
 * refuses new requests at once and completes when no queued or running request uses the adapter
 * any more; its slot and its cached KV pages are dropped then, so a reload under the same name
 * never meets the old adapter's KV. A request's adapter is its namespace's {@code loraId}: the
 * prefix cache keeps each adapter's KV (and each adapter-and-salt pair's) apart from the base
 * model's.
 */
final class EngineAdapters implements AdmissionGate {
    private static final Logger LOG = LogManager.getLogger(EngineAdapters.class);

    private final ModelConfig model;
    private final int maxRank;
    private final boolean supported;
    private final String backendName;
    private final Map<String, LoraAdapter> loaded = new ConcurrentHashMap<>();
    private final Set<String> unloading = ConcurrentHashMap.newKeySet();
    // engine thread only
    private final LoraSlots slots;
    private final LoraStep step;
    private final Map<Sequence, LoraAdapter> held = new IdentityHashMap<>();
    private final Map<String, Set<Namespace>> namespaces = new HashMap<>();
    private final Map<String, CompletableFuture<Void>> pendingUnloads = new HashMap<>();
    private final int[] rowCounts;
    private final int[] slotOf;
    private Scheduler scheduler;
    private KvState kv;
    private volatile LoraStats stats;

    EngineAdapters(ModelConfig model, DenseKernels dense, boolean supported, String backendName, int maxLoras,
                   int maxRank, int maxRunning) {
        this.model = model;
        this.maxRank = maxRank;
        this.supported = supported;
        this.backendName = backendName;
        this.slots = new LoraSlots(model, maxLoras, maxRank);
        this.step = new LoraStep(model, dense, slots, maxRunning);
        this.rowCounts = new int[maxRunning];
        this.slotOf = new int[maxRunning];
        this.stats = new LoraStats(List.of(), List.of(), maxLoras, List.of());
    }

    void attach(Scheduler scheduler, KvState kv) {
        this.scheduler = scheduler;
        this.kv = kv;
        scheduler.setGate(this);
    }

    LoraStep step() {
        return step;
    }

    /** Reads and registers adapter {@code name} (caller's thread). */
    LoraAdapter load(String name, Path dir) {
        if (!supported) {
            throw new IllegalStateException("LoRA adapters run on the cpu backend; the " + backendName
                    + " backend does not run them");
        }
        if (loaded.containsKey(name)) {
            throw new IllegalArgumentException("LoRA adapter " + name + " is already loaded");
        }
        long t0 = System.nanoTime();
        LoraAdapter a = LoraAdapter.load(name, dir, model, maxRank);
        if (loaded.putIfAbsent(name, a) != null) {
            a.close();
            throw new IllegalArgumentException("LoRA adapter " + name + " is already loaded");
        }
        LOG.info("loaded {} ({} KB) in {} ms", a, a.bytes() >> 10, (System.nanoTime() - t0) / 1_000_000);
        publishLoaded();
        return a;
    }

    /** The adapter a new request names, or the reason it cannot have it. */
    LoraAdapter require(String requestId, String name) {
        LoraAdapter a = loaded.get(name);
        if (a == null || unloading.contains(name)) {
            throw new IllegalArgumentException("request " + requestId + ": unknown LoRA adapter '" + name + "'"
                    + (a != null ? " (being unloaded)" : ""));
        }
        return a;
    }

    /**
     * The identity of loaded adapter {@code name} (also while it is being unloaded: its requests
     * still run and its pages are still cached), or null. Any thread.
     */
    LoraIdentity identity(String name) {
        LoraAdapter a = name == null ? null : loaded.get(name);
        return a == null ? null : new LoraIdentity(a.name(), a.id(), a.sha256());
    }

    /** Names of the adapters that serve requests now (sorted). */
    List<String> names() {
        List<String> out = new ArrayList<>();
        for (String n : loaded.keySet()) {
            if (!unloading.contains(n)) {
                out.add(n);
            }
        }
        out.sort(null);
        return out;
    }

    /** The directory adapter {@code name} was read from, or null when no such adapter serves requests. */
    Path dirOf(String name) {
        LoraAdapter a = loaded.get(name);
        return a == null || unloading.contains(name) ? null : a.dir();
    }

    /** Marks {@code name} unloading (caller's thread); the engine thread finishes it ({@link #finishUnload}). */
    void beginUnload(String name) {
        if (!loaded.containsKey(name) || !unloading.add(name)) {
            throw new IllegalArgumentException("unknown LoRA adapter '" + name + "'"
                    + (loaded.containsKey(name) ? " (already being unloaded)" : ""));
        }
        publishLoaded();
    }

    /** Engine thread: the unload of {@code name} completes {@code done} once nothing uses the adapter. */
    void finishUnload(String name, CompletableFuture<Void> done) {
        pendingUnloads.put(name, done);
        settleUnloads();
    }

    /** Engine thread, before a request is queued: false when its adapter was unloaded after it was submitted. */
    boolean stillLoaded(Sequence s) {
        String name = s.namespace().loraId();
        return name == null || loaded.containsKey(name);
    }

    @Override
    public boolean canAdmit(Sequence s) {
        LoraAdapter a = adapterOf(s);
        return a == null || slots.canAcquire(a);
    }

    @Override
    public void admitted(Sequence s) {
        LoraAdapter a = adapterOf(s);
        if (a != null) {
            slots.acquire(a);
            held.put(s, a);
            namespaces.computeIfAbsent(a.name(), k -> new HashSet<>()).add(s.namespace());
        }
    }

    @Override
    public void released(Sequence s) {
        LoraAdapter a = held.remove(s);
        if (a != null) {
            slots.release(a);
        }
    }

    /** Engine thread, before the forward pass: each entry's rows and slot. */
    void prepare(List<StepPlan.Entry> entries) {
        if (held.isEmpty()) {
            step.clear();
            return;
        }
        int i = 0;
        for (StepPlan.Entry e : entries) {
            LoraAdapter a = held.get(e.seq());
            rowCounts[i] = e.end() - e.start();
            slotOf[i] = a == null ? -1 : slots.slotOf(a);
            i++;
        }
        step.prepare(rowCounts, slotOf, i);
    }

    /** Engine thread, after a step: finishes unloads nothing uses any more, publishes {@link #stats()}. */
    void afterStep() {
        if (loaded.isEmpty()) {
            return;
        }
        settleUnloads();
        Set<String> running = new TreeSet<>();
        for (LoraAdapter a : held.values()) {
            running.add(a.name());
        }
        Set<String> waiting = new TreeSet<>();
        for (Sequence s : scheduler.waiting()) {
            if (s.namespace().loraId() != null) {
                waiting.add(s.namespace().loraId());
            }
        }
        stats = new LoraStats(List.copyOf(running), List.copyOf(waiting), slots.maxLoras(), names());
    }

    LoraStats stats() {
        return stats;
    }

    /** Slot loads and evictions so far (tests). Engine thread. */
    long[] slotCounts() {
        return new long[] {slots.loads(), slots.evictions()};
    }

    private void settleUnloads() {
        if (pendingUnloads.isEmpty()) {
            return;
        }
        Set<String> inFlight = new HashSet<>();
        for (Sequence s : scheduler.running()) {
            inFlight.add(s.namespace().loraId());
        }
        for (Sequence s : scheduler.waiting()) {
            inFlight.add(s.namespace().loraId());
        }
        for (var it = pendingUnloads.entrySet().iterator(); it.hasNext(); ) {
            var e = it.next();
            String name = e.getKey();
            if (inFlight.contains(name)) {
                continue;
            }
            LoraAdapter a = loaded.get(name);
            slots.forget(a);
            int pages = 0;
            for (Namespace ns : namespaces.getOrDefault(name, Set.of())) {
                pages += kv.evictNamespace(ns);
            }
            namespaces.remove(name);
            loaded.remove(name);
            unloading.remove(name);
            a.close();
            it.remove();
            LOG.info("unloaded LoRA adapter {} ({} cached KV pages dropped)", name, pages);
            publishLoaded();
            e.getValue().complete(null);
        }
    }

    private LoraAdapter adapterOf(Sequence s) {
        String name = s.namespace().loraId();
        return name == null ? null : loaded.get(name);
    }

    private void publishLoaded() {
        LoraStats s = stats;
        stats = new LoraStats(s.running(), s.waiting(), s.maxLoras(), names());
    }

    /** Frees the slots and every adapter; the engine thread has stopped. */
    void close() {
        slots.close();
        for (LoraAdapter a : loaded.values()) {
            a.close();
        }
        loaded.clear();
        for (CompletableFuture<Void> f : pendingUnloads.values()) {
            f.completeExceptionally(new IllegalStateException("the engine was closed"));
        }
    }
}
