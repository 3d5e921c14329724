package io.radixkv.bench;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The size of the CPU's last-level cache, so that benchmarks which claim to stream from memory
 * size their working sets past it (LLCs range from 32 MiB on the Zen 5 host to 260-300 MiB on
 * the Intel Xeons this project measures on).
 */
final class LastLevelCache {
    /** Assumed where sysfs does not say (larger than most desktop and many server LLCs). */
    static final long FALLBACK = 64L << 20;

    private static final long BYTES = read(Path.of("/sys/devices/system/cpu/cpu0/cache"));

    private LastLevelCache() {}

    /** The last-level cache of CPU 0 in bytes, or {@link #FALLBACK} where it cannot be read. */
    static long bytes() {
        return BYTES;
    }

    /** "memory" from twice the LLC on, "partly cached" from once, else "cache". */
    static String regime(long workingSetBytes) {
        return workingSetBytes >= 2 * BYTES ? "memory" : workingSetBytes >= BYTES ? "partly cached" : "cache";
    }

    /** One line for benchmark reports. */
    static String describe() {
        return String.format("last-level cache %d MiB%s", BYTES >> 20, BYTES == FALLBACK ? " (assumed)" : "");
    }

    /** The size of the highest-level cache listed under dir (index*&#47;level, index*&#47;size). */
    static long read(Path dir) {
        int bestLevel = -1;
        long best = FALLBACK;
        try (DirectoryStream<Path> ds = Files.newDirectoryStream(dir, "index*")) {
            for (Path index : ds) {
                int level = Integer.parseInt(Files.readString(index.resolve("level")).trim());
                long size = parseSize(Files.readString(index.resolve("size")).trim());
                if (level > bestLevel && size > 0) {
                    bestLevel = level;
                    best = size;
                }
            }
        } catch (IOException | RuntimeException e) {
            return FALLBACK;
        }
        return best;
    }

    /** sysfs sizes: "32768K", "2M", "48K" or plain bytes. */
    static long parseSize(String s) {
        long unit = switch (s.isEmpty() ? ' ' : Character.toUpperCase(s.charAt(s.length() - 1))) {
            case 'K' -> 1L << 10;
            case 'M' -> 1L << 20;
            case 'G' -> 1L << 30;
            default -> 1;
        };
        String digits = unit == 1 ? s : s.substring(0, s.length() - 1);
        return Long.parseLong(digits) * unit;
    }
}
