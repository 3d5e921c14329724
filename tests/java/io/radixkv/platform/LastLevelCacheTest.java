package io.radixkv.platform;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The last-level cache is the highest data-holding level in sysfs, each instance (set of
 * sharing CPUs) counted once, with a fallback where sysfs says nothing; streaming working
 * sets are twice it.
 */
class LastLevelCacheTest {
    @TempDir
    Path root;

    private void cache(int cpu, int index, int level, String type, String size, String shared) throws IOException {
        Path dir = root.resolve("cpu" + cpu).resolve("cache").resolve("index" + index);
        Files.createDirectories(dir);
        Files.writeString(dir.resolve("level"), level + "\n");
        Files.writeString(dir.resolve("type"), type + "\n");
        Files.writeString(dir.resolve("size"), size + "\n");
        Files.writeString(dir.resolve("shared_cpu_list"), shared + "\n");
    }

    /** One core's L1d, L1i and L2, and its share of an L3. */
    private void core(int cpu, String l3, String l3Shared) throws IOException {
        cache(cpu, 0, 1, "Data", "48K", "" + cpu);
        cache(cpu, 1, 1, "Instruction", "32K", "" + cpu);
        cache(cpu, 2, 2, "Unified", "1024K", "" + cpu);
        if (l3 != null) {
            cache(cpu, 3, 3, "Unified", l3, l3Shared);
        }
    }

    @Test
    void oneSharedL3IsCountedOnce() throws IOException {
        core(0, "32768K", "0-1");
        core(1, "32768K", "0-1");
        LastLevelCache.Reading r = LastLevelCache.read(root);
        assertEquals(new LastLevelCache.Reading(32L << 20, 32L << 20, 1, false), r);
        assertEquals("last-level cache 32 MiB", LastLevelCache.describe(r));
    }

    @Test
    void everyInstanceCounts() throws IOException {
        // two sockets (or CCDs) of two CPUs each
        core(0, "300M", "0-1");
        core(1, "300M", "0-1");
        core(2, "300M", "2-3");
        core(3, "300M", "2-3");
        LastLevelCache.Reading r = LastLevelCache.read(root);
        assertEquals(new LastLevelCache.Reading(600L << 20, 300L << 20, 2, false), r);
        assertEquals("last-level cache 600 MiB (2 x 300 MiB)", LastLevelCache.describe(r));
    }

    @Test
    void highestDataLevelWinsAndInstructionCachesDoNot() throws IOException {
        // no L3: the per-core L2s are the last level; an (odd) larger L1i must not count
        core(0, null, null);
        core(1, null, null);
        cache(0, 4, 1, "Instruction", "64M", "0");
        assertEquals(new LastLevelCache.Reading(2L << 20, 1L << 20, 2, false), LastLevelCache.read(root));
    }

    @Test
    void unreadableSysfsFallsBack() throws IOException {
        LastLevelCache.Reading missing = LastLevelCache.read(root.resolve("absent"));
        assertTrue(missing.assumed());
        assertEquals(LastLevelCache.FALLBACK_BYTES, missing.bytes());
        assertTrue(LastLevelCache.describe(missing).contains("assumed"), LastLevelCache.describe(missing));

        Files.createDirectories(root.resolve("cpu0"));
        assertTrue(LastLevelCache.read(root).assumed(), "a CPU without a cache directory");

        cache(0, 0, 1, "Data", "lots", "0");
        assertTrue(LastLevelCache.read(root).assumed(), "an unparsable size");
    }

    @Test
    void sizesParse() {
        assertEquals(48L << 10, LastLevelCache.parseSize("48K"));
        assertEquals(2L << 20, LastLevelCache.parseSize("2M"));
        assertEquals(1L << 30, LastLevelCache.parseSize("1G"));
        assertEquals(4096, LastLevelCache.parseSize("4096"));
        assertThrows(NumberFormatException.class, () -> LastLevelCache.parseSize(""));
    }

    @Test
    void streamingIsTwiceTheCacheInWholeMibAtLeastTheMinimum() {
        assertEquals(512L << 20, LastLevelCache.streamingBytes(512L << 20, 32L << 20));
        assertEquals(600L << 20, LastLevelCache.streamingBytes(512L << 20, 300L << 20));
        assertEquals(3L << 20, LastLevelCache.streamingBytes(0, (1L << 20) + 1));
        assertThrows(IllegalArgumentException.class, () -> LastLevelCache.streamingBytes(-1, 1));
        assertEquals("memory", LastLevelCache.regime(64L << 20, 32L << 20));
        assertEquals("partly cached", LastLevelCache.regime(63L << 20, 32L << 20));
        assertEquals("cache", LastLevelCache.regime(31L << 20, 32L << 20));
    }

    @Test
    void thisMachineReadsSomething() {
        LastLevelCache.Reading r = LastLevelCache.machine();
        assertTrue(r.bytes() >= r.instanceBytes() && r.instanceBytes() > 0 && r.instances() >= 1, r.toString());
        boolean linux = System.getProperty("os.name", "").toLowerCase().contains("linux");
        if (linux && Files.isDirectory(Path.of("/sys/devices/system/cpu/cpu0/cache/index0"))) {
            assertFalse(r.assumed(), "sysfs lists caches here, so the reading must not be the fallback");
        }
    }
}
