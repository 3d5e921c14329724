package io.radixkv.platform;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Large blocks are 2 MiB-aligned mappings advised for huge pages (the kernel marks such a VMA
 * "hg" in /proc/self/smaps, whatever it then backs it with), zeroed, writable end to end and
 * unmapped when their arena closes; small blocks and -Dradixkv.hugepages=false use the arena.
 */
class LargePagesTest {
    private static final boolean LINUX = System.getProperty("os.name", "").toLowerCase().contains("linux");

    /** The VmFlags of the mapping that contains address, or null if none does. */
    private static String vmFlags(long address) throws IOException {
        List<String> lines = Files.readAllLines(Path.of("/proc/self/smaps"));
        boolean inside = false;
        for (String line : lines) {
            int dash = line.indexOf('-');
            int space = line.indexOf(' ');
            if (dash > 0 && space > dash && line.substring(0, dash).matches("[0-9a-f]+")) {
                long lo = Long.parseUnsignedLong(line.substring(0, dash), 16);
                long hi = Long.parseUnsignedLong(line.substring(dash + 1, space), 16);
                inside = Long.compareUnsigned(address, lo) >= 0 && Long.compareUnsigned(address, hi) < 0;
            } else if (inside && line.startsWith("VmFlags:")) {
                return line.substring("VmFlags:".length()).trim();
            }
        }
        return null;
    }

    @Test
    void largeBlockIsAnAlignedAdvisedZeroedMapping() throws IOException {
        assumeTrue(LINUX && LargePages.enabled(), "Linux with huge pages not disabled");
        long bytes = 5 * LargePages.HUGE_PAGE + 123;
        long address;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment s = LargePages.allocate(arena, bytes, 64);
            address = s.address();
            assertEquals(bytes, s.byteSize());
            assertEquals(0, address % LargePages.HUGE_PAGE, "2 MiB aligned");
            for (long off = 0; off < bytes; off += 4096) {
                assertEquals(0, s.get(ValueLayout.JAVA_BYTE, off), "zero at " + off);
            }
            s.set(ValueLayout.JAVA_BYTE, bytes - 1, (byte) 7);
            s.fill((byte) 1);
            assertEquals(1, s.get(ValueLayout.JAVA_BYTE, bytes - 1));
            String flags = vmFlags(address);
            assertTrue(flags != null && List.of(flags.split(" ")).contains("hg"),
                    "mapping advised MADV_HUGEPAGE, VmFlags: " + flags);
        }
        String after = vmFlags(address);
        assertTrue(after == null || !List.of(after.split(" ")).contains("hg"), "unmapped at close: " + after);
    }

    @Test
    void smallBlocksAndTheSwitchUseTheArena() throws IOException {
        assumeTrue(LINUX, "Linux");
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment small = LargePages.allocate(arena, LargePages.HUGE_PAGE - 1, 64);
            assertEquals(LargePages.HUGE_PAGE - 1, small.byteSize());
            assertEquals(0, small.address() % 64);
            String flags = vmFlags(small.address());
            assertFalse(flags != null && List.of(flags.split(" ")).contains("hg"), "small block advised: " + flags);
        }
        String old = System.getProperty("radixkv.hugepages");
        System.setProperty("radixkv.hugepages", "false");
        try (Arena arena = Arena.ofConfined()) {
            assertFalse(LargePages.enabled());
            MemorySegment big = LargePages.allocate(arena, 3 * LargePages.HUGE_PAGE, 4096);
            assertEquals(0, big.address() % 4096);
            String flags = vmFlags(big.address());
            assertFalse(flags != null && List.of(flags.split(" ")).contains("hg"), "switched off but advised: " + flags);
            assertEquals(0, big.get(ValueLayout.JAVA_LONG, 3 * LargePages.HUGE_PAGE - 8));
        } finally {
            if (old == null) {
                System.clearProperty("radixkv.hugepages");
            } else {
                System.setProperty("radixkv.hugepages", old);
            }
        }
    }

    @Test
    void badArgumentsAreRejected() {
        try (Arena arena = Arena.ofConfined()) {
            assertThrows(IllegalArgumentException.class, () -> LargePages.allocate(arena, -1, 64));
            assertThrows(IllegalArgumentException.class, () -> LargePages.allocate(arena, 10, 48));
            assertThrows(IllegalArgumentException.class, () -> LargePages.allocate(arena, 10, 2 * LargePages.HUGE_PAGE));
        }
    }

    @Test
    void onlyFourKibBasePagesAreMapped() {
        assertTrue(LargePages.usableBasePage(4096));
        assertFalse(LargePages.usableBasePage(16384), "16 KiB base pages (some arm64 kernels)");
        assertFalse(LargePages.usableBasePage(65536), "64 KiB base pages: huge pages are 512 MiB");
        assertFalse(LargePages.usableBasePage(-1), "sysconf failed");
        if (LINUX && "amd64".equals(System.getProperty("os.arch"))
                && !"false".equalsIgnoreCase(System.getProperty("radixkv.hugepages"))) {
            assertTrue(LargePages.enabled(), "x86-64 Linux has 4 KiB base pages: large blocks are mapped");
        }
    }
}
