package io.radixkv.model;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.radixkv.kernels.RecordingMemory;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * StepGraphs: a step is recorded once per key and replayed afterwards; a null key, host memory,
 * a capture that fails or a disabled cache runs the work directly; the least recently used graph
 * is dropped (and freed) beyond the cap; closing frees every graph.
 */
class StepGraphsTest {
    @Test
    void recordsOncePerKeyThenReplays() {
        try (RecordingMemory device = new RecordingMemory(true)) {
            device.enableCapture(true);
            AtomicInteger runs = new AtomicInteger();
            try (StepGraphs g = new StepGraphs(device, true)) {
                for (int step = 0; step < 5; step++) {
                    g.run("decode batch 3", runs::incrementAndGet);
                }
                g.run("decode batch 4", runs::incrementAndGet);
                assertEquals(2, g.captures());
                assertEquals(4, g.replays());
                assertEquals(6, runs.get(), "every step's work ran exactly once");
                assertEquals(2, device.count("capture"));
                assertEquals(6, device.count("launch"));
            }
            assertEquals(2, device.count("close-graph"));
        }
    }

    @Test
    void runsDirectlyWithoutAKeyACaptureOrADevice() {
        AtomicInteger runs = new AtomicInteger();
        try (RecordingMemory device = new RecordingMemory(true); RecordingMemory host = new RecordingMemory(false)) {
            device.enableCapture(true);
            host.enableCapture(true);
            try (StepGraphs a = new StepGraphs(device, true);
                 StepGraphs off = new StepGraphs(device, false);
                 StepGraphs onHost = new StepGraphs(host, true)) {
                a.run(null, runs::incrementAndGet); // prefill steps have no key
                off.run("k", runs::incrementAndGet);
                onHost.run("k", runs::incrementAndGet);
                assertEquals(0, device.count("capture") + host.count("capture"));
            }
            device.enableCapture(false); // a failed capture: the work runs directly
            try (StepGraphs failing = new StepGraphs(device, true)) {
                failing.run("k", runs::incrementAndGet);
                failing.run("k", runs::incrementAndGet);
                assertEquals(0, failing.captures());
            }
            assertEquals(5, runs.get());
        }
    }

    @Test
    void dropsTheLeastRecentlyUsedGraphBeyondTheCap() {
        try (RecordingMemory device = new RecordingMemory(true)) {
            device.enableCapture(true);
            try (StepGraphs g = new StepGraphs(device, true)) {
                for (int k = 0; k <= StepGraphs.MAX_GRAPHS; k++) {
                    g.run(k, () -> {});
                }
                assertEquals(1, device.count("close-graph"), "one graph beyond the cap was freed");
                g.run(0, () -> {}); // key 0 was the eldest: recorded again
                assertEquals(StepGraphs.MAX_GRAPHS + 2, g.captures());
            }
        }
    }
}
