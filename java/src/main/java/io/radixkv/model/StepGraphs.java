package io.radixkv.model;

import io.radixkv.kernels.BackendMemory;
import io.radixkv.kernels.StepGraph;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Decode steps recorded as graphs (CUDA graphs) and replayed: a step whose launches are the same
 * as an earlier one's (same key: rows, the attention plan's baked work split and table
 * addresses, output buffers) replays that step's graph instead of issuing its few hundred
 * launches again. Keys are built by the model; a null key, host memory, a failed capture or
 * {@code -Dradixkv.cudaGraphs=false} runs the work directly. At most {@link #MAX_GRAPHS} graphs
 * are kept (least recently used dropped). Engine thread only.
 */
final class StepGraphs implements AutoCloseable {
    static final int MAX_GRAPHS = 64;

    private final BackendMemory memory;
    private final boolean enabled;
    private final Map<Object, StepGraph> graphs = new LinkedHashMap<>(16, 0.75f, true);
    private long captures;
    private long replays;

    StepGraphs(BackendMemory memory, boolean enabled) {
        this.memory = memory;
        this.enabled = enabled && memory.isDevice();
    }

    /** From {@code -Dradixkv.cudaGraphs} (default true). */
    static boolean enabledByDefault() {
        return !"false".equalsIgnoreCase(System.getProperty("radixkv.cudaGraphs", "true"));
    }

    /** Runs {@code work} once: replayed from a graph recorded under {@code key}, recorded now, or issued directly. */
    void run(Object key, Runnable work) {
        if (!enabled || key == null) {
            work.run();
            return;
        }
        StepGraph g = graphs.get(key);
        if (g == null) {
            g = memory.capture(work); // records without running
            if (g == null) {
                work.run();
                return;
            }
            captures++;
            graphs.put(key, g);
            if (graphs.size() > MAX_GRAPHS) {
                var eldest = graphs.entrySet().iterator();
                eldest.next().getValue().close();
                eldest.remove();
            }
        } else {
            replays++;
        }
        g.launch();
    }

    /** Graphs recorded so far. */
    long captures() {
        return captures;
    }

    /** Steps replayed from an earlier recording. */
    long replays() {
        return replays;
    }

    @Override
    public void close() {
        graphs.values().forEach(StepGraph::close);
        graphs.clear();
    }
}
