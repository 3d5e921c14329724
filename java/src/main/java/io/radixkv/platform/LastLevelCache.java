package io.radixkv.platform;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;

/**
 * The CPU's last-level cache as Linux's sysfs describes it, so that a benchmark which claims to
 * stream from memory can size its working set past it: LLCs range from 32 MiB (one Zen 5 CCD)
 * to 260-300 MiB (the Intel Xeons this project measures on), and a fixed 512 MiB buffer is
 * partly cached on the latter. The size counts every instance of the cache once (one per CCD
 * or socket, told apart by the CPUs that share it), since threads on several of them cache
 * that much between them.
 */
public final class LastLevelCache {
    /** Assumed where sysfs does not say (larger than most desktop and many server LLCs). */
    public static final long FALLBACK_BYTES = 64L << 20;

    /**
     * What sysfs said: {@code bytes} in all, {@code instances} caches of {@code instanceBytes}
     * (the largest instance where they differ); {@code assumed}: nothing was readable, so
     * {@code bytes} is {@link #FALLBACK_BYTES}.
     */
    public record Reading(long bytes, long instanceBytes, int instances, boolean assumed) {}

    private static final class Holder {
        static final Reading MACHINE = read(Path.of("/sys/devices/system/cpu"));
    }

    private LastLevelCache() {}

    /** This machine's last-level cache (read from sysfs once per process). */
    public static Reading machine() {
        return Holder.MACHINE;
    }

    /** This machine's last-level cache in bytes, every instance counted. */
    public static long bytes() {
        return machine().bytes();
    }

    /**
     * The working set that streams from memory here: twice the last-level cache, at least
     * {@code minimumBytes}, in whole MiB.
     */
    public static long streamingBytes(long minimumBytes) {
        return streamingBytes(minimumBytes, bytes());
    }

    static long streamingBytes(long minimumBytes, long llcBytes) {
        if (minimumBytes < 0) {
            throw new IllegalArgumentException("minimumBytes must be >= 0, got " + minimumBytes);
        }
        long mib = 1L << 20;
        return Math.max(minimumBytes, Math.ceilDiv(2 * llcBytes, mib) * mib);
    }

    /** "memory" from twice the LLC on, "partly cached" from once, else "cache". */
    public static String regime(long workingSetBytes) {
        return regime(workingSetBytes, bytes());
    }

    static String regime(long workingSetBytes, long llcBytes) {
        return workingSetBytes >= 2 * llcBytes ? "memory" : workingSetBytes >= llcBytes ? "partly cached" : "cache";
    }

    /** One line for reports, e.g. "last-level cache 32 MiB" or "last-level cache 600 MiB (2 x 300 MiB)". */
    public static String describe() {
        return describe(machine());
    }

    static String describe(Reading r) {
        if (r.assumed()) {
            return String.format("last-level cache %d MiB (assumed: sysfs does not say)", r.bytes() >> 20);
        }
        String each = r.instances() > 1 ? String.format(" (%d x %d MiB)", r.instances(), r.instanceBytes() >> 20) : "";
        return String.format("last-level cache %d MiB%s", r.bytes() >> 20, each);
    }

    /**
     * Reads {@code cpuRoot}/cpu<i>N</i>/cache/index*&#47;{level,type,size,shared_cpu_list}: the
     * highest level that holds data, each instance (set of sharing CPUs) counted once.
     */
    static Reading read(Path cpuRoot) {
        int topLevel = -1;
        Map<String, Long> instances = new HashMap<>();
        try (DirectoryStream<Path> cpus = Files.newDirectoryStream(cpuRoot, "cpu[0-9]*")) {
            for (Path cpu : cpus) {
                Path cacheDir = cpu.resolve("cache");
                if (!Files.isDirectory(cacheDir)) {
                    continue;
                }
                try (DirectoryStream<Path> indices = Files.newDirectoryStream(cacheDir, "index*")) {
                    for (Path index : indices) {
                        Path type = index.resolve("type");
                        if (Files.exists(type) && Files.readString(type).trim().equals("Instruction")) {
                            continue;
                        }
                        int level = Integer.parseInt(Files.readString(index.resolve("level")).trim());
                        long size = parseSize(Files.readString(index.resolve("size")).trim());
                        if (size <= 0 || level < topLevel) {
                            continue;
                        }
                        if (level > topLevel) {
                            topLevel = level;
                            instances.clear();
                        }
                        Path shared = index.resolve("shared_cpu_list");
                        String key = Files.exists(shared) ? Files.readString(shared).trim() : cpu.getFileName().toString();
                        instances.put(key, size);
                    }
                }
            }
        } catch (IOException | RuntimeException e) {
            return new Reading(FALLBACK_BYTES, FALLBACK_BYTES, 1, true);
        }
        if (instances.isEmpty()) {
            return new Reading(FALLBACK_BYTES, FALLBACK_BYTES, 1, true);
        }
        long total = 0;
        long largest = 0;
        for (long size : instances.values()) {
            total += size;
            largest = Math.max(largest, size);
        }
        return new Reading(total, largest, instances.size(), false);
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
